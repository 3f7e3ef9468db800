/* commands.c -- RESP command handlers and their table (see commands.h).
 *
 * Replies of the native commands (docs/protocol.md): times in milliseconds,
 * rounded up so that a client waiting that long is admitted; redis-cell's
 * CL.THROTTLE keeps its own seconds.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "server/base/decimal.h"
#include "server/resp/commands.h"
#include "server/resp/acquire.h"
#include "server/resp/auth.h"
#include "server/resp/resp_config.h"
#include "server/resp/connection_commands.h"
#include "server/resp/hello.h"
#include "server/resp/keyspace.h"
#include "server/resp/throttle_args.h"
#include "server/resp/transaction_group.h"
#include "server/engine/engine.h"
#include "server/base/log.h"

typedef void (*handler_t)(sld_client_t *c, const sld_arg_t *argv, size_t argc);

typedef struct command {
    const char *name;  /* upper case */
    size_t name_len;   /* strlen(name): a lookup compares lengths first */
    int arity;         /* argc exactly, or at least -arity when negative */
    handler_t run;
    int key;           /* position of the key argument (COMMAND INFO), 0 = none */
    bool test_only;    /* exists only with the manual test clock */
    bool keys_to_end;  /* every argument from `key` on is a key (DEL, EXISTS) */
} command_t;

/* A table row's name and its length, counted by the compiler. */
#define NAME(s) s, sizeof s - 1

/* quiet: say nothing (the batch tries, and leaves errors to the handler) */
static bool key_ok_quiet(sld_client_t *c, const sld_arg_t *key, bool quiet) {
    if (key->len <= c->rt->cfg->max_key_bytes)
        return true;
    if (!quiet)
        sld_reply_errorf(c->out, "ERR key is %zu bytes, longer than max_key_bytes (%u)", key->len,
                     c->rt->cfg->max_key_bytes);
    return false;
}

static bool key_ok(sld_client_t *c, const sld_arg_t *key) { return key_ok_quiet(c, key, false); }

static void reply_library_error(sld_client_t *c, int rc) {
    sld_reply_errorf(c->out, "ERR %s", sl_strerror(rc));
}

/* ---- redis-cell and Redis GCRA ----------------------------------------------------------- */

/* ---- decisions, now or later ------------------------------------------------------------ */

typedef enum reply_kind { REPLY_THROTTLE, REPLY_NATIVE, REPLY_RESET } reply_kind_t;


static void write_reply(sld_buf_t *out, reply_kind_t kind, int rc, const sl_decision_t *d) {
    if (rc != SL_OK) {
        sld_reply_errorf(out, "ERR %s", rc == SL_EIO ? "the store did not answer" : sl_strerror(rc));
        return;
    }
    if (kind == REPLY_RESET) {
        sld_reply_ok(out);
    } else if (kind == REPLY_THROTTLE) {
        int64_t reply[5] = {!d->allowed, (int64_t)d->limit, (int64_t)d->remaining,
                            d->allowed || d->retry_after == SL_NEVER ? -1
                                                                     : sld_throttle_seconds(d->retry_after),
                            sld_throttle_seconds(d->reset_after)};
        sld_reply_ints(out, reply, 5);
    } else {
        int64_t reply[8] = {d->allowed,
                            (int64_t)d->limit,
                            (int64_t)d->remaining,
                            d->retry_after == SL_NEVER ? -1 : sld_ms_up(d->retry_after),
                            sld_ms_up(d->reset_after),
                            sld_ms_up(d->delay),
                            d->limited,
                            d->limit_index};
        sld_reply_ints(out, reply, 8);
    }
}

typedef struct later {
    sld_reply_t *slot;
    reply_kind_t kind;
} later_t;

static void on_decided(void *arg, int rc, const sl_decision_t *d, const sl_limit_report_t *limits) {
    (void)limits;
    later_t *l = arg;
    write_reply(sld_reply_buf(l->slot), l->kind, rc, d);
    sld_reply_done(l->slot);
    free(l);
}

/* Decides (or resets) and replies: at once with the memory store, or when
 * Redis answers, in the command's place in the pipeline. */
