/* yaml_lines.c -- the configuration's libyaml passes, over the file's bytes:
 *   - before libcyaml reads the file, a check of its syntax and of what
 *     libcyaml would accept silently or report without a line (a second
 *     document, aliases, non-scalar mapping keys, NUL bytes, nesting depth);
 *   - after an error, the line of the node the error is about, found by its
 *     path ("policies[0].limits[1].period"), or of its nearest ancestor.
 * One walk serves both: it keeps the path of the node it is at.
 *
 * Not here: the wording of messages (messages.c), the schema (schema.c).
 */
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <yaml.h>

#include "server/config/config.h"
#include "server/config/config_private.h"

typedef struct walk_frame {
    bool mapping;
    bool want_key;
    size_t index;      /* sequence: next entry */
    size_t path_len;   /* length of the collection's own path */
} walk_frame_t;

typedef struct walk {
    const char *target;   /* path to find, or NULL: only check */
    unsigned nth;         /* which occurrence of target */
    unsigned seen;
    size_t found;         /* line of the target, 0 until found */
    char path[PATH_BUF];
    size_t path_len;
    walk_frame_t frames[MAX_DEPTH];
    int depth;
    int docs;
    bool root_seen;
    bool root_null;       /* the document is "~", "null" or nothing */
    size_t err_line;      /* check mode: the first problem */
    char err_msg[256];
} walk_t;

static bool walk_fail(walk_t *w, size_t line, const char *fmt, ...) {
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(w->err_msg, sizeof w->err_msg, fmt, ap);
    va_end(ap);
    w->err_line = line ? line : 1;
    return false;
}

static void walk_append(walk_t *w, const char *fmt, const char *key, size_t index) {
    if (w->path_len >= sizeof w->path)
        return;
    int n = key ? snprintf(w->path + w->path_len, sizeof w->path - w->path_len, fmt, key)
                : snprintf(w->path + w->path_len, sizeof w->path - w->path_len, fmt, index);
    if (n < 0 || (size_t)n >= sizeof w->path - w->path_len)
        w->path_len = sizeof w->path; /* too long: matches nothing until popped */
    else
        w->path_len += (size_t)n;
}

/* The node at the current path starts at `line`. Returns true when found. */
static bool walk_record(walk_t *w, size_t line) {
    if (w->target == NULL || w->path_len >= sizeof w->path)
        return false;
    w->path[w->path_len] = '\0';
    if (strcmp(w->path, w->target) == 0 && ++w->seen == w->nth) {
        w->found = line;
        return true;
    }
    return false;
}

/* A node begins (scalar, mapping or sequence) where a value is expected. */
static bool walk_node(walk_t *w, size_t line) {
    if (w->depth == 0) {
        w->path_len = 0;
        return walk_record(w, line);
    }
    walk_frame_t *f = &w->frames[w->depth - 1];
    if (f->mapping)
        return false; /* recorded at its key */
    w->path_len = f->path_len;
    walk_append(w, "[%zu]", NULL, f->index);
    return walk_record(w, line);
}

/* A node ended: back to its parent's path. */
static void walk_done(walk_t *w) {
    if (w->depth == 0)
        return;
    walk_frame_t *f = &w->frames[w->depth - 1];
    w->path_len = f->path_len;
    if (f->mapping)
        f->want_key = true;
    else
        f->index++;
}

/* Walks every event. Check mode (no target): false with err_* set on the
 * first problem. Find mode: stops when the target is found. */
