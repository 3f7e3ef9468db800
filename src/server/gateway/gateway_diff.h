/* gateway_diff.h -- two gateway: sections compared, for a reload: whether
 * the routes changed (a reload with the same routes keeps the running
 * ones, and their upstream connections), what changed in them for the log
 * line, and which keys changed that a running gateway cannot take (its
 * listeners and their certificates, the access log's file).
 *
 * Pure: sections in, answers and text out; no allocation.
 *
 * Not here: reading a section (gateway_config.h), applying a reload
 * (gateway_generation.h).
 */
#ifndef SL_SERVER_GATEWAY_DIFF_H
#define SL_SERVER_GATEWAY_DIFF_H

#include <stdbool.h>
#include <stddef.h>

#include "server/gateway/gateway_config.h"

/* Whether a and b are the same route, value for value. */
bool sld_gw_route_equal(const sld_gw_route_t *a, const sld_gw_route_t *b);

/* Whether a and b have the same routes in the same order, value for value
 * (the section's timeout and headers are in each route already). */
bool sld_gw_routes_equal(const sld_gw_config_t *a, const sld_gw_config_t *b);

/* What changed from the routes of a to those of b, by name. */
typedef struct sld_gw_routes_change {
    size_t added;        /* in b only */
    size_t removed;      /* in a only */
    size_t changed;      /* in both, some value differs */
    bool reordered;      /* the routes of both are in another order */
} sld_gw_routes_change_t;

/* Counts the change into *out and says it in text[0..len) (always
 * terminated, cut with "..."): "added: x, y; removed: z; changed: w;
 * order changed", or "" when nothing changed. Returns whether anything did. */
bool sld_gw_routes_change(const sld_gw_config_t *a, const sld_gw_config_t *b, sld_gw_routes_change_t *out,
                          char *text, size_t len);

/* The keys of next that differ from running's and need a restart, said in
 * text[0..len) (always terminated, cut with "..."): "gateway.listen[1]
 * (its address)", "gateway.listen[0].tls (cert, key)", "gateway.listen (2
 * listeners instead of 1)", "gateway.access_log (the file)"; "" when
 * none. Turning the access log off is not one of them: the routes' own
 * access_log follows the section. Returns how many. */
size_t sld_gw_restart_keys(const sld_gw_config_t *running, const sld_gw_config_t *next, char *text, size_t len);

#endif
