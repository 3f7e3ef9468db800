/* connection_commands.c -- SELECT, CLIENT, CLUSTER, TIME
 * (connection_commands.h).
 *
 * CLIENT INFO and CLIENT LIST describe the asking connection only, in
 * Redis's "field=value" line: sluice keeps no list of other clients for
 * this, and its peer address is not known here (addr=?). CLIENT SETINFO is
 * checked and accepted, not kept.
 *
 * CLUSTER answers as a one-node cluster owning slots 0-16383 at the RESP
 * front's own address (the listen address; empty for a wildcard one, which
 * cluster clients read as "the address you used").
 */
#include <stdio.h>
#include <string.h>
#include <time.h>

#include "server/resp/connection_commands.h"
#include "server/resp/resp_config.h"

#define SLOTS 16384

void sld_cmd_select(sld_client_t *c, const sld_arg_t *argv, size_t argc) {
    (void)argc;
    int64_t db;
    if (sld_arg_int(&argv[1], &db) != SL_OK)
        sld_reply_error(c->out, "ERR value is not an integer or out of range");
    else if (db != 0)
        sld_reply_error(c->out, "ERR DB index is out of range (sluice has database 0 only)");
    else
        sld_reply_ok(c->out);
}

/* ---- CLIENT ---------------------------------------------------------------------------------- */

static void client_line(sld_client_t *c, sld_buf_t *b) {
    sld_buf_printf(b,
                   "id=%llu addr=? laddr=? fd=-1 name=%s age=0 idle=0 flags=N db=0 sub=0 psub=0 "
                   "ssub=0 multi=-1 qbuf=0 qbuf-free=0 argv-mem=0 multi-mem=0 rbs=0 rbp=0 obl=0 "
                   "oll=0 omem=0 tot-mem=0 events=r cmd=client user=default redir=-1 resp=%d "
                   "lib-name= lib-ver=\n",
                   (unsigned long long)c->id, c->name, sld_proto(c));
}

static void reply_client_line(sld_client_t *c) {
    sld_buf_t b = {0};
    client_line(c, &b);
    if (b.failed)
        sld_reply_error(c->out, "ERR out of memory");
    else /* Redis 7 answers CLIENT INFO and LIST as verbatim text in RESP3 */
        sld_reply_verbatim(c->out, sld_proto(c), b.data, b.len);
    sld_buf_free(&b);
}

/* Redis refuses names with spaces or newlines (CLIENT LIST would break). */
static bool name_ok(const sld_arg_t *a) {
    for (size_t i = 0; i < a->len; i++)
        if (a->ptr[i] < '!' || a->ptr[i] > '~')
            return false;
    return true;
}

void sld_cmd_client(sld_client_t *c, const sld_arg_t *argv, size_t argc) {
    const sld_arg_t *sub = &argv[1];
    if (sld_arg_is(sub, "SETNAME") && argc == 3) {
        if (!name_ok(&argv[2])) {
            sld_reply_error(c->out, "ERR Client names cannot contain spaces, newlines or special "
                                    "characters.");
            return;
        }
        size_t n = argv[2].len < sizeof c->name - 1 ? argv[2].len : sizeof c->name - 1;
        memcpy(c->name, argv[2].ptr, n);
        c->name[n] = '\0';
        sld_reply_ok(c->out);
    } else if (sld_arg_is(sub, "GETNAME") && argc == 2) {
        if (c->name[0])
            sld_reply_bulk_str(c->out, c->name);
        else
            sld_reply_nil(c->out, sld_proto(c));
    } else if (sld_arg_is(sub, "ID") && argc == 2) {
        sld_reply_int(c->out, (int64_t)c->id);
    } else if (sld_arg_is(sub, "INFO") && argc == 2) {
        reply_client_line(c);
    } else if (sld_arg_is(sub, "LIST")) {
        reply_client_line(c);
    } else if (sld_arg_is(sub, "SETINFO")) {
        if (argc != 4)
            sld_reply_error(c->out, "ERR wrong number of arguments for 'client|setinfo' command");
        else if (!sld_arg_is(&argv[2], "LIB-NAME") && !sld_arg_is(&argv[2], "LIB-VER"))
            sld_reply_errorf(c->out, "ERR Unrecognized option '%.*s'",
                             (int)(argv[2].len > 32 ? 32 : argv[2].len), argv[2].ptr);
        else if (!name_ok(&argv[3]))
            sld_reply_error(c->out, "ERR lib-name and lib-ver cannot contain spaces, newlines "
                                    "or special characters.");
        else
            sld_reply_ok(c->out);
    } else if (sld_arg_is(sub, "NO-EVICT") || sld_arg_is(sub, "NO-TOUCH") ||
               sld_arg_is(sub, "REPLY")) {
        sld_reply_ok(c->out);
    } else {
        sld_reply_errorf(c->out, "ERR unknown subcommand or wrong number of arguments for "
                         "'%.*s' (sluice has ID, INFO, LIST, SETNAME, GETNAME, SETINFO)",
                         (int)(sub->len > 32 ? 32 : sub->len), sub->ptr);
    }
}

/* ---- CLUSTER --------------------------------------------------------------------------------- */