static void decide_and_reply(sld_client_t *c, reply_kind_t kind, const sld_origin_t *origin,
                             const sl_policy_t *p, const sld_arg_t *key, uint64_t cost,
                             unsigned flags) {
    later_t *l = NULL;
    sld_engine_t *e = c->d->engine;
    if (sld_engine_defers(e, p)) {
        if ((l = malloc(sizeof *l)) == NULL || (l->slot = sld_reply_defer(c->replies)) == NULL) {
            free(l);
            sld_reply_error(c->out, "ERR out of memory");
            return;
        }
        l->kind = kind;
        c->out = sld_reply_queue_tail(c->replies); /* later replies wait behind it */
    }
    sl_decision_t d = {0};
    sld_request_t req = {.origin = *origin, .p = p, .key = key->ptr, .key_len = key->len,
                         .cost = cost, .flags = flags};
    sld_decided_fn fn = l ? on_decided : NULL;
    int rc = kind == REPLY_RESET ? sld_engine_reset(e, c->worker, &req, fn, l)
                                 : sld_engine_decide(e, c->worker, &req, &d, NULL, fn, l);
    if (rc == SLD_PENDING)
        return;
    if (l) {
        sld_reply_undefer(c->replies, l->slot);
        c->out = sld_reply_queue_tail(c->replies);
        free(l);
    }
    write_reply(c->out, kind, rc, &d);
}

/* ---- redis-cell and Redis GCRA ----------------------------------------------------------- */

static sld_origin_t throttle_origin(const sld_client_t *c, const sl_policy_t *local) {
    return (sld_origin_t){.rt = c->rt, .index = SIZE_MAX, .slot = c->d->throttle_slot, .local = local};
}

/* CL.THROTTLE / GCRA's policy and origin: false after an error reply (or,
 * quiet, with nothing said). */
static bool throttle_set(sld_client_t *c, const sld_throttle_args_t *a, bool quiet,
                         const sl_policy_t **p, sld_origin_t *origin) {
    const sl_policy_t *local;
    int rc = sld_throttles_get(c->d->throttles, a->max_burst, a->interval_ns, p, &local);
    const char *why = NULL;
    if (rc == SL_OK && sld_engine_supports(c->d->engine, *p, &why)) {
        *origin = throttle_origin(c, local);
        return true;
    }
    if (quiet)
        return false;
    if (rc == SL_ERANGE)
        sld_reply_error(c->out, "ERR max_burst x interval is too large");
    else if (rc == SL_ETOOMANY)
        sld_reply_errorf(c->out, "ERR too many distinct CL.THROTTLE/GCRA parameter sets (at most %d)",
                         SLD_THROTTLE_MAX_SETS);
    else if (rc != SL_OK)
        reply_library_error(c, rc);
    else
        sld_reply_errorf(c->out, "ERR these parameters cannot be decided exactly in Redis: %s", why);
    return false;
}

static bool throttle_policy(sld_client_t *c, const sld_throttle_args_t *a, bool quiet,
                            const sl_policy_t **p, sld_origin_t *origin) {
    return key_ok_quiet(c, &a->key, quiet) && throttle_set(c, a, quiet, p, origin);
}

static void throttle(sld_client_t *c, const sld_throttle_args_t *a) {
    const sl_policy_t *p;
    sld_origin_t origin;
    if (throttle_policy(c, a, false, &p, &origin))
        decide_and_reply(c, REPLY_THROTTLE, &origin, p, &a->key, (uint64_t)a->quantity, 0);
}

static void cmd_cl_throttle(sld_client_t *c, const sld_arg_t *argv, size_t argc) {
    sld_throttle_args_t a;
    const char *err = sld_throttle_parse(argv, argc, &a);
    if (err)
        sld_reply_error(c->out, err);
    else
        throttle(c, &a);
}

static void cmd_gcra(sld_client_t *c, const sld_arg_t *argv, size_t argc) {
    sld_throttle_args_t a;
    const char *err = sld_gcra_parse(argv, argc, &a);
    if (err)
        sld_reply_error(c->out, err);
    else
        throttle(c, &a);
}

/* ---- native commands ------------------------------------------------------------------------ */

/* SL.CHECK / SL.PEEK's arguments: false after an error reply. MULTI checks
 * them this way too, before it queues the command. */
static bool decide_args_quiet(sld_client_t *c, const sld_arg_t *argv, size_t argc, int64_t *cost,
                              const sl_policy_t **p, size_t *index, bool quiet) {
    *cost = 1;
    if (argc == 4 && (sld_arg_int(&argv[3], cost) != SL_OK || *cost < 0)) {
        if (!quiet)
            sld_reply_error(c->out, "ERR cost must be an integer >= 0");
        return false;
    }
    if (!key_ok_quiet(c, &argv[2], quiet))
        return false;
    *p = sld_policies_find(c->rt->policies, argv[1].ptr, argv[1].len, argv[2].ptr, argv[2].len,
                           NULL, index);
    if (*p == NULL) {
        if (!quiet)
            sld_reply_errorf(c->out, "ERR no policy named '%.*s' (SL.POLICIES lists them)",
                             (int)(argv[1].len > 64 ? 64 : argv[1].len), argv[1].ptr);
        return false;
    }
    return true;
}

