/* rates.h -- decisions per second, per policy and result, over the last 15
 * minutes at one-second resolution: what /v1/stats and /status chart.
 * Besides the three results (metrics.h), which add up to every decision,
 * a fourth column counts the admitted decisions that came with a delay
 * (a reservation's wait, a shaper's queue): "delayed" is a part of
 * allowed + limited, not a result of its own.
 *
 * Per (worker, policy slot) a ring of 900 one-second buckets, allocated on
 * the slot's first decision, written by that worker only with relaxed
 * atomics (no lock, no locked instruction on the decision path) and summed
 * over the workers when read. A reader racing a worker's turn to a new
 * second may see that bucket's counts from before its reset: a second at
 * the edge of the chart may be off by what one worker decided in it.
 *
 * Not here: the per-policy totals (metrics.h), rendering (http_stats.c).
 */
#ifndef SL_SERVER_RATES_H
#define SL_SERVER_RATES_H

#include <stdbool.h>
#include <stdint.h>

#include "server/observe/metrics.h"

#define SLD_RATES_SECONDS 900
#define SLD_RATE_DELAYED SLD_RESULTS     /* the column of admitted-with-a-delay */
#define SLD_RATE_COLUMNS (SLD_RESULTS + 1)

typedef struct sld_rates sld_rates_t;

/* SL_OK, SL_EINVAL (zero workers or slots), SL_ENOMEM. */
int sld_rates_new(uint32_t workers, uint32_t slots, sld_rates_t **out);
void sld_rates_free(sld_rates_t *r);

/* Worker w decided under `slot` at now_us: one more of `result`, and one
 * more delayed when `delayed` (an admitted decision with a delay). Slots out
 * of range, negative times and a failed allocation are ignored. */
void sld_rates_note(sld_rates_t *r, uint32_t w, uint32_t slot, sld_result_t result, bool delayed,
                    int64_t now_us);
/* The same at second `sec` (now_us / 1 s), for a caller that has it. */
void sld_rates_note_second(sld_rates_t *r, uint32_t w, uint32_t slot, sld_result_t result,
                           bool delayed, int64_t sec);

/* sld_rates_note_second for many decisions at once: n[result] and
 * n[SLD_RATE_DELAYED] added to worker w's second `sec` under slot (the
 * engine's run hook sums a run's decisions first: one call a run). */
void sld_rates_add_second(sld_rates_t *r, uint32_t w, uint32_t slot, int64_t sec,
                          const uint32_t n[SLD_RATE_COLUMNS]);

/* The last `seconds` (<= SLD_RATES_SECONDS) whole seconds before the one
 * holding now_us, oldest first: out[i][result] and out[i][SLD_RATE_DELAYED],
 * summed over the workers.
 * Returns whether the slot ever counted anything. */
int sld_rates_read(sld_rates_t *r, uint32_t slot, int64_t now_us, uint32_t seconds,
                   uint64_t (*out)[SLD_RATE_COLUMNS]);

#endif
