/* test_charge_journal.c -- write-back mode's journal of charges
 * (src/server/engine/charge_journal.c), as the memory store fills it and
 * as the sync reports to it, without Redis: charges summed per limit, a
 * round taken and given back, a lost answer not counted twice when a
 * conflict shows it landed, resets, reloads, idle entries, the share a key
 * may charge before a sync. */
#include "rig.h"
#include "server/engine/charge_journal.h"
#include "store/journal.h"

#define KEY "k"
#define INTERVAL MS(10)

typedef struct fx {
    rig_t *rig;
    sld_charge_journal_t *j;
} fx_t;

static fx_t *fx_new(uint32_t nodes) {
    fx_t *f = calloc(1, sizeof *f);
    assert_non_null(f);
    sl_limit_t limits[2] = {{.algorithm = SL_FIXED_WINDOW, .limit = 100, .period = SEC(1)},
                            {.algorithm = SL_GCRA, .limit = 1000, .period = SEC(60), .burst = 50}};
    f->rig = rig_limits(limits, 2, SL_MODE_HARD);
    f->rig->now = SEC(1000);
    sl__policy_write_back(f->rig->policy, nodes, INTERVAL);
    assert_int_equal(sld_charge_journal_new(INTERVAL, &f->j), SL_OK);
    sld_charge_journal_attach(f->j, f->rig->store);
    return f;
}

static void fx_free(fx_t *f) {
    sld_charge_journal_detach(f->rig->store);
    sld_charge_journal_free(f->j);
    rig_free(f->rig);
    free(f);
}

static void charge(fx_t *f, uint64_t cost, int times) {
    for (int i = 0; i < times; i++)
        assert_true(rig_check_cost(f->rig, KEY, cost).allowed);
}

static sld_journal_entry_t *take_one(fx_t *f) {
    sld_journal_entry_t *round = NULL;
    assert_int_equal(sld_charge_journal_take(f->j, 100, &round), 1);
    assert_non_null(round);
    assert_null(round->round_next);
    return round;
}

static sld_charge_journal_stats_t stats(fx_t *f) {
    sld_charge_journal_stats_t s;
    sld_charge_journal_stats(f->j, &s);
    return s;
}

static void charges_are_summed_per_limit(void **state) {
    (void)state;
    fx_t *f = fx_new(3);
    charge(f, 1, 3);
    charge(f, 2, 1);
    sld_journal_entry_t *e = sld_charge_journal_find(f->j, f->rig->policy, KEY, 1);
    assert_non_null(e);
    assert_int_equal(e->nlimits, 2);
    assert_int_equal(e->pending[0], 5);
    assert_int_equal(e->pending[1], 5);
    assert_int_equal(e->pending_since, SEC(1000));
    assert_int_equal(stats(f).keys, 1);
    assert_int_equal(stats(f).unsynced, 1);
    /* a round takes what is pending: it is sent now, still unsynced */
    assert_ptr_equal(take_one(f), e);
    assert_int_equal(e->sent[0], 5);
    assert_int_equal(e->pending[0], 0);
    assert_int_equal(e->sent_since, SEC(1000));
    assert_true(e->in_flight);
    assert_int_equal(stats(f).unsynced, 1);
    /* nothing else is dirty: the next round takes nothing */
    sld_journal_entry_t *round = NULL;
    assert_int_equal(sld_charge_journal_take(f->j, 100, &round), 0);
    sld_charge_journal_written(f->j, e);
    assert_int_equal(e->sent[0], 0);
    assert_false(e->in_flight);
    assert_int_equal(stats(f).unsynced, 0);
    assert_int_equal(stats(f).dropped, 0);
    fx_free(f);
}

/* A sync that did not land gives its charges back to the next round, with
 * the older of the two start times. */
static void given_back_charges_go_next_round(void **state) {
    (void)state;
    fx_t *f = fx_new(3);
    charge(f, 1, 3);
    sld_journal_entry_t *e = take_one(f);
    f->rig->now += MS(5);
    charge(f, 1, 2); /* while the sync is out */
    sld_journal_entry_t *round = NULL;
    assert_int_equal(sld_charge_journal_take(f->j, 100, &round), 0); /* in flight: it waits */
    sld_charge_journal_give_back(f->j, e);
    assert_int_equal(e->pending[0], 5);
    assert_int_equal(e->sent[0], 0);
    assert_int_equal(e->pending_since, SEC(1000));
    assert_ptr_equal(take_one(f), e);
    assert_int_equal(e->sent[1], 5);
    fx_free(f);
}

/* A sync whose answer was lost may have been written. When a later
 * compare-and-set loses to exactly that write, its charges are in Redis
 * already and are not sent again; a conflict with any other write sends
 * them all again. */
