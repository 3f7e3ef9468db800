/* throttle_args.c -- CL.THROTTLE / GCRA arguments (see throttle_args.h). */
#include <stdbool.h>

#include "server/resp/throttle_args.h"

int64_t sld_throttle_seconds(sl_usec_t us) {
    return us / SL_USEC_PER_SEC + (us % SL_USEC_PER_SEC >= 1000);
}

/* Seconds, integral or with up to 9 decimals, as nanoseconds (> 0). */
static bool parse_seconds_ns(const sld_arg_t *a, int64_t *out) {
    int64_t whole = 0, frac = 0;
    size_t i = 0, digits = 0, decimals = 0;
    for (; i < a->len && a->ptr[i] >= '0' && a->ptr[i] <= '9'; i++, digits++) {
        if (whole > (INT64_MAX / 1000000000 - 9) / 10)
            return false;
        whole = whole * 10 + (a->ptr[i] - '0');
    }
    if (i < a->len && a->ptr[i] == '.') {
        for (i++; i < a->len && a->ptr[i] >= '0' && a->ptr[i] <= '9'; i++, decimals++) {
            if (decimals == 9)
                return false;
            frac = frac * 10 + (a->ptr[i] - '0');
        }
        if (decimals == 0)
            return false;
    }
    if (i != a->len || digits == 0)
        return false;
    for (; decimals < 9; decimals++)
        frac *= 10;
    *out = whole * 1000000000 + frac;
    return *out > 0;
}

/* An integer argument. What clients send for these (a count, a burst, a
 * period: 1 to 18 digits, no sign) is read here, without the general path
 * and its call; anything else gets sld_arg_int's own verdict. */
static inline int arg_int(const sld_arg_t *a, int64_t *out) {
    if (a->len - 1 < 18) { /* len 0 wraps round */
        int64_t v = 0;
        size_t i = 0;
        for (; i < a->len; i++) {
            unsigned d = (unsigned)(unsigned char)a->ptr[i] - '0';
            if (d > 9)
                break;
            v = v * 10 + (int64_t)d;
        }
        if (i == a->len) {
            *out = v;
            return SL_OK;
        }
    }
    return sld_arg_int(a, out);
}

static const char *interval(int64_t period_ns, int64_t count, int64_t *out) {
    *out = period_ns / count;
    return *out > 0 ? NULL : "ERR rate too high: more than one request per nanosecond";
}

/* key, max_burst and the count per period, common to both commands. */
static const char *parse_head(const sld_arg_t *argv, sld_throttle_args_t *out, int64_t *count,
                              const char *count_error) {
    out->key = argv[1];
    out->quantity = 1;
    if (arg_int(&argv[2], &out->max_burst) != SL_OK || out->max_burst < 0)
        return "ERR max_burst must be an integer >= 0";
    if (arg_int(&argv[3], count) != SL_OK || *count < 1)
        return count_error;
    return NULL;
}

const char *sld_throttle_parse(const sld_arg_t *argv, size_t argc, sld_throttle_args_t *out) {
    if (argc != 5 && argc != 6)
        return "ERR wrong number of arguments for 'cl.throttle' command: "
               "CL.THROTTLE <key> <max_burst> <count per period> <period> [<quantity>]";
    int64_t period, count;
    const char *err = parse_head(argv, out, &count, "ERR count per period must be an integer >= 1");
    if (err)
        return err;
    if (arg_int(&argv[4], &period) != SL_OK || period < 1)
        return "ERR period must be a number of seconds >= 1";
    if (period > INT64_MAX / 1000000000)
        return "ERR period is too long";
    if (argc == 6 && (arg_int(&argv[5], &out->quantity) != SL_OK || out->quantity < 0))
        return "ERR quantity must be an integer >= 0";
    return interval(period * 1000000000, count, &out->interval_ns);
}

const char *sld_gcra_parse(const sld_arg_t *argv, size_t argc, sld_throttle_args_t *out) {
    if (argc != 5 && argc != 7)
        return "ERR wrong number of arguments for 'gcra' command: "
               "GCRA <key> <max_burst> <tokens_per_period> <period> [TOKENS <n>]";
    int64_t period_ns, tokens;
    const char *err = parse_head(argv, out, &tokens, "ERR tokens_per_period must be an integer >= 1");
    if (err)
        return err;
    if (!parse_seconds_ns(&argv[4], &period_ns))
        return "ERR period must be a positive number of seconds (up to 9 decimals)";
    if (argc == 7) {
        if (!sld_arg_is(&argv[5], "TOKENS"))
            return "ERR syntax error: expected TOKENS <n>";
        if (arg_int(&argv[6], &out->quantity) != SL_OK || out->quantity < 0)
            return "ERR TOKENS must be an integer >= 0";
    }
    return interval(period_ns, tokens, &out->interval_ns);
}
