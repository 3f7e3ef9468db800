/* gateway_yaml.h -- the nodes of the gateway: section that libcyaml 1.3
 * cannot describe: a value written either as one scalar or as a list whose
 * entries are scalars or mappings (gateway.listen, a route's upstream).
 * libcyaml skips them (CYAML_IGNORE); the section reads the file's text
 * again with libyaml into a small tree and takes them from there.
 *
 * The text has passed config/'s own checks by then (its syntax, no
 * aliases, bounded nesting); this still refuses what it cannot read
 * rather than trusting that.
 *
 * Not here: what the nodes mean (gateway_config.c), messages and lines
 * (config/section.h: sld_config_bad finds a node's line by its path).
 */
#ifndef SL_SERVER_GATEWAY_YAML_H
#define SL_SERVER_GATEWAY_YAML_H

#include <stdbool.h>
#include <stddef.h>

typedef enum sld_yaml_kind { SLD_YAML_SCALAR, SLD_YAML_SEQUENCE, SLD_YAML_MAPPING } sld_yaml_kind_t;

typedef struct sld_yaml_node {
    sld_yaml_kind_t kind;
    char *key;                        /* a mapping's member: its key; else NULL */
    char *value;                      /* a scalar: its text */
    bool null;                        /* a plain scalar ~, null or nothing */
    struct sld_yaml_node *first;      /* a collection's entries, in order */
    struct sld_yaml_node *next;       /* the next entry of its collection */
} sld_yaml_node_t;

/* The document of text[0..len) as a tree into *out (NULL for an empty
 * document): SL_OK, SL_EINVAL when it cannot be read, SL_ENOMEM. */
int sld_yaml_tree(const char *text, size_t len, sld_yaml_node_t **out);
void sld_yaml_free(sld_yaml_node_t *n);

/* The member `key` of a mapping, or NULL (n NULL or not a mapping too). */
const sld_yaml_node_t *sld_yaml_get(const sld_yaml_node_t *n, const char *key);
/* The i-th entry of a sequence, or NULL. */
const sld_yaml_node_t *sld_yaml_at(const sld_yaml_node_t *n, size_t i);

#endif