static bool decide_args(sld_client_t *c, const sld_arg_t *argv, size_t argc, int64_t *cost,
                        const sl_policy_t **p, size_t *index) {
    return decide_args_quiet(c, argv, argc, cost, p, index, false);
}

/* SL.CHECK / SL.PEEK policy key [cost] */
static void decide(sld_client_t *c, const sld_arg_t *argv, size_t argc, bool peek) {
    int64_t cost;
    size_t index = 0;
    const sl_policy_t *p;
    if (!decide_args(c, argv, argc, &cost, &p, &index))
        return;
    sld_origin_t origin = {.rt = c->rt, .index = index,
                           .slot = sld_policies_slot(c->rt->policies, index)};
    decide_and_reply(c, REPLY_NATIVE, &origin, p, &argv[2], (uint64_t)cost,
                     peek ? SL_DECIDE_PEEK : 0);
}

static void cmd_sl_check(sld_client_t *c, const sld_arg_t *argv, size_t argc) {
    decide(c, argv, argc, false);
}

static void cmd_sl_peek(sld_client_t *c, const sld_arg_t *argv, size_t argc) {
    decide(c, argv, argc, true);
}

static void write_any(sld_buf_t *out, int kind, int rc, const sl_decision_t *d) {
    write_reply(out, (reply_kind_t)kind, rc, d);
}

/* SL.ACQUIRE policy key [COST n] TIMEOUT ms: SL.CHECK's reply, once admitted
 * (acquire.h). */
static void cmd_sl_acquire(sld_client_t *c, const sld_arg_t *argv, size_t argc) {
    int64_t cost = 1, unused;
    sl_usec_t wait = 0;
    size_t index = 0;
    const sl_policy_t *p;
    const char *err = sld_acquire_options(argv, argc, 3, &cost, &wait);
    if (err) {
        sld_reply_error(c->out, err);
        return;
    }
    if (!decide_args(c, argv, 3, &unused, &p, &index))
        return;
    sld_request_t req = {.origin = {.rt = c->rt, .index = index,
                                    .slot = sld_policies_slot(c->rt->policies, index)},
                         .p = p, .key = argv[2].ptr, .key_len = argv[2].len, .cost = (uint64_t)cost};
    sld_acquire(c, &req, wait, REPLY_NATIVE, write_any);
}

/* CL.ACQUIRE key max_burst count period [quantity] TIMEOUT ms: CL.THROTTLE's
 * reply, once admitted. */
static void cmd_cl_acquire(sld_client_t *c, const sld_arg_t *argv, size_t argc) {
    sl_usec_t wait = 0;
    sld_throttle_args_t a;
    const char *err = sld_acquire_options(argv, argc, argc - 2, NULL, &wait);
    if (err == NULL)
        err = sld_throttle_parse(argv, argc - 2, &a);
    if (err) {
        sld_reply_error(c->out, err);
        return;
    }
    const sl_policy_t *p;
    sld_origin_t origin;
    if (!throttle_policy(c, &a, false, &p, &origin))
        return;
    sld_request_t req = {.origin = origin, .p = p, .key = a.key.ptr, .key_len = a.key.len,
                         .cost = (uint64_t)a.quantity};
    sld_acquire(c, &req, wait, REPLY_THROTTLE, write_any);
}

/* SL.RESET's policy: NULL after an error reply. */
static const sl_policy_t *reset_policy(sld_client_t *c, const sld_arg_t *argv, size_t *index) {
    const sl_policy_t *p = sld_policies_find(c->rt->policies, argv[1].ptr, argv[1].len,
                                             argv[2].ptr, argv[2].len, NULL, index);
    if (p == NULL)
        sld_reply_error(c->out, "ERR no such policy");
    return p;
}

static void cmd_sl_reset(sld_client_t *c, const sld_arg_t *argv, size_t argc) {
    (void)argc;
    size_t index = 0;
    const sl_policy_t *p = reset_policy(c, argv, &index);
    if (p == NULL)
        return;
    sld_origin_t origin = {.rt = c->rt, .index = index,
                           .slot = sld_policies_slot(c->rt->policies, index)};
    decide_and_reply(c, REPLY_RESET, &origin, p, &argv[2], 0, 0);
}

static void reply_limit(sld_buf_t *out, const sl_limit_t *l) {
    sld_reply_array(out, 7);
    sld_reply_bulk_str(out, sl_algorithm_name(l->algorithm));
    sld_reply_int(out, (int64_t)l->limit);
    sld_reply_int(out, sld_ms_up(l->period));
    sld_reply_int(out, (int64_t)l->burst);
    sld_reply_int(out, l->precision);
    sld_reply_int(out, l->shaper);
    sld_reply_int(out, l->count_denied);
}

