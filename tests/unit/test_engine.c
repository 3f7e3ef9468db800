/* test_engine.c -- the decision engine (src/server/engine/engine.c) over a
 * fake store kind: a memory limiter on the fake clock that answers now, or
 * keeps its jobs and answers when the test says (as Redis would), or keeps
 * a batch and decides it at the flush. Every callback must come exactly
 * once, and every decision be counted once. A group reaches the kind's
 * hooks as given. */
#include "rig.h"
#include "server/engine/engine.h"

/* ---- the fake store kind ------------------------------------------------------------------------ */

#define MAX_HELD 16

typedef struct fake {
    rig_t *rig;
    bool later;             /* keep jobs until fake_answer() */
    bool batching;          /* between batch_begin and batch_flush: keep, decide at the flush */
    int fail;               /* an error to answer now (0: none) */
    int fail_later;         /* an error to answer later */
    sld_job_t *held[MAX_HELD];
    bool held_reset[MAX_HELD];
    size_t nheld;
    int begun, flushed;
    int grouped, ungrouped;   /* group_begin / group_end calls */
    size_t group_n;           /* what the last group_begin was given */
    bool group_every;
    uint32_t group_worker;
    const char *group_key;
} fake_t;

static int fake_decide(void *ctx, uint32_t worker, const sld_request_t *r, sl_decision_t *out,
                       sl_limit_report_t *limits, sld_job_t *job) {
    (void)worker;
    fake_t *f = ctx;
    if (f->fail)
        return f->fail;
    if (job && (f->later || f->batching)) {
        assert_true(f->nheld < MAX_HELD);
        sld_job_t *kept = sld_job_keep(job);
        assert_non_null(kept);
        f->held_reset[f->nheld] = false;
        f->held[f->nheld++] = kept;
        return SLD_PENDING;
    }
    return sl_decide(f->rig->limiter, r->p, r->key, r->key_len, r->cost, r->flags, out, limits);
}

static int fake_reset(void *ctx, uint32_t worker, const sld_request_t *r, sld_job_t *job) {
    (void)worker;
    fake_t *f = ctx;
    if (f->fail)
        return f->fail;
    if (job && f->later) {
        f->held_reset[f->nheld] = true;
        f->held[f->nheld++] = sld_job_keep(job);
        return SLD_PENDING;
    }
    return sl_reset(f->rig->limiter, r->p, r->key, r->key_len);
}

/* Answers every held job, in order, at the fake clock's instant. */
static void fake_answer(fake_t *f) {
    size_t n = f->nheld;
    f->nheld = 0;
    for (size_t i = 0; i < n; i++) {
        const sld_request_t *r = sld_job_request(f->held[i]);
        if (f->held_reset[i]) {
            int rc = f->fail_later ? f->fail_later : sl_reset(f->rig->limiter, r->p, r->key, r->key_len);
            sld_job_done(f->held[i], rc, NULL, NULL);
            continue;
        }
        sl_decision_t d;
        sl_limit_report_t lr[SL_MAX_LIMITS];
        int rc = f->fail_later ? f->fail_later
                               : sl_decide(f->rig->limiter, r->p, r->key, r->key_len, r->cost, r->flags, &d, lr);
        sld_job_done(f->held[i], rc, rc == SL_OK ? &d : NULL, rc == SL_OK ? lr : NULL);
    }
}

static bool fake_defers(void *ctx, const sl_policy_t *p) {
    (void)p;
    return ((fake_t *)ctx)->later;
}

static void fake_begin(void *ctx, uint32_t worker) {
    (void)worker;
    fake_t *f = ctx;
    f->begun++;
    f->batching = true;
}

static void fake_flush(void *ctx, uint32_t worker) {
    (void)worker;
    fake_t *f = ctx;
    f->flushed++;
    f->batching = false;
    fake_answer(f); /* one instant for the whole batch */
}

static void fake_group_begin(void *ctx, uint32_t worker, const sld_request_t *reqs, size_t n,
                             bool every_key) {
    fake_t *f = ctx;
    f->grouped++;
    f->group_n = n;
    f->group_every = every_key;
    f->group_worker = worker;
    f->group_key = n ? reqs[0].key : NULL;
}

static void fake_group_end(void *ctx, uint32_t worker) {
    (void)worker;
    ((fake_t *)ctx)->ungrouped++;
}