static bool walk_yaml(walk_t *w, const char *yaml, size_t len) {
    yaml_parser_t parser;
    yaml_event_t ev;
    bool ok = true, done = false;
    if (!yaml_parser_initialize(&parser))
        return walk_fail(w, 0, "out of memory");
    yaml_parser_set_input_string(&parser, (const unsigned char *)yaml, len);
    while (ok && !done) {
        if (!yaml_parser_parse(&parser, &ev)) {
            char started[64] = "";
            if (parser.context && parser.context_mark.line != parser.problem_mark.line)
                snprintf(started, sizeof started, " that started on line %zu",
                         parser.context_mark.line + 1);
            size_t at = parser.problem_mark.index;
            bool tab = at < len && yaml[at] == '\t';
            ok = walk_fail(w, parser.problem_mark.line + 1, "YAML syntax error: %s%s%s%s%s%s",
                           parser.problem ? parser.problem : "malformed",
                           tab ? " (a tab: YAML is indented with spaces only)" : "",
                           parser.context ? " (" : "", parser.context ? parser.context : "",
                           started, parser.context ? ")" : "");
            break;
        }
        size_t line = ev.start_mark.line + 1;
        walk_frame_t *top = w->depth ? &w->frames[w->depth - 1] : NULL;
        switch (ev.type) {
        case YAML_STREAM_END_EVENT:
            done = true;
            break;
        case YAML_DOCUMENT_START_EVENT:
            if (++w->docs > 1)
                ok = walk_fail(w, line, "a second YAML document (---): the file must hold "
                                        "exactly one");
            break;
        case YAML_ALIAS_EVENT:
            ok = walk_fail(w, line, "YAML aliases (*%s) are not supported: write the value out",
                           ev.data.alias.anchor ? (const char *)ev.data.alias.anchor : "");
            break;
        case YAML_SCALAR_EVENT: {
            const char *v = (const char *)ev.data.scalar.value;
            if (strlen(v) != ev.data.scalar.length) {
                ok = walk_fail(w, line, "a NUL character in a value");
                break;
            }
            if (top == NULL && !w->root_seen) {
                w->root_seen = true;
                w->root_null = ev.data.scalar.length == 0 || strcmp(v, "~") == 0 ||
                               strcmp(v, "null") == 0;
                if (!w->root_null)
                    ok = walk_fail(w, line, "the top level must be a mapping of settings "
                                            "(listen:, policies:, ...), not a single value");
                break;
            }
            if (top && top->mapping && top->want_key) {
                w->path_len = top->path_len;
                char key[200];
                snprintf(key, sizeof key, "%s", v);
                walk_append(w, w->path_len ? ".%s" : "%s", key, 0);
                top->want_key = false;
                done = walk_record(w, line);
                break;
            }
            done = walk_node(w, line);
            walk_done(w);
            break;
        }
        case YAML_SEQUENCE_START_EVENT:
        case YAML_MAPPING_START_EVENT: {
            bool mapping = ev.type == YAML_MAPPING_START_EVENT;
            if (top == NULL && !w->root_seen) {
                w->root_seen = true;
                if (!mapping) {
                    ok = walk_fail(w, line, "the top level must be a mapping of settings "
                                            "(listen:, policies:, ...), not a list");
                    break;
                }
            }
            if (top && top->mapping && top->want_key) {
                ok = walk_fail(w, line, "a mapping key must be a plain value, not a %s",
                               mapping ? "mapping" : "list");
                break;
            }
            if (w->depth == MAX_DEPTH) {
                ok = walk_fail(w, line, "nesting deeper than %d levels", MAX_DEPTH);
                break;
            }
            done = walk_node(w, line);
            w->frames[w->depth++] = (walk_frame_t){
                .mapping = mapping, .want_key = true, .path_len = w->path_len};
            break;
        }
        case YAML_SEQUENCE_END_EVENT:
        case YAML_MAPPING_END_EVENT:
            if (w->depth > 0)
                w->depth--;
            walk_done(w);
            break;
        default:
            break;
        }
        yaml_event_delete(&ev);
    }
    yaml_parser_delete(&parser);
    return ok;
}

size_t sld__cfg_path_line(const ctx_t *c, const char *path, unsigned nth) {
    char p[PATH_BUF];
    snprintf(p, sizeof p, "%s", path);
    for (;;) {
        walk_t *w = calloc(1, sizeof *w);
        if (w == NULL)
            return 0;
        w->target = p;
        w->nth = nth;
        walk_yaml(w, c->yaml, c->len);
        size_t line = w->found;
        free(w);
        if (line || p[0] == '\0')
            return line;
        /* drop the last ".key" or "[i]" and try the parent */
        char *dot = strrchr(p, '.'), *br = strrchr(p, '[');
        char *cut = dot > br ? dot : br;
        if (cut == NULL)
            cut = p;
        *cut = '\0';
        nth = 1;
    }
}

int sld__cfg_yaml_check(ctx_t *c, bool *empty) {
    walk_t *w = calloc(1, sizeof *w);
    if (w == NULL)
        return sld__cfg_oom(c);
    bool ok = walk_yaml(w, c->yaml ? c->yaml : "", c->len);
    if (!ok)
        sld__cfg_report(c, w->err_line, "%s", w->err_msg);
    *empty = !w->root_seen || w->root_null;
    free(w);
    return ok ? SL_OK : SL_EINVAL;
}