/* SL.POLICIES: [[name, mode, [limit...], [tier name...]] ...], each limit
 * [algorithm, limit, period_ms, burst, precision, shaper, count_denied]. */
static void cmd_sl_policies(sld_client_t *c, const sld_arg_t *argv, size_t argc) {
    (void)argv, (void)argc;
    size_t n = sld_policies_count(c->rt->policies);
    sld_reply_array(c->out, n);
    for (size_t i = 0; i < n; i++) {
        const sld_policy_t *p = sld_policies_config(c->rt->policies, i);
        sld_reply_array(c->out, 4);
        sld_reply_bulk_str(c->out, p->name);
        sld_reply_bulk_str(c->out, sl_mode_name(p->mode));
        sld_reply_array(c->out, p->nlimits);
        for (size_t k = 0; k < p->nlimits; k++)
            reply_limit(c->out, &p->limits[k]);
        sld_reply_array(c->out, p->ntiers);
        for (size_t k = 0; k < p->ntiers; k++)
            sld_reply_bulk_str(c->out, p->tiers[k].name);
    }
}

/* SL.TESTCLOCK GET | SET <us> | ADVANCE <us>: the manual clock of tests. */
static void cmd_sl_testclock(sld_client_t *c, const sld_arg_t *argv, size_t argc) {
    int64_t v = 0;
    if (argc == 2 && sld_arg_is(&argv[1], "GET")) {
        sld_reply_int(c->out, atomic_load(&c->d->test_now));
    } else if (argc == 3 && sld_arg_int(&argv[2], &v) == SL_OK && sld_arg_is(&argv[1], "SET")) {
        atomic_store(&c->d->test_now, v);
        sld_reply_int(c->out, v);
    } else if (argc == 3 && sld_arg_int(&argv[2], &v) == SL_OK && sld_arg_is(&argv[1], "ADVANCE")) {
        sld_reply_int(c->out, atomic_fetch_add(&c->d->test_now, v) + v);
    } else {
        sld_reply_error(c->out, "ERR usage: SL.TESTCLOCK GET | SET <us> | ADVANCE <us>");
    }
}

/* ---- what Redis clients expect ----------------------------------------------------------- */

static void cmd_ping(sld_client_t *c, const sld_arg_t *argv, size_t argc) {
    if (argc == 2)
        sld_reply_bulk(c->out, argv[1].ptr, argv[1].len);
    else if (argc == 1)
        sld_buf_append(c->out, "+PONG\r\n", 7);
    else
        sld_reply_error(c->out, "ERR wrong number of arguments for 'ping' command");
}

static void cmd_echo(sld_client_t *c, const sld_arg_t *argv, size_t argc) {
    (void)argc;
    sld_reply_bulk(c->out, argv[1].ptr, argv[1].len);
}

static void cmd_quit(sld_client_t *c, const sld_arg_t *argv, size_t argc) {
    (void)argv, (void)argc;
    sld_reply_ok(c->out);
    c->quit = true;
}

static void set_name(sld_client_t *c, const sld_arg_t *name) {
    size_t n = name->len < sizeof c->name - 1 ? name->len : sizeof c->name - 1;
    memcpy(c->name, name->ptr, n);
    c->name[n] = '\0';
}

/* HELLO [2|3 [AUTH user pass] [SETNAME name]]: the protocol of the replies
 * that follow, this one included. */
static void cmd_hello(sld_client_t *c, const sld_arg_t *argv, size_t argc) {
    sld_hello_t h;
    char err[160];
    if (sld_hello_parse(argv, argc, &h, err, sizeof err)) {
        sld_reply_error(c->out, err);
        return;
    }
    if (h.user && sld_auth_check(c, h.user, h.pass) != 0)
        return; /* refused, and said why */
    if (h.name)
        set_name(c, h.name);
    if (h.proto)
        c->proto = (uint8_t)h.proto;
    sld_hello_reply(c->out, sld_proto(c), c->id);
}

/* CONFIG GET answers nothing (an empty map): redis-benchmark asks, and copes. */
static void cmd_config(sld_client_t *c, const sld_arg_t *argv, size_t argc) {
    (void)argc;
    if (sld_arg_is(&argv[1], "GET"))
        sld_reply_map(c->out, sld_proto(c), 0);
    else
        sld_reply_error(c->out, "ERR sluice is configured by its YAML file (see SL.POLICIES)");
}