static const sld_store_kind_t fake_kind = {
    .name = "fake",
    .decide = fake_decide,
    .reset = fake_reset,
    .defers = fake_defers,
    .batch_begin = fake_begin,
    .batch_flush = fake_flush,
    .group_begin = fake_group_begin,
    .group_end = fake_group_end,
};

/* A kind that decides several at once: counts its calls, decides in order. */
static int batch_calls;
static size_t batch_sizes;

static void fake_decide_batch(void *ctx, uint32_t worker, const sld_request_t *reqs, size_t n,
                              sl_decision_t *out, int *rcs) {
    fake_t *f = ctx;
    batch_calls++;
    batch_sizes += n;
    for (size_t i = 0; i < n; i++)
        rcs[i] = fake_decide(f, worker, &reqs[i], &out[i], NULL, NULL);
}

static const sld_store_kind_t batch_kind = {
    .name = "batch",
    .decide = fake_decide,
    .reset = fake_reset,
    .defers = fake_defers,
    .decide_batch = fake_decide_batch,
};

/* The bare minimum: the engine's defaults stand in for the rest. */
static const sld_store_kind_t bare_kind = {.name = "bare", .decide = fake_decide, .reset = fake_reset};

/* ---- the engine's hooks and the caller's callback ---------------------------------------------- */

typedef struct counts {
    int decisions, errors, allowed, denied;
    uint32_t last_slot;
    int observed;           /* the observe hook's calls: one per decision, as account's */
    char keys[64];          /* the keys it saw, in order */
} counts_t;

static void observe(void *ctx, uint32_t worker, const sld_request_t *r, int rc,
                    const sl_decision_t *out) {
    (void)worker, (void)rc, (void)out;
    counts_t *c = ctx;
    c->observed++;
    size_t n = strlen(c->keys);
    if (n + r->key_len < sizeof c->keys) {
        memcpy(c->keys + n, r->key, r->key_len);
        c->keys[n + r->key_len] = '\0';
    }
}

static void count(void *ctx, uint32_t worker, uint32_t slot, int rc, unsigned flags, const sl_decision_t *out) {
    (void)worker, (void)flags;
    counts_t *c = ctx;
    c->decisions++;
    c->last_slot = slot;
    if (rc != SL_OK)
        c->errors++;
    else if (out->allowed)
        c->allowed++;
    else
        c->denied++;
}

typedef struct answer {
    int calls;
    int rc;
    bool allowed;
    bool had_decision;
    char key[32];           /* the key as the store saw it when it answered */
} answer_t;

static void on_answer(void *arg, int rc, const sl_decision_t *out, const sl_limit_report_t *limits) {
    answer_t *a = arg;
    a->calls++;
    a->rc = rc;
    a->had_decision = out != NULL;
    if (out) {
        a->allowed = out->allowed;
        assert_non_null(limits);
    }
}

typedef struct fixture {
    fake_t fake;
    counts_t counts;
    sld_engine_t *e;
} fixture_t;

static fixture_t *fixture(const sld_store_kind_t *kind) {
    fixture_t *x = calloc(1, sizeof *x);
    assert_non_null(x);
    /* 2 per second, no burst beyond */
    x->fake.rig = rig_one((sl_limit_t){.algorithm = SL_FIXED_WINDOW, .limit = 2, .period = SEC(1)});
    x->fake.rig->now = SEC(100);
    sld_engine_hooks_t hooks = {.ctx = &x->counts, .account = count, .observe = observe};
    assert_int_equal(sld_engine_new(kind, &x->fake, &hooks, &x->e), SL_OK);
    return x;
}

static void fixture_free(fixture_t *x) {
    assert_int_equal(x->fake.nheld, 0);
    assert_int_equal(x->counts.observed, x->counts.decisions);
    sld_engine_free(x->e);
    rig_free(x->fake.rig);
    free(x);
}

static sld_request_t request(fixture_t *x, const char *key) {
    return (sld_request_t){.origin = {.slot = 7}, .p = x->fake.rig->policy, .key = key,
                           .key_len = strlen(key), .cost = 1};
}

/* ---- tests ---------------------------------------------------------------------------------------- */

