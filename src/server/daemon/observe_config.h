/* observe_config.h -- the observe: section: whether the heavy-hitter
 * sketches and per-second rates behind /v1/stats run, and how keys show.
 *
 *   observe:
 *     heavy_hitters: on      # on | off (off: no sketch, no rates, no cost)
 *     keys: show             # show | hash | hide
 *     counters: 64           # Space-Saving counters per sketch, 8..1024
 *     sample_above: 1000     # decisions a second per worker counted one by one; 0: all
 *
 * Read once at start (the sketches are sized then); a reload that changes
 * it takes effect at the next start.
 *
 * Not here: the sketches (observe/heavy_hitters.h), /v1/stats (http_stats.c).
 */
#ifndef SL_SERVER_OBSERVE_CONFIG_H
#define SL_SERVER_OBSERVE_CONFIG_H

#include <stdbool.h>

#include "server/config/section.h"
#include "server/observe/heavy_hitters.h"

typedef struct sld_observe_settings {
    bool heavy_hitters;           /* default off */
    sld_hh_options_t hh;
} sld_observe_settings_t;

extern const sld_config_section_t sld_observe_section;

/* cfg's settings, the defaults when the file has no observe: section. */
sld_observe_settings_t sld_observe_settings(const sld_config_t *cfg);

#endif