static void cmd_dbsize(sld_client_t *c, const sld_arg_t *argv, size_t argc);
static void cmd_command(sld_client_t *c, const sld_arg_t *argv, size_t argc);
static void cmd_multi(sld_client_t *c, const sld_arg_t *argv, size_t argc);
static void cmd_exec(sld_client_t *c, const sld_arg_t *argv, size_t argc);
static void cmd_discard(sld_client_t *c, const sld_arg_t *argv, size_t argc);
static void cmd_watch(sld_client_t *c, const sld_arg_t *argv, size_t argc);

static const command_t table[] = {
    {NAME("AUTH"), -2, sld_cmd_auth, 0, false, false},
    {NAME("CL.ACQUIRE"), -7, cmd_cl_acquire, 1, false, false},
    {NAME("CL.THROTTLE"), -5, cmd_cl_throttle, 1, false, false},
    {NAME("CLIENT"), -2, sld_cmd_client, 0, false, false},
    {NAME("CLUSTER"), -2, sld_cmd_cluster, 0, false, false},
    {NAME("COMMAND"), -1, cmd_command, 0, false, false},
    {NAME("CONFIG"), -2, cmd_config, 0, false, false},
    {NAME("DBSIZE"), 1, cmd_dbsize, 0, false, false},
    {NAME("DEL"), -2, sld_cmd_del, 1, false, true},
    {NAME("DISCARD"), 1, cmd_discard, 0, false, false},
    {NAME("ECHO"), 2, cmd_echo, 0, false, false},
    {NAME("EXEC"), 1, cmd_exec, 0, false, false},
    {NAME("EXISTS"), -2, sld_cmd_exists, 1, false, true},
    {NAME("GCRA"), -5, cmd_gcra, 1, false, false},
    {NAME("HELLO"), -1, cmd_hello, 0, false, false},
    {NAME("INFO"), -1, sld_cmd_info, 0, false, false},
    {NAME("MULTI"), 1, cmd_multi, 0, false, false},
    {NAME("PING"), -1, cmd_ping, 0, false, false},
    {NAME("PTTL"), 2, sld_cmd_pttl, 1, false, false},
    {NAME("QUIT"), -1, cmd_quit, 0, false, false},
    {NAME("SELECT"), 2, sld_cmd_select, 0, false, false},
    {NAME("SL.ACQUIRE"), -5, cmd_sl_acquire, 2, false, false},
    {NAME("SL.CHECK"), -3, cmd_sl_check, 2, false, false},
    {NAME("SL.PEEK"), -3, cmd_sl_peek, 2, false, false},
    {NAME("SL.POLICIES"), 1, cmd_sl_policies, 0, false, false},
    {NAME("SL.RESET"), 3, cmd_sl_reset, 2, false, false},
    {NAME("SL.STATS"), -1, sld_cmd_sl_stats, 0, false, false},
    {NAME("SL.TESTCLOCK"), -2, cmd_sl_testclock, 0, true, false},
    {NAME("TIME"), 1, sld_cmd_time, 0, false, false},
    {NAME("TTL"), 2, sld_cmd_ttl, 1, false, false},
    {NAME("UNLINK"), -2, sld_cmd_del, 1, false, true},
    {NAME("UNWATCH"), 1, cmd_watch, 0, false, false},
    {NAME("WATCH"), -2, cmd_watch, 1, false, true},
};
#define NCOMMANDS (sizeof table / sizeof table[0])

static size_t visible_commands(const sld_client_t *c) {
    size_t n = 0;
    for (size_t i = 0; i < NCOMMANDS; i++)
        n += !table[i].test_only || c->d->test_clock;
    return n;
}

/* name, arity, flags, first key, last key, step */
static void reply_command_info(sld_client_t *c, const command_t *cmd) {
    char lower[32];
    size_t n = cmd->name_len;
    for (size_t k = 0; k <= n; k++)
        lower[k] = (char)(cmd->name[k] >= 'A' && cmd->name[k] <= 'Z' ? cmd->name[k] + 32 : cmd->name[k]);
    sld_reply_array(c->out, 6);
    sld_reply_bulk_str(c->out, lower);
    sld_reply_int(c->out, cmd->arity);
    sld_reply_set(c->out, sld_proto(c), 0); /* flags */
    sld_reply_int(c->out, cmd->key);
    sld_reply_int(c->out, cmd->keys_to_end ? -1 : cmd->key);
    sld_reply_int(c->out, cmd->key ? 1 : 0);
}

static const command_t *lookup(const sld_arg_t *name);

