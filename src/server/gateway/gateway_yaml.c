/* gateway_yaml.c -- the file's text as a small tree, for the nodes of the
 * gateway: section libcyaml cannot describe (see gateway_yaml.h).
 *
 * Recursive over libyaml's events, one call per collection: depth is
 * bounded (MAX_DEPTH) besides config/'s own check.
 */
#define _GNU_SOURCE
#include <stdlib.h>
#include <string.h>

#include <yaml.h>

#include "server/gateway/gateway_yaml.h"
#include "sluice.h"

#define MAX_DEPTH 64

static bool next_event(yaml_parser_t *p, yaml_event_t *ev) { return yaml_parser_parse(p, ev) != 0; }

static sld_yaml_node_t *node_new(sld_yaml_kind_t kind) {
    sld_yaml_node_t *n = calloc(1, sizeof *n);
    if (n)
        n->kind = kind;
    return n;
}

static bool is_null(const yaml_event_t *ev) {
    if (ev->data.scalar.style != YAML_PLAIN_SCALAR_STYLE)
        return false;
    const char *v = (const char *)ev->data.scalar.value;
    return ev->data.scalar.length == 0 || strcmp(v, "~") == 0 || strcmp(v, "null") == 0 ||
           strcmp(v, "Null") == 0 || strcmp(v, "NULL") == 0;
}

/* The node that starts with ev (deleted here) into *out. */
static int build(yaml_parser_t *p, yaml_event_t *ev, int depth, sld_yaml_node_t **out) {
    *out = NULL;
    int rc = SL_OK;
    if (depth > MAX_DEPTH) {
        yaml_event_delete(ev);
        return SL_EINVAL;
    }
    switch (ev->type) {
    case YAML_SCALAR_EVENT: {
        sld_yaml_node_t *n = node_new(SLD_YAML_SCALAR);
        if (n == NULL || (n->value = strndup((const char *)ev->data.scalar.value, ev->data.scalar.length)) == NULL) {
            free(n);
            rc = SL_ENOMEM;
            break;
        }
        n->null = is_null(ev);
        *out = n;
        break;
    }
    case YAML_SEQUENCE_START_EVENT:
    case YAML_MAPPING_START_EVENT: {
        bool map = ev->type == YAML_MAPPING_START_EVENT;
        yaml_event_type_t end = map ? YAML_MAPPING_END_EVENT : YAML_SEQUENCE_END_EVENT;
        sld_yaml_node_t *n = node_new(map ? SLD_YAML_MAPPING : SLD_YAML_SEQUENCE), **tail;
        if (n == NULL) {
            rc = SL_ENOMEM;
            break;
        }
        *out = n;
        tail = &n->first;
        for (;;) {
            yaml_event_t e;
            if (!next_event(p, &e)) {
                rc = SL_EINVAL;
                break;
            }
            if (e.type == end) {
                yaml_event_delete(&e);
                break;
            }
            char *key = NULL;
            if (map) {
                if (e.type != YAML_SCALAR_EVENT) { /* a key that is no scalar */
                    yaml_event_delete(&e);
                    rc = SL_EINVAL;
                    break;
                }
                key = strndup((const char *)e.data.scalar.value, e.data.scalar.length);
                yaml_event_delete(&e);
                if (key == NULL) {
                    rc = SL_ENOMEM;
                    break;
                }
                if (!next_event(p, &e)) {
                    free(key);
                    rc = SL_EINVAL;
                    break;
                }
            }
            sld_yaml_node_t *child;
            if ((rc = build(p, &e, depth + 1, &child)) != SL_OK) {
                free(key);
                break;
            }
            child->key = key;
            *tail = child;
            tail = &child->next;
        }
        break;
    }
    default: /* an alias, or an event out of place */
        rc = SL_EINVAL;
    }
    yaml_event_delete(ev);
    if (rc != SL_OK) {
        sld_yaml_free(*out);
        *out = NULL;
    }
    return rc;
}

int sld_yaml_tree(const char *text, size_t len, sld_yaml_node_t **out) {
    *out = NULL;
    yaml_parser_t p;
    if (!yaml_parser_initialize(&p))
        return SL_ENOMEM;
    yaml_parser_set_input_string(&p, (const unsigned char *)text, len);
    int rc = SL_OK;
    for (;;) {
        yaml_event_t ev;
        if (!next_event(&p, &ev)) {
            rc = SL_EINVAL;
            break;
        }
        yaml_event_type_t t = ev.type;
        if (t == YAML_STREAM_START_EVENT || t == YAML_DOCUMENT_START_EVENT) {
            yaml_event_delete(&ev);
            continue;
        }
        if (t == YAML_DOCUMENT_END_EVENT || t == YAML_STREAM_END_EVENT) {
            yaml_event_delete(&ev);
            break; /* the first document only: config/ refuses a second */
        }
        if (*out != NULL) {
            yaml_event_delete(&ev);
            rc = SL_EINVAL;
            break;
        }
        if ((rc = build(&p, &ev, 0, out)) != SL_OK)
            break;
    }
    yaml_parser_delete(&p);
    if (rc != SL_OK) {
        sld_yaml_free(*out);
        *out = NULL;
    }
    return rc;
}

void sld_yaml_free(sld_yaml_node_t *n) {
    while (n) {
        sld_yaml_node_t *next = n->next;
        sld_yaml_free(n->first);
        free(n->key);
        free(n->value);
        free(n);
        n = next;
    }
}

const sld_yaml_node_t *sld_yaml_get(const sld_yaml_node_t *n, const char *key) {
    if (n == NULL || n->kind != SLD_YAML_MAPPING)
        return NULL;
    for (const sld_yaml_node_t *c = n->first; c; c = c->next)
        if (strcmp(c->key, key) == 0)
            return c;
    return NULL;
}

const sld_yaml_node_t *sld_yaml_at(const sld_yaml_node_t *n, size_t i) {
    if (n == NULL || n->kind != SLD_YAML_SEQUENCE)
        return NULL;
    const sld_yaml_node_t *c = n->first;
    while (c && i--)
        c = c->next;
    return c;
}