static void a_lost_answer_is_not_counted_twice(void **state) {
    (void)state;
    fx_t *f = fx_new(3);
    const unsigned char lost_version[SLD_JOURNAL_VERSION_BYTES] = "lost-v1";
    const unsigned char other[SLD_JOURNAL_VERSION_BYTES + 3] = "other-v1xyz";
    unsigned char landed[SLD_JOURNAL_VERSION_BYTES + 3];
    memcpy(landed, lost_version, SLD_JOURNAL_VERSION_BYTES);
    memcpy(landed + SLD_JOURNAL_VERSION_BYTES, "xyz", 3);

    charge(f, 1, 3);
    sld_journal_entry_t *e = take_one(f);
    sld_charge_journal_lost(f->j, e, lost_version);
    assert_int_equal(e->ndoubt, 1);
    assert_int_equal(e->doubt[0], 3);
    assert_int_equal(e->pending[0], 3); /* given back */
    assert_false(e->in_flight);
    charge(f, 1, 1);
    assert_ptr_equal(take_one(f), e);
    assert_int_equal(e->sent[0], 4);
    /* the conflict's answer is the lost write: 3 of the 4 are in Redis */
    assert_true(sld_charge_journal_settle(f->j, e, landed, sizeof landed));
    assert_int_equal(e->sent[0], 1);
    assert_int_equal(e->sent[1], 1);
    assert_int_equal(e->ndoubt, 0);

    /* lost again, then another daemon's write: everything goes again */
    sld_charge_journal_lost(f->j, e, lost_version);
    assert_ptr_equal(take_one(f), e);
    assert_int_equal(e->sent[0], 1);
    assert_false(sld_charge_journal_settle(f->j, e, other, sizeof other));
    assert_int_equal(e->sent[0], 1);
    assert_int_equal(e->ndoubt, 0);
    /* an answer too short to hold a version settles nothing */
    sld_charge_journal_lost(f->j, e, lost_version);
    assert_ptr_equal(take_one(f), e);
    assert_false(sld_charge_journal_settle(f->j, e, lost_version, 3));
    assert_int_equal(e->sent[0], 1);
    fx_free(f);
}

/* Several lost answers in a row: each is remembered (up to a bound), the
 * doubt is what the first carried (the later ones carried it and more). */
static void lost_answers_are_remembered(void **state) {
    (void)state;
    fx_t *f = fx_new(3);
    unsigned char v[SLD_JOURNAL_VERSION_BYTES] = "ver-0";
    charge(f, 1, 2);
    for (int k = 0; k < SLD_JOURNAL_MAX_DOUBTS + 2; k++) {
        sld_journal_entry_t *e = take_one(f);
        v[4] = (unsigned char)('0' + k);
        sld_charge_journal_lost(f->j, e, v);
        assert_int_equal(e->doubt[0], 2);
        assert_int_equal(e->ndoubt, k < SLD_JOURNAL_MAX_DOUBTS ? k + 1 : SLD_JOURNAL_MAX_DOUBTS);
        charge(f, 1, 1);
    }
    sld_journal_entry_t *e = take_one(f);
    unsigned char second[SLD_JOURNAL_VERSION_BYTES] = "ver-1";
    assert_true(sld_charge_journal_settle(f->j, e, second, sizeof second));
    assert_int_equal(e->sent[0], 2 + SLD_JOURNAL_MAX_DOUBTS + 2 - 2);
    fx_free(f);
}

/* SL.RESET: what is pending goes at once; what is in flight is dropped when
 * its answer comes, and Redis's copy is to be forgotten. */
static void a_reset_drops_what_the_key_charged(void **state) {
    (void)state;
    fx_t *f = fx_new(3);
    charge(f, 1, 3);
    sld_journal_entry_t *e = take_one(f);
    e->known = true;
    charge(f, 1, 2);
    sld_charge_journal_forget(f->j, f->rig->policy, KEY, 1);
    assert_int_equal(e->pending[0], 0);
    assert_true(e->reset);
    assert_true(sld_charge_journal_reset_meanwhile(f->j, e));
    assert_int_equal(e->sent[0], 0);
    assert_false(e->known);
    assert_false(e->in_flight);
    assert_false(sld_charge_journal_reset_meanwhile(f->j, e));
    /* a reset seen when the next round is prepared: nothing is carried */
    charge(f, 1, 1);
    assert_ptr_equal(take_one(f), e);
    sld_charge_journal_forget(f->j, f->rig->policy, KEY, 1);
    uint64_t sent[SL_MAX_LIMITS] = {0};
    sl_usec_t since = 7;
    assert_true(sld_charge_journal_sending(f->j, e, f->rig->policy, sent, &since));
    assert_int_equal(sent[0], 0);
    assert_int_equal(since, 0);
    assert_false(e->reset);
    /* and without a reset, what the round took */
    sld_charge_journal_written(f->j, e);
    charge(f, 3, 1);
    assert_ptr_equal(take_one(f), e);
    assert_false(sld_charge_journal_sending(f->j, e, f->rig->policy, sent, &since));
    assert_int_equal(sent[0], 3);
    assert_int_equal(sent[1], 3);
    assert_int_equal(since, SEC(1000));
    fx_free(f);
}