/* The front's listen address without its port or brackets; "" when it
 * listens on every address. */
static void own_ip(const sld_client_t *c, char *ip, size_t n) {
    const char *a = sld_resp_listen(c->rt->cfg);
    const char *colon = strrchr(a, ':');
    size_t len = colon ? (size_t)(colon - a) : strlen(a);
    if (len >= 2 && a[0] == '[') {
        a++;
        len -= 2;
    }
    if (len >= n)
        len = n - 1;
    memcpy(ip, a, len);
    ip[len] = '\0';
    if (strcmp(ip, "0.0.0.0") == 0 || strcmp(ip, "::") == 0)
        ip[0] = '\0';
}

/* 40 hex digits, as a Redis node id: stable for this daemon's port. */
static void node_id(const sld_client_t *c, char id[41]) {
    snprintf(id, 41, "51a1ce%034d", c->d->resp_port);
}

static void cluster_info(sld_client_t *c) {
    static const char text[] =
        "cluster_enabled:1\r\ncluster_state:ok\r\ncluster_slots_assigned:16384\r\n"
        "cluster_slots_ok:16384\r\ncluster_slots_pfail:0\r\ncluster_slots_fail:0\r\n"
        "cluster_known_nodes:1\r\ncluster_size:1\r\ncluster_current_epoch:1\r\n"
        "cluster_my_epoch:1\r\ncluster_stats_messages_sent:0\r\n"
        "cluster_stats_messages_received:0\r\ntotal_cluster_links_buffer_limit_exceeded:0\r\n";
    sld_reply_bulk(c->out, text, sizeof text - 1);
}

void sld_cmd_cluster(sld_client_t *c, const sld_arg_t *argv, size_t argc) {
    const sld_arg_t *sub = &argv[1];
    char ip[64], id[41];
    own_ip(c, ip, sizeof ip);
    node_id(c, id);
    int port = c->d->resp_port;
    if (sld_arg_is(sub, "INFO") && argc == 2) {
        cluster_info(c);
    } else if (sld_arg_is(sub, "MYID") && argc == 2) {
        sld_reply_bulk_str(c->out, id);
    } else if (sld_arg_is(sub, "SLOTS") && argc == 2) {
        /* [[first, last, [ip, port, id]]] */
        sld_reply_array(c->out, 1);
        sld_reply_array(c->out, 3);
        sld_reply_int(c->out, 0);
        sld_reply_int(c->out, SLOTS - 1);
        sld_reply_array(c->out, 3);
        sld_reply_bulk_str(c->out, ip);
        sld_reply_int(c->out, port);
        sld_reply_bulk_str(c->out, id);
    } else if (sld_arg_is(sub, "SHARDS") && argc == 2) {
        /* [["slots", [first, last], "nodes", [[field, value, ...]]]] */
        sld_reply_array(c->out, 1);
        sld_reply_array(c->out, 4);
        sld_reply_bulk_str(c->out, "slots");
        sld_reply_array(c->out, 2);
        sld_reply_int(c->out, 0);
        sld_reply_int(c->out, SLOTS - 1);
        sld_reply_bulk_str(c->out, "nodes");
        sld_reply_array(c->out, 1);
        sld_reply_array(c->out, 14);
        sld_reply_bulk_str(c->out, "id");
        sld_reply_bulk_str(c->out, id);
        sld_reply_bulk_str(c->out, "port");
        sld_reply_int(c->out, port);
        sld_reply_bulk_str(c->out, "ip");
        sld_reply_bulk_str(c->out, ip);
        sld_reply_bulk_str(c->out, "endpoint");
        sld_reply_bulk_str(c->out, ip);
        sld_reply_bulk_str(c->out, "role");
        sld_reply_bulk_str(c->out, "master");
        sld_reply_bulk_str(c->out, "replication-offset");
        sld_reply_int(c->out, 0);
        sld_reply_bulk_str(c->out, "health");
        sld_reply_bulk_str(c->out, "online");
    } else if (sld_arg_is(sub, "NODES") && argc == 2) {
        char line[256];
        int n = snprintf(line, sizeof line, "%s %s:%d@0 myself,master - 0 0 1 connected 0-%d\n",
                         id, ip, port, SLOTS - 1);
        sld_reply_bulk(c->out, line, (size_t)n);
    } else {
        sld_reply_errorf(c->out, "ERR unknown subcommand or wrong number of arguments for "
                         "'%.*s' (sluice has INFO, SLOTS, SHARDS, NODES, MYID)",
                         (int)(sub->len > 32 ? 32 : sub->len), sub->ptr);
    }
}

/* ---- TIME ------------------------------------------------------------------------------------ */

void sld_cmd_time(sld_client_t *c, const sld_arg_t *argv, size_t argc) {
    (void)argv, (void)argc;
    struct timespec ts;
    clock_gettime(CLOCK_REALTIME, &ts);
    char s[24], us[24];
    snprintf(s, sizeof s, "%lld", (long long)ts.tv_sec);
    snprintf(us, sizeof us, "%ld", (long)(ts.tv_nsec / 1000));
    sld_reply_array(c->out, 2);
    sld_reply_bulk_str(c->out, s);
    sld_reply_bulk_str(c->out, us);
}
