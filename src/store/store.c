/* store.c -- the public sl_store_* calls, dispatched to the implementation.
 * An operation a store does not implement gives SL_ENOTSUP. */
#include "store.h"

void sl_store_free(sl_store_t *s) {
    if (s)
        s->ops->destroy(s);
}

int sl_store_stats(sl_store_t *s, sl_store_stats_t *out) {
    if (s == NULL || out == NULL)
        return SL_EINVAL;
    return s->ops->stats ? s->ops->stats(s, out) : SL_ENOTSUP;
}

int sl_store_sweep(sl_store_t *s, sl_usec_t now, size_t budget, size_t *reclaimed) {
    if (s == NULL)
        return SL_EINVAL;
    return s->ops->sweep ? s->ops->sweep(s, now, budget, reclaimed) : SL_ENOTSUP;
}

int sl_store_save(sl_store_t *s, const char *path, sl_usec_t now) {
    if (s == NULL || path == NULL)
        return SL_EINVAL;
    return s->ops->save ? s->ops->save(s, path, now) : SL_ENOTSUP;
}

int sl_store_load(sl_store_t *s, const char *path, sl_usec_t now, size_t *loaded) {
    if (s == NULL || path == NULL)
        return SL_EINVAL;
    return s->ops->load ? s->ops->load(s, path, now, loaded) : SL_ENOTSUP;
}