/* A policy reloaded with its limits in another order, one removed: the
 * counts follow the limits' ids, the removed limit's charges are dropped. */
static void counts_follow_a_reload(void **state) {
    (void)state;
    fx_t *f = fx_new(3);
    charge(f, 1, 4);
    sld_journal_entry_t *e = sld_charge_journal_find(f->j, f->rig->policy, KEY, 1);
    /* the same policy, its second limit only: the entry is counted by it */
    sl_policy_t reloaded = *f->rig->policy;
    reloaded.limits[0] = f->rig->policy->limits[1];
    reloaded.nlimits = 1;
    uint64_t sent[SL_MAX_LIMITS] = {0};
    sl_usec_t since = 0;
    take_one(f);
    assert_false(sld_charge_journal_sending(f->j, e, &reloaded, sent, &since));
    assert_int_equal(e->nlimits, 1);
    assert_int_equal(e->ids[0], f->rig->policy->limits[1].id);
    assert_int_equal(sent[0], 4);
    assert_int_equal(sent[1], 0);
    assert_int_equal(stats(f).dropped, 4); /* the first limit's */
    fx_free(f);
}

/* A policy gone, an entry retired: what they held is counted as dropped. */
static void dropped_charges_are_counted(void **state) {
    (void)state;
    fx_t *f = fx_new(3);
    charge(f, 2, 1);
    sld_journal_entry_t *e = take_one(f);
    sld_charge_journal_drop(f->j, e);
    assert_int_equal(stats(f).dropped, 4); /* 2 on each of two limits */
    assert_int_equal(stats(f).unsynced, 0);
    charge(f, 1, 1);
    e = take_one(f);
    sld_charge_journal_retire(f->j, e);
    assert_int_equal(stats(f).dropped, 6);
    assert_int_equal(stats(f).keys, 0);
    assert_int_equal(stats(f).unsynced, 0);
    assert_null(sld_charge_journal_find(f->j, f->rig->policy, KEY, 1));
    fx_free(f);
}

static void idle_entries_go(void **state) {
    (void)state;
    fx_t *f = fx_new(3);
    charge(f, 1, 1);
    sld_journal_entry_t *e = take_one(f);
    sld_charge_journal_sweep(f->j, SLD_JOURNAL_IDLE_ROUNDS); /* in flight: it stays */
    assert_int_equal(stats(f).keys, 1);
    sld_charge_journal_written(f->j, e);
    sld_charge_journal_sweep(f->j, SLD_JOURNAL_IDLE_ROUNDS - 1);
    assert_int_equal(stats(f).keys, 1);
    sld_charge_journal_sweep(f->j, 1);
    assert_int_equal(stats(f).keys, 0);
    fx_free(f);
}

/* Before a sync a daemon may charge a key its share of a limit
 * (sl__policy_share); then it is told to wait one interval. With Redis
 * away no sync would make room: it decides alone on its whole copy. */
static void the_share_waits_for_a_sync_unless_offline(void **state) {
    (void)state;
    fx_t *f = fx_new(4);
    uint64_t share = sl__policy_share(f->rig->policy, 0), share1 = sl__policy_share(f->rig->policy, 1);
    if (share1 < share)
        share = share1; /* the smaller share binds */
    assert_true(share < 50);
    uint64_t admitted = 0;
    sl_decision_t d;
    while ((d = rig_check(f->rig, KEY)).allowed)
        admitted++;
    assert_int_equal(admitted, share);
    assert_int_equal(d.retry_after, INTERVAL);
    sld_charge_journal_set_offline(f->j, true);
    assert_true(rig_check(f->rig, KEY).allowed);
    sld_charge_journal_set_offline(f->j, false);
    assert_false(rig_check(f->rig, KEY).allowed);
    /* once synced (sent, then the import takes it), room again */
    sld_journal_entry_t *e = take_one(f);
    sld_charge_journal_written(f->j, e);
    assert_true(rig_check(f->rig, KEY).allowed);
    fx_free(f);
}

int main(void) {
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(charges_are_summed_per_limit),
        cmocka_unit_test(given_back_charges_go_next_round),
        cmocka_unit_test(a_lost_answer_is_not_counted_twice),
        cmocka_unit_test(lost_answers_are_remembered),
        cmocka_unit_test(a_reset_drops_what_the_key_charged),
        cmocka_unit_test(counts_follow_a_reload),
        cmocka_unit_test(dropped_charges_are_counted),
        cmocka_unit_test(idle_entries_go),
        cmocka_unit_test(the_share_waits_for_a_sync_unless_offline),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