/* COMMAND [INFO [name ...]] | COUNT | DOCS [name ...]: DOCS has nothing to say. */
static void cmd_command(sld_client_t *c, const sld_arg_t *argv, size_t argc) {
    if (argc >= 2 && sld_arg_is(&argv[1], "COUNT")) {
        sld_reply_int(c->out, (int64_t)visible_commands(c));
        return;
    }
    if (argc >= 2 && sld_arg_is(&argv[1], "DOCS")) { /* a map of command -> docs: none */
        sld_reply_map(c->out, sld_proto(c), 0);
        return;
    }
    if (argc >= 2 && !sld_arg_is(&argv[1], "INFO")) { /* LIST ...: nothing to say */
        sld_reply_array(c->out, 0);
        return;
    }
    if (argc >= 3) { /* COMMAND INFO name ...: one entry each, null when unknown */
        sld_reply_array(c->out, argc - 2);
        for (size_t i = 2; i < argc; i++) {
            const command_t *cmd = lookup(&argv[i]);
            if (cmd == NULL || (cmd->test_only && !c->d->test_clock))
                sld_reply_nil(c->out, sld_proto(c));
            else
                reply_command_info(c, cmd);
        }
        return;
    }
    sld_reply_array(c->out, visible_commands(c));
    for (size_t i = 0; i < NCOMMANDS; i++)
        if (!table[i].test_only || c->d->test_clock)
            reply_command_info(c, &table[i]);
}

static void cmd_dbsize(sld_client_t *c, const sld_arg_t *argv, size_t argc) {
    (void)argv, (void)argc;
    sl_store_stats_t st;
    sld_reply_int(c->out, sl_store_stats(c->d->store, &st) == SL_OK ? (int64_t)st.states : 0);
}

/* Names differ in length more often than not: compare lengths first. */
static const command_t *lookup(const sld_arg_t *name) {
    for (size_t i = 0; i < NCOMMANDS; i++)
        if (table[i].name_len == name->len && sld_name_is(table[i].name, name->ptr, name->len))
            return &table[i];
    return NULL;
}

/* ---- MULTI / EXEC / DISCARD --------------------------------------------------------------- */

/* An error while queueing: the reply now, and EXEC will abort. */
static void tx_reject(sld_client_t *c) {
    if (c->tx)
        sld_tx_fail(c->tx);
}

/* What can be known wrong before anything is decided, checked when the
 * command is queued with the handler's own words: false after an error
 * reply. What depends on the store (a full parameter table, Redis down) is
 * an error inside EXEC's array instead, as in Redis. */
static bool queue_check(sld_client_t *c, const command_t *cmd, const sld_arg_t *argv, size_t argc) {
    if (cmd->run == cmd_cl_throttle || cmd->run == cmd_gcra) {
        sld_throttle_args_t a;
        const char *err = cmd->run == cmd_cl_throttle ? sld_throttle_parse(argv, argc, &a)
                                                      : sld_gcra_parse(argv, argc, &a);
        if (err)
            sld_reply_error(c->out, err);
        return err == NULL && key_ok(c, &a.key);
    }
    int64_t cost;
    const sl_policy_t *p;
    size_t index;
    if (cmd->run == cmd_sl_acquire || cmd->run == cmd_cl_acquire) {
        sld_reply_error(c->out, "ERR SL.ACQUIRE and CL.ACQUIRE cannot wait inside MULTI");
        return false;
    }
    if (cmd->run == cmd_sl_check || cmd->run == cmd_sl_peek)
        return decide_args(c, argv, argc, &cost, &p, &index);
    if (cmd->run == cmd_sl_reset)
        return reset_policy(c, argv, &index) != NULL;
    if (cmd->run == cmd_hello) {
        sld_hello_t h;
        char err[160];
        if (sld_hello_parse(argv, argc, &h, err, sizeof err) == NULL)
            return true;
        sld_reply_error(c->out, err);
        return false;
    }
    return true;
}

static void tx_queue(sld_client_t *c, const command_t *cmd, const sld_arg_t *argv, size_t argc) {
    if (!queue_check(c, cmd, argv, argc)) {
        tx_reject(c);
        return;
    }
    size_t max_bytes = c->rt->cfg->max_request_bytes;
    switch (sld_tx_add(c->tx, argv, argc, max_bytes)) {
    case SLD_TX_QUEUED:
    case SLD_TX_FAILED: /* Redis says QUEUED after an error too; EXEC aborts */
        sld_reply_simple(c->out, "QUEUED");
        break;
    case SLD_TX_TOO_MANY:
        sld_reply_errorf(c->out, "ERR transaction too long: at most %d commands between MULTI and "
                         "EXEC (it is discarded)", SLD_TX_MAX_COMMANDS);
        break;
    case SLD_TX_TOO_BIG:
        sld_reply_errorf(c->out, "ERR transaction too large: at most max_request_bytes (%zu) bytes "
                         "of arguments between MULTI and EXEC (it is discarded)", max_bytes);
        break;
    case SLD_TX_NO_MEMORY:
        sld_reply_error(c->out, "ERR out of memory (the transaction is discarded)");
        break;
    }
}

