/* messages.c -- the configuration's one error: "NAME:LINE: path: message".
 *
 * A load stops at its first error; every later report is dropped. An error
 * about a value names the node's path ("policies[0].limits[1].period") and
 * yaml_lines.c finds that path's line in the text. libcyaml's own errors
 * (unknown, missing and duplicate keys, wrong shapes, too many entries) come
 * through its log: the first message and the backtrace after it are kept,
 * and rewritten here as the same kind of message, with the keys that were
 * expected.
 *
 * Not here: the checks themselves (units.c, policy_config.c, config.c).
 */
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cyaml/cyaml.h>

#include "server/config/config.h"
#include "server/config/config_private.h"

/* ---- reports ---------------------------------------------------------------- */

/* Writes "NAME:LINE: message" (or "NAME: message" when line is 0). */
static int vreport(ctx_t *c, size_t line, const char *fmt, va_list ap) {
    if (c->failed)
        return SL_EINVAL;
    c->failed = true;
    if (c->err == NULL || c->err_len == 0)
        return SL_EINVAL;
    int n = line ? snprintf(c->err, c->err_len, "%s:%zu: ", c->name, line)
                 : snprintf(c->err, c->err_len, "%s: ", c->name);
    if (n >= 0 && (size_t)n < c->err_len)
        vsnprintf(c->err + n, c->err_len - (size_t)n, fmt, ap);
    return SL_EINVAL;
}

int sld__cfg_report(ctx_t *c, size_t line, const char *fmt, ...) {
    va_list ap;
    va_start(ap, fmt);
    int rc = vreport(c, line, fmt, ap);
    va_end(ap);
    return rc;
}

int sld__cfg_oom(ctx_t *c) {
    sld__cfg_report(c, 0, "out of memory");
    return SL_ENOMEM;
}

/* An error at the node `path`: "NAME:LINE: path: message". */
int sld__cfg_bad(ctx_t *c, const char *path, const char *fmt, ...) {
    if (c->failed || c->err == NULL || c->err_len == 0) {
        c->failed = true; /* nobody reads the message: spare the line search */
        return SL_EINVAL;
    }
    char msg[SLD_MAX_ERROR];
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(msg, sizeof msg, fmt, ap);
    va_end(ap);
    return sld__cfg_report(c, sld__cfg_path_line(c, path, 1), "%s: %s", path, msg);
}

/* A value quoted for a message: printable, bounded ("got \"5 minutes\""). */
const char *sld__cfg_show(const char *text, char buf[SHOW_MAX + 8]) {
    size_t o = 0;
    for (size_t i = 0; text[i] && o < SHOW_MAX; i++) {
        unsigned char ch = (unsigned char)text[i];
        buf[o++] = ch >= 0x20 && ch < 0x7f && ch != '"' ? (char)ch : '?';
    }
    buf[o] = '\0';
    if (strlen(text) > SHOW_MAX)
        memcpy(buf + o, "...", 4);
    return buf;
}

/* Paths of nodes: "parent.child" and "parent[i]", cut to fit. */
static size_t put(char *buf, size_t size, size_t o, const char *s) {
    while (*s && o + 1 < size)
        buf[o++] = *s++;
    buf[o] = '\0';
    return o;
}

char *sld__cfg_join(char *buf, size_t size, const char *parent, const char *child) {
    size_t o = put(buf, size, 0, parent);
    put(buf, size, *parent ? put(buf, size, o, ".") : o, child);
    return buf;
}

char *sld__cfg_entry(char *buf, size_t size, const char *parent, size_t i) {
    char index[32];
    snprintf(index, sizeof index, "[%zu]", i);
    put(buf, size, put(buf, size, 0, parent), index);
    return buf;
}

/* ---- libcyaml's errors, rewritten ---------------------------------------- */

void sld__cfg_cyaml_log(cyaml_log_t level, void *ctx, const char *fmt, va_list args) {
    ctx_t *c = ctx;
    if (level < CYAML_LOG_ERROR)
        return;
    char line[384];
    vsnprintf(line, sizeof line, fmt, args);
    line[strcspn(line, "\n")] = '\0';
    const char *text = strncmp(line, "Load: ", 6) == 0 ? line + 6 : line;
    if (strcmp(text, "Backtrace:") == 0) {
        c->in_backtrace = true;
        return;
    }
    if (c->in_backtrace && strncmp(text, "  in ", 5) == 0) {
        if (c->nframes == MAX_FRAMES)
            return;
        frame_t *f = &c->frames[c->nframes++];
        memset(f, 0, sizeof *f);
        const char *q;
        if (strncmp(text, "  in mapping field '", 20) == 0) {
            f->field = true;
            q = text + 20;
            size_t n = strcspn(q, "'");
            if (n >= sizeof f->name)
                n = sizeof f->name - 1;
            memcpy(f->name, q, n);
        } else if (strncmp(text, "  in sequence entry '", 21) == 0) {
            f->entry = true;
            f->n = strtoul(text + 21, NULL, 10);
        }
        return;
    }
    if (c->cy_msg[0] == '\0' && !c->in_backtrace)
        snprintf(c->cy_msg, sizeof c->cy_msg, "%s", text);
}

/* Writes the path that the backtrace spells, its innermost `skip_inner`
 * frames left out (frames are logged innermost first), and returns the
 * schema found at that path (NULL if none). `excess`: the innermost entry
 * frame is about a list entry refused for being one too many. */