static void decided_now(void **state) {
    (void)state;
    fixture_t *x = fixture(&fake_kind);
    answer_t a = {0};
    sl_decision_t d;
    sl_limit_report_t lr[SL_MAX_LIMITS];
    sld_request_t r = request(x, "alice");
    assert_false(sld_engine_defers(x->e, r.p));
    assert_int_equal(sld_engine_decide(x->e, 0, &r, &d, lr, on_answer, &a), SL_OK);
    assert_true(d.allowed);
    assert_int_equal(d.remaining, 1);
    assert_int_equal(a.calls, 0); /* answered now: the callback is never called */
    assert_int_equal(x->counts.decisions, 1);
    assert_int_equal(x->counts.allowed, 1);
    assert_int_equal(x->counts.last_slot, 7);
    fixture_free(x);
}

static void decided_later(void **state) {
    (void)state;
    fixture_t *x = fixture(&fake_kind);
    x->fake.later = true;
    answer_t a = {0};
    sl_decision_t d;
    char key[8] = "bob";
    sld_request_t r = request(x, key);
    assert_true(sld_engine_defers(x->e, r.p));
    assert_int_equal(sld_engine_decide(x->e, 0, &r, &d, NULL, on_answer, &a), SLD_PENDING);
    strcpy(key, "XXX"); /* the caller's key need not outlive the call */
    assert_int_equal(a.calls, 0);
    assert_int_equal(x->counts.decisions, 0);
    assert_memory_equal(sld_job_request(x->fake.held[0])->key, "bob", 3);
    assert_ptr_equal(sld_job_store(x->fake.held[0]), &x->fake);
    fake_answer(&x->fake);
    assert_int_equal(a.calls, 1);
    assert_int_equal(a.rc, SL_OK);
    assert_true(a.allowed);
    assert_int_equal(x->counts.decisions, 1);
    fake_answer(&x->fake); /* nothing held any more: no second call */
    assert_int_equal(a.calls, 1);
    fixture_free(x);
}

static void cannot_wait_answers_now(void **state) {
    (void)state;
    fixture_t *x = fixture(&fake_kind);
    x->fake.later = true;
    sl_decision_t d;
    sld_request_t r = request(x, "carol");
    /* no callback: the store gets no job and must answer now */
    assert_int_equal(sld_engine_decide(x->e, 0, &r, &d, NULL, NULL, NULL), SL_OK);
    assert_true(d.allowed);
    assert_int_equal(x->fake.nheld, 0);
    assert_int_equal(x->counts.decisions, 1);
    fixture_free(x);
}

static void dropped_job_is_never_answered(void **state) {
    (void)state;
    fixture_t *x = fixture(&fake_kind);
    x->fake.later = true;
    answer_t a = {0};
    sl_decision_t d;
    sld_request_t r = request(x, "heidi");
    assert_int_equal(sld_engine_decide(x->e, 0, &r, &d, NULL, on_answer, &a), SLD_PENDING);
    sld_job_drop(x->fake.held[--x->fake.nheld]); /* as a store whose send failed after keeping it */
    assert_int_equal(a.calls, 0);
    fixture_free(x);
}

static void batch(void **state) {
    (void)state;
    fixture_t *x = fixture(&fake_kind);
    answer_t a[3] = {{0}};
    sl_decision_t d;
    sld_engine_batch_begin(x->e, 1);
    for (int i = 0; i < 3; i++) {
        sld_request_t r = request(x, "dave");
        assert_int_equal(sld_engine_decide(x->e, 1, &r, &d, NULL, on_answer, &a[i]), SLD_PENDING);
    }
    assert_int_equal(x->fake.begun, 1);
    assert_int_equal(a[0].calls + a[1].calls + a[2].calls, 0);
    sld_engine_batch_flush(x->e, 1);
    assert_int_equal(x->fake.flushed, 1);
    for (int i = 0; i < 3; i++)
        assert_int_equal(a[i].calls, 1);
    /* in arrival order, at one instant: two pass, the third is over 2/s */
    assert_true(a[0].allowed);
    assert_true(a[1].allowed);
    assert_false(a[2].allowed);
    assert_int_equal(x->counts.decisions, 3);
    assert_int_equal(x->counts.allowed, 2);
    assert_int_equal(x->counts.denied, 1);
    fixture_free(x);
}

static void error_now(void **state) {
    (void)state;
    fixture_t *x = fixture(&fake_kind);
    x->fake.fail = SL_EIO;
    answer_t a = {0};
    sl_decision_t d;
    sld_request_t r = request(x, "erin");
    assert_int_equal(sld_engine_decide(x->e, 0, &r, &d, NULL, on_answer, &a), SL_EIO);
    assert_int_equal(a.calls, 0); /* an error returned: the callback is never called */
    assert_int_equal(x->counts.decisions, 1);
    assert_int_equal(x->counts.errors, 1);
    fixture_free(x);
}