static void cmd_multi(sld_client_t *c, const sld_arg_t *argv, size_t argc) {
    (void)argv, (void)argc;
    if (c->tx) {
        sld_reply_error(c->out, "ERR MULTI calls can not be nested");
    } else if ((c->tx = sld_tx_new()) == NULL) {
        sld_reply_error(c->out, "ERR out of memory");
    } else {
        sld_reply_ok(c->out);
    }
}

static void run_queued(sld_client_t *c, const sld_arg_t *argv, size_t argc) {
    lookup(&argv[0])->run(c, argv, argc); /* found and its arity checked when queued */
}

/* Runs the queued commands in order, one reply each in one array. A reply
 * that comes later (the Redis store) takes its place in the reply queue as
 * any pipelined reply does, so it still lands inside the array, in order. */
static void cmd_exec(sld_client_t *c, const sld_arg_t *argv, size_t argc) {
    (void)argv, (void)argc;
    sld_tx_t *tx = c->tx;
    if (tx == NULL) {
        sld_reply_error(c->out, "ERR EXEC without MULTI");
        return;
    }
    c->tx = NULL; /* the commands run as commands, not queued again */
    if (tx->failed) {
        sld_reply_error(c->out, "EXECABORT Transaction discarded because of previous errors.");
    } else {
        sld_reply_array(c->out, tx->n);
        sld_tx_exec(c, tx, run_queued); /* no other client decides on its keys meanwhile */
    }
    sld_tx_free(tx);
}

static void cmd_discard(sld_client_t *c, const sld_arg_t *argv, size_t argc) {
    (void)argv, (void)argc;
    if (c->tx == NULL) {
        sld_reply_error(c->out, "ERR DISCARD without MULTI");
        return;
    }
    sld_tx_free(c->tx);
    c->tx = NULL;
    sld_reply_ok(c->out);
}

/* WATCH / UNWATCH: sluice keys are limiter states, changed by every decision,
 * and EXEC never fails for a change; a client that needs WATCH's optimistic
 * check cannot get it here, so say so rather than pretend. */
static void cmd_watch(sld_client_t *c, const sld_arg_t *argv, size_t argc) {
    (void)argc;
    sld_reply_errorf(c->out, "ERR %s is not supported: sluice has no keys to watch; MULTI/EXEC run "
                     "their commands together without it", sld_arg_is(&argv[0], "WATCH") ? "WATCH" : "UNWATCH");
}

/* Inside MULTI these act at once; every other command is queued. */
static bool acts_in_multi(const command_t *cmd) {
    return cmd->run == cmd_exec || cmd->run == cmd_discard || cmd->run == cmd_multi ||
           cmd->run == cmd_watch || cmd->run == cmd_quit;
}

/* ---- pipelined decisions, decided together ----------------------------------------------------- */

/* Holds a decision command in b when it would be answered now with no
 * error; on a store that answers later, decides it at once from what was
 * parsed here (not parsed twice). false: nothing said, nothing held, it goes
 * the ordinary way. */
