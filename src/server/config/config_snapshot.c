/* config_snapshot.c -- store.snapshot read from the YAML text (see
 * config_snapshot.h).
 *
 * The reader walks libyaml's events only as far as the end of `store:`,
 * skipping every other node whole. Syntax errors were reported by config.c's
 * first pass; here they just end the walk.
 *
 * Not here: the values' own checks (config.c), the file itself (the store).
 */
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <yaml.h>

#include "server/config/config_snapshot.h"
#include "sluice.h"


typedef struct reader {
    yaml_parser_t parser;
    yaml_event_t ev;
    bool have;          /* ev holds an event to delete */
    size_t *line;
    char *err;
    size_t err_len;
} reader_t;

/* The next event into r->ev; false at the end or on a syntax error. */
static bool next(reader_t *r) {
    if (r->have)
        yaml_event_delete(&r->ev);
    r->have = yaml_parser_parse(&r->parser, &r->ev) != 0;
    return r->have && r->ev.type != YAML_STREAM_END_EVENT;
}

static bool is_start(const yaml_event_t *ev) {
    return ev->type == YAML_MAPPING_START_EVENT || ev->type == YAML_SEQUENCE_START_EVENT;
}

/* Skips the node that r->ev begins. */
static bool skip(reader_t *r) {
    if (!is_start(&r->ev))
        return true;
    for (int depth = 1; depth > 0;) {
        if (!next(r))
            return false;
        if (is_start(&r->ev))
            depth++;
        else if (r->ev.type == YAML_MAPPING_END_EVENT || r->ev.type == YAML_SEQUENCE_END_EVENT)
            depth--;
    }
    return true;
}

static int fail(reader_t *r, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
static int fail(reader_t *r, const char *fmt, ...) {
    *r->line = r->ev.start_mark.line + 1;
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(r->err, r->err_len, fmt, ap);
    va_end(ap);
    return SL_EINVAL;
}

static const char *scalar(const reader_t *r) { return (const char *)r->ev.data.scalar.value; }

static bool is_null(const reader_t *r) {
    const char *v = scalar(r);
    return r->ev.data.scalar.style == YAML_PLAIN_SCALAR_STYLE &&
           (v[0] == '\0' || strcmp(v, "~") == 0 || strcmp(v, "null") == 0 ||
            strcmp(v, "Null") == 0 || strcmp(v, "NULL") == 0);
}

static bool word_in(const char *v, const char *const *words) {
    for (; *words; words++)
        if (strcmp(v, *words) == 0)
            return true;
    return false;
}

static int read_mapping(reader_t *r, sld_snapshot_setting_t *out) {
    out->mode = SLD_SNAPSHOT_ON;
    while (next(r) && r->ev.type == YAML_SCALAR_EVENT) {
        char key[64];
        snprintf(key, sizeof key, "%s", scalar(r));
        char **slot = strcmp(key, "path") == 0       ? &out->path
                      : strcmp(key, "interval") == 0 ? &out->interval
                                                     : NULL;
        if (slot == NULL)
            return fail(r, "unknown key \"%s\" in store.snapshot (expected one of path, interval)",
                        key);
        if (*slot)
            return fail(r, "duplicate key \"%s\" in store.snapshot", key);
        if (!next(r))
            return SL_OK;
        if (r->ev.type != YAML_SCALAR_EVENT)
            return fail(r, "store.snapshot.%s: expected a value, got a %s", key,
                        r->ev.type == YAML_MAPPING_START_EVENT ? "mapping" : "list");
        if ((*slot = strdup(scalar(r))) == NULL)
            return SL_ENOMEM;
    }
    return SL_OK;
}

/* store.snapshot's node begins at r->ev. */
static int read_setting(reader_t *r, sld_snapshot_setting_t *out) {
    static const char *const off[] = {"off", "Off", "false", "False", "no", "No", NULL};
    static const char *const on[] = {"on", "On", "true", "True", "yes", "Yes", NULL};
    switch (r->ev.type) {
    case YAML_SCALAR_EVENT:
        if (is_null(r))
            return SL_OK; /* an empty section counts as absent */
        if (word_in(scalar(r), off))
            out->mode = SLD_SNAPSHOT_OFF;
        else if (word_in(scalar(r), on))
            out->mode = SLD_SNAPSHOT_ON;
        else
            return fail(r, "store.snapshot: expected off, on or a mapping (path:, interval:), "
                           "got \"%.48s\"", scalar(r));
        return SL_OK;
    case YAML_MAPPING_START_EVENT:
        return read_mapping(r, out);
    default:
        return fail(r, "store.snapshot: expected off, on or a mapping (path:, interval:), got a list");
    }
}

/* Walks the mapping that r->ev begins: the top level, or `store:`. */
static int walk(reader_t *r, bool store, sld_snapshot_setting_t *out) {
    while (next(r) && r->ev.type == YAML_SCALAR_EVENT) {
        bool wanted = strcmp(scalar(r), store ? "snapshot" : "store") == 0;
        if (!next(r))
            return SL_OK;
        if (wanted && store)
            return read_setting(r, out);
        if (wanted && r->ev.type == YAML_MAPPING_START_EVENT)
            return walk(r, true, out); /* a second store: is libcyaml's to refuse */
        if (!skip(r))
            return SL_OK;
    }
    return SL_OK;
}

int sld_snapshot_setting_read(const char *yaml, size_t len, sld_snapshot_setting_t *out,
                              size_t *line, char *err, size_t err_len) {
    memset(out, 0, sizeof *out);
    reader_t r = {.line = line, .err = err, .err_len = err_len};
    *line = 0;
    if (!yaml_parser_initialize(&r.parser))
        return SL_ENOMEM;
    yaml_parser_set_input_string(&r.parser, (const unsigned char *)yaml, len);
    int rc = SL_OK;
    while (next(&r)) {
        if (r.ev.type == YAML_MAPPING_START_EVENT) {
            rc = walk(&r, false, out);
            break;
        }
        if (r.ev.type == YAML_SEQUENCE_START_EVENT || r.ev.type == YAML_SCALAR_EVENT)
            break; /* not a mapping: config.c says so */
    }
    if (r.have)
        yaml_event_delete(&r.ev);
    yaml_parser_delete(&r.parser);
    if (rc != SL_OK)
        sld_snapshot_setting_free(out);
    return rc;
}

void sld_snapshot_setting_free(sld_snapshot_setting_t *s) {
    free(s->path);
    free(s->interval);
    s->path = s->interval = NULL;
}