static const cyaml_schema_value_t *frames_path(const ctx_t *c, size_t skip_inner, bool excess,
                                               char *path, size_t size) {
    const cyaml_schema_value_t *s = c->schema ? c->schema : &sld__cfg_schema;
    path[0] = '\0';
    for (size_t k = c->nframes; k-- > skip_inner;) {
        const frame_t *f = &c->frames[k];
        size_t used = strlen(path);
        if (f->field) {
            snprintf(path + used, size - used, "%s%s", used ? "." : "", f->name);
            const cyaml_schema_value_t *next = NULL;
            if (s && s->type == CYAML_MAPPING)
                for (const cyaml_schema_field_t *fl = s->mapping.fields; fl && fl->key; fl++)
                    if (strcmp(fl->key, f->name) == 0)
                        next = &fl->value;
            s = next;
        } else if (f->entry) {
            /* N counts the entries read, the current one included, except
             * when the current one was refused for being one too many. */
            unsigned long i = excess && k == skip_inner ? f->n : (f->n ? f->n - 1 : 0);
            snprintf(path + used, size - used, "[%lu]", i);
            s = s && s->type == CYAML_SEQUENCE ? s->sequence.entry : NULL;
        }
    }
    return s;
}

static const char *what_event(const char *ev) {
    if (strncmp(ev, "SCALAR", 6) == 0)
        return "a single value";
    if (strncmp(ev, "SEQUENCE", 8) == 0)
        return "a list";
    if (strncmp(ev, "MAPPING", 7) == 0)
        return "a mapping";
    return "something else";
}

static const char *what_type(const char *type) {
    if (strncmp(type, "STRING", 6) == 0)
        return "a single value";
    if (strncmp(type, "SEQUENCE", 8) == 0)
        return "a list";
    if (strncmp(type, "MAPPING", 7) == 0)
        return "a mapping (key: value lines)";
    return "something else";
}

static void list_keys(const cyaml_schema_value_t *s, char *buf, size_t size) {
    buf[0] = '\0';
    if (s == NULL || s->type != CYAML_MAPPING)
        return;
    size_t used = 0;
    for (const cyaml_schema_field_t *f = s->mapping.fields; f && f->key; f++) {
        int n = snprintf(buf + used, size - used, "%s%s", used ? ", " : "", f->key);
        if (n < 0 || (size_t)n >= size - used)
            break;
        used += (size_t)n;
    }
}

/* "in policies[0]" or "at the top level" */
const char *sld__cfg_where(const char *path, char *buf, size_t size) {
    if (*path == '\0')
        return "at the top level";
    snprintf(buf, size, "in %s", path);
    return buf;
}

int sld__cfg_cyaml_error(ctx_t *c, cyaml_err_t e) {
    char path[PATH_BUF], at[PATH_BUF + 256], keys[512], show_buf[SHOW_MAX + 8], in[PATH_BUF + 8];
    const char *m = c->cy_msg;
    const char *arg;
    if (e == CYAML_ERR_OOM)
        return sld__cfg_oom(c);
    if ((arg = strstr(m, "Unexpected key: ")) != NULL) {
        arg += 16;
        const cyaml_schema_value_t *s = frames_path(c, 1, false, path, sizeof path);
        list_keys(s, keys, sizeof keys);
        sld__cfg_join(at, sizeof at, path, arg);
        return sld__cfg_report(
            c, sld__cfg_path_line(c, at, 1), "unknown key \"%s\" %s (expected one of %s)",
            sld__cfg_show(arg, show_buf), sld__cfg_where(path, in, sizeof in), keys);
    }
    if ((arg = strstr(m, "Missing required mapping field: ")) != NULL) {
        arg += 32;
        frames_path(c, 1, false, path, sizeof path);
        return sld__cfg_report(c, sld__cfg_path_line(c, path, 1), "missing required key \"%s\" %s",
                               arg, sld__cfg_where(path, in, sizeof in));
    }
    if ((arg = strstr(m, "Mapping field already seen: ")) != NULL) {
        arg += 28;
        frames_path(c, 1, false, path, sizeof path);
        sld__cfg_join(at, sizeof at, path, arg);
        return sld__cfg_report(c, sld__cfg_path_line(c, at, 2), "duplicate key \"%s\" %s", arg,
                               sld__cfg_where(path, in, sizeof in));
    }
    if (strncmp(m, "Expecting ", 10) == 0 && (arg = strstr(m, "got event: ")) != NULL) {
        frames_path(c, 0, false, path, sizeof path);
        return sld__cfg_report(c, sld__cfg_path_line(c, path, 1), "%s: expected %s, got %s",
                               *path ? path : "the top level",
                               what_type(m + 10), what_event(arg + 11));
    }
    if (strncmp(m, "Excessive entries", 17) == 0) {
        unsigned long max = strtoul(m + 19, NULL, 10);
        frames_path(c, 0, true, path, sizeof path);
        char list[PATH_BUF];
        snprintf(list, sizeof list, "%s", path);
        char *br = strrchr(list, '[');
        if (br)
            *br = '\0';
        return sld__cfg_report(c, sld__cfg_path_line(c, path, 1),
                               "%s: too many entries (at most %lu)", list, max);
    }
    frames_path(c, 0, false, path, sizeof path);
    return sld__cfg_report(c, sld__cfg_path_line(c, path, 1), "%s: %s",
                           *path ? path : "the top level", m[0] ? m : cyaml_strerror(e));
}