static void error_later(void **state) {
    (void)state;
    fixture_t *x = fixture(&fake_kind);
    x->fake.later = true;
    answer_t a = {0};
    sl_decision_t d;
    sld_request_t r = request(x, "frank");
    assert_int_equal(sld_engine_decide(x->e, 0, &r, &d, NULL, on_answer, &a), SLD_PENDING);
    x->fake.fail_later = SL_EIO;
    fake_answer(&x->fake);
    assert_int_equal(a.calls, 1);
    assert_int_equal(a.rc, SL_EIO);
    assert_false(a.had_decision);
    assert_int_equal(x->counts.errors, 1);
    fixture_free(x);
}

static void reset_now_and_later(void **state) {
    (void)state;
    fixture_t *x = fixture(&fake_kind);
    sl_decision_t d;
    sld_request_t r = request(x, "grace");
    for (int i = 0; i < 3; i++)
        sld_engine_decide(x->e, 0, &r, &d, NULL, NULL, NULL);
    assert_false(d.allowed);
    assert_int_equal(sld_engine_reset(x->e, 0, &r, NULL, NULL), SL_OK);
    assert_int_equal(sld_engine_decide(x->e, 0, &r, &d, NULL, NULL, NULL), SL_OK);
    assert_true(d.allowed);
    int counted = x->counts.decisions;

    x->fake.later = true;
    answer_t a = {0};
    assert_int_equal(sld_engine_reset(x->e, 0, &r, on_answer, &a), SLD_PENDING);
    assert_int_equal(a.calls, 0);
    fake_answer(&x->fake);
    assert_int_equal(a.calls, 1);
    assert_int_equal(a.rc, SL_OK);
    assert_false(a.had_decision); /* a reset has no decision */
    assert_int_equal(x->counts.decisions, counted); /* and is not counted as one */
    fixture_free(x);
}

static void on_detached(void *arg) { ++*(int *)arg; }

static void defaults_of_a_bare_kind(void **state) {
    (void)state;
    fixture_t *x = fixture(&bare_kind);
    const char *why = NULL;
    assert_false(sld_engine_defers(x->e, x->fake.rig->policy));
    assert_true(sld_engine_supports(x->e, x->fake.rig->policy, &why));
    sld_engine_batch_begin(x->e, 0); /* no hooks: nothing happens */
    sld_engine_batch_flush(x->e, 0);
    sld_store_status_t st;
    sld_engine_status(x->e, &st);
    assert_true(st.up);
    assert_false(st.shared);
    assert_string_equal(st.describe, "memory");
    assert_int_equal(sld_engine_share_rules(x->e, 0, "p", "{}", 2, NULL, NULL), SL_ENOTSUP);
    int detached = 0;
    assert_int_equal(sld_engine_attach(x->e, 0, NULL), SL_OK);
    sld_engine_detach(x->e, 0, on_detached, &detached); /* nothing held: done at once */
    assert_int_equal(detached, 1);
    sld_engine_t *e;
    assert_int_equal(sld_engine_new(&(sld_store_kind_t){.name = "none"}, NULL, NULL, &e), SL_EINVAL);
    fixture_free(x);
}

/* A group goes to the kind's hooks as given; a kind without them runs
 * the calls in between as plain calls. */
static void group_reaches_the_kind(void **state) {
    (void)state;
    fixture_t *x = fixture(&fake_kind);
    sld_request_t reqs[2] = {{.p = x->fake.rig->policy, .key = "a", .key_len = 1},
                             {.p = x->fake.rig->policy, .key = "b", .key_len = 1}};
    sld_engine_group_begin(x->e, 3, reqs, 2, false);
    assert_int_equal(x->fake.grouped, 1);
    assert_int_equal(x->fake.group_n, 2);
    assert_false(x->fake.group_every);
    assert_int_equal(x->fake.group_worker, 3);
    assert_ptr_equal(x->fake.group_key, reqs[0].key);
    sl_decision_t d;
    assert_int_equal(sld_engine_decide(x->e, 3, &reqs[0], &d, NULL, NULL, NULL), SL_OK);
    assert_int_equal(x->fake.ungrouped, 0);
    sld_engine_group_end(x->e, 3);
    assert_int_equal(x->fake.ungrouped, 1);
    sld_engine_group_begin(x->e, 0, NULL, 0, true);
    assert_true(x->fake.group_every);
    sld_engine_group_end(x->e, 0);
    assert_int_equal(x->fake.grouped, 2);
    fixture_free(x);
    x = fixture(&bare_kind);
    reqs[0].p = reqs[1].p = x->fake.rig->policy; /* the first fixture's is freed */
    sld_engine_group_begin(x->e, 0, reqs, 2, false); /* no hooks: nothing happens */
    assert_int_equal(sld_engine_decide(x->e, 0, &reqs[1], &d, NULL, NULL, NULL), SL_OK);
    sld_engine_group_end(x->e, 0);
    assert_int_equal(x->fake.grouped, 0);
    fixture_free(x);
}