static bool batch_add(sld_client_t *c, sld_resp_batch_t *b, const command_t *cmd,
                      const sld_arg_t *argv, size_t argc) {
    const sl_policy_t *p;
    sld_origin_t origin;
    const sld_arg_t *key;
    uint64_t cost;
    unsigned flags = 0;
    reply_kind_t kind;
    bool defers;
    sld_throttle_args_t a;
    if (cmd->run == cmd_sl_check || cmd->run == cmd_sl_peek) {
        int64_t n;
        size_t index = 0;
        if (!decide_args_quiet(c, argv, argc, &n, &p, &index, true))
            return false;
        origin = (sld_origin_t){.rt = c->rt, .index = index,
                                .slot = sld_policies_slot(c->rt->policies, index)};
        key = &argv[2];
        cost = (uint64_t)n;
        flags = cmd->run == cmd_sl_peek ? SL_DECIDE_PEEK : 0;
        kind = REPLY_NATIVE;
        defers = sld_engine_defers(c->d->engine, p);
    } else if (cmd->run == cmd_cl_throttle || cmd->run == cmd_gcra) {
        if ((cmd->run == cmd_cl_throttle ? sld_throttle_parse(argv, argc, &a)
                                         : sld_gcra_parse(argv, argc, &a)) != NULL ||
            !key_ok_quiet(c, &a.key, true))
            return false;
        sld_resp_last_set_t *last = b->last_set;
        if (last->p && last->max_burst == a.max_burst && last->interval_ns == a.interval_ns) {
            p = last->p;
            origin = throttle_origin(c, last->local);
            defers = last->defers;
        } else if (throttle_set(c, &a, true, &p, &origin)) {
            defers = sld_engine_defers(c->d->engine, p);
            *last = (sld_resp_last_set_t){.max_burst = a.max_burst, .interval_ns = a.interval_ns,
                                          .p = p, .local = origin.local, .defers = defers};
        } else {
            return false;
        }
        key = &a.key;
        cost = (uint64_t)a.quantity;
        kind = REPLY_THROTTLE;
    } else {
        return false;
    }
    if (defers) { /* Redis pipelines them already, in their places */
        if (b->n)
            sld_command_flush(c, b);
        decide_and_reply(c, kind, &origin, p, key, cost, flags);
        return true;
    }
    b->reqs[b->n] = (sld_request_t){.origin = origin, .p = p, .key = key->ptr, .key_len = key->len,
                                    .cost = cost, .flags = flags};
    b->kinds[b->n++] = (uint8_t)kind;
    return true;
}

void sld_command_flush(sld_client_t *c, sld_resp_batch_t *b) {
    size_t n = b->n;
    if (n == 0)
        return;
    b->n = 0;
    sl_decision_t out[SLD_RESP_BATCH_MAX];
    int rcs[SLD_RESP_BATCH_MAX];
    if (n == 1) { /* a command alone in its read: the single call, no batch to set up */
        out[0] = (sl_decision_t){0};
        rcs[0] = sld_engine_decide(c->d->engine, c->worker, &b->reqs[0], &out[0], NULL, NULL, NULL);
    } else {
        sld_engine_decide_batch(c->d->engine, c->worker, b->reqs, n, out, rcs, NULL, NULL);
    }
    for (size_t i = 0; i < n; i++)
        write_reply(c->out, (reply_kind_t)b->kinds[i], rcs[i], &out[i]);
}

static bool arity_ok(const command_t *cmd, size_t argc) {
    return cmd->arity > 0 ? argc == (size_t)cmd->arity : argc >= (size_t)-cmd->arity;
}

void sld_command_batched(sld_client_t *c, sld_resp_batch_t *b, const sld_arg_t *argv, size_t argc) {
    if (b->n == SLD_RESP_BATCH_MAX)
        sld_command_flush(c, b);
    /* outside MULTI and past the NOAUTH gate, the checks sld_command makes
     * before a handler say nothing: found once here, run here */
    const command_t *cmd = NULL;
    if (b->password < 0)
        b->password = sld_resp_requirepass(c->rt->cfg) != NULL;
    if (c->tx == NULL && (c->authed || !b->password)) {
        cmd = lookup(&argv[0]);
        if (cmd && (!arity_ok(cmd, argc) || (cmd->test_only && !c->d->test_clock)))
            cmd = NULL;
        if (cmd && batch_add(c, b, cmd, argv, argc)) {
            sld_count(&c->counters->commands);
            return;
        }
    }
    if (b->n)
        sld_command_flush(c, b);
    if (cmd == NULL) {
        sld_command(c, argv, argc);
        return;
    }
    sld_count(&c->counters->commands);
    cmd->run(c, argv, argc);
}

void sld_command(sld_client_t *c, const sld_arg_t *argv, size_t argc) {
    sld_count(&c->counters->commands);
    if (!sld_auth_gate(c, argv, argc))
        return;
    const command_t *cmd = lookup(&argv[0]);
    if (cmd == NULL || (cmd->test_only && !c->d->test_clock)) {
        sld_reply_errorf(c->out, "ERR unknown command '%.*s', with args beginning with: %s",
                         (int)(argv[0].len > 64 ? 64 : argv[0].len), argv[0].ptr,
                         argc > 1 ? "..." : "");
        tx_reject(c);
        return;
    }
    if ((cmd->arity > 0 && argc != (size_t)cmd->arity) ||
        (cmd->arity < 0 && argc < (size_t)-cmd->arity)) {
        sld_reply_errorf(c->out, "ERR wrong number of arguments for '%s' command", cmd->name);
        tx_reject(c);
        return;
    }
    if (c->tx && !acts_in_multi(cmd))
        tx_queue(c, cmd, argv, argc);
    else
        cmd->run(c, argv, argc);
}