/* sld_engine_decide_batch: with the kind's decide_batch, in one call; without
 * it, one by one; either way the same decisions, in order, each counted. */
static void decide_batch_as_one_by_one(void **state) {
    (void)state;
    const char *keys[6] = {"a", "b", "a", "a", "c", "b"};
    bool want[6] = {true, true, true, false, true, true}; /* 2 per second */
    const sld_store_kind_t *kinds[2] = {&batch_kind, &bare_kind};
    for (int k = 0; k < 2; k++) {
        fixture_t *x = fixture(kinds[k]);
        sld_request_t reqs[6];
        for (int i = 0; i < 6; i++)
            reqs[i] = request(x, keys[i]);
        sl_decision_t out[6];
        int rcs[6];
        batch_calls = 0, batch_sizes = 0;
        sld_engine_decide_batch(x->e, 0, reqs, 6, out, rcs, NULL, NULL);
        for (int i = 0; i < 6; i++) {
            assert_int_equal(rcs[i], SL_OK);
            assert_int_equal(out[i].allowed, want[i]);
        }
        assert_int_equal(batch_calls, k == 0 ? 1 : 0);
        assert_int_equal(batch_sizes, k == 0 ? 6 : 0);
        assert_int_equal(x->counts.decisions, 6);
        assert_int_equal(x->counts.denied, 1);
        assert_int_equal(x->counts.last_slot, 7);
        assert_string_equal(x->counts.keys, "abaacb"); /* observe saw each request's key */
        fixture_free(x);
    }
}

/* A kind that answers later gets its requests one by one, each with its
 * own callback argument; one that can wait for nobody (fn NULL) answers
 * all of them now through decide_batch. */
static void decide_batch_defers_one_by_one(void **state) {
    (void)state;
    fixture_t *x = fixture(&batch_kind);
    x->fake.later = true;
    sld_request_t reqs[3] = {request(x, "a"), request(x, "a"), request(x, "a")};
    sl_decision_t out[3];
    int rcs[3];
    answer_t a[3] = {{0}};
    void *args[3] = {&a[0], &a[1], &a[2]};
    batch_calls = 0;
    sld_engine_decide_batch(x->e, 0, reqs, 3, out, rcs, on_answer, args);
    assert_int_equal(batch_calls, 0);
    for (int i = 0; i < 3; i++)
        assert_int_equal(rcs[i], SLD_PENDING);
    assert_int_equal(x->counts.decisions, 0);
    fake_answer(&x->fake);
    for (int i = 0; i < 3; i++) {
        assert_int_equal(a[i].calls, 1);
        assert_int_equal(a[i].allowed, i < 2);
    }
    assert_int_equal(x->counts.decisions, 3);

    x->fake.later = false; /* fake_decide answers now when job is NULL */
    x->fake.rig->now += SEC(1);
    sld_engine_decide_batch(x->e, 0, reqs, 3, out, rcs, NULL, NULL);
    assert_int_equal(batch_calls, 1);
    assert_true(out[0].allowed && out[1].allowed && !out[2].allowed);
    assert_int_equal(x->counts.decisions, 6);
    fixture_free(x);
}

int main(void) {
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(decided_now),
        cmocka_unit_test(decided_later),
        cmocka_unit_test(cannot_wait_answers_now),
        cmocka_unit_test(dropped_job_is_never_answered),
        cmocka_unit_test(batch),
        cmocka_unit_test(decide_batch_as_one_by_one),
        cmocka_unit_test(decide_batch_defers_one_by_one),
        cmocka_unit_test(error_now),
        cmocka_unit_test(error_later),
        cmocka_unit_test(reset_now_and_later),
        cmocka_unit_test(defaults_of_a_bare_kind),
        cmocka_unit_test(group_reaches_the_kind),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
