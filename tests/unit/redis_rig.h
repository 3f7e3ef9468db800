/* redis_rig.h -- real redis-server processes for the tests of the Redis
 * store: started on a free loopback port in a scratch directory, with no
 * persistence, stopped (SIGTERM, then SIGKILL) and cleaned up by the test.
 * Header-only; include after rig.h (or cmocka). Loopback only.
 */
#ifndef SL_TEST_REDIS_RIG_H
#define SL_TEST_REDIS_RIG_H

#include <errno.h>
#include <stdarg.h>
#include <netinet/in.h>
#include <signal.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include <hiredis/hiredis.h>

typedef struct redis_proc {
    pid_t pid;
    int port;
    char dir[64];  /* its working directory (cluster config, logs) */
} redis_proc_t;

/* Every server started and not yet stopped, killed at exit: a failed
 * cmocka assertion leaves its test early, the servers must not outlive it. */
static pid_t redis_rig_pids[64];

static inline void redis_rig_kill_all(void) {
    for (size_t i = 0; i < sizeof redis_rig_pids / sizeof redis_rig_pids[0]; i++)
        if (redis_rig_pids[i] > 0) {
            kill(redis_rig_pids[i], SIGKILL);
            waitpid(redis_rig_pids[i], NULL, 0);
            redis_rig_pids[i] = 0;
        }
}

static inline void redis_rig_track(pid_t pid, bool add) {
    static bool registered;
    if (!registered) {
        atexit(redis_rig_kill_all);
        registered = true;
    }
    for (size_t i = 0; i < sizeof redis_rig_pids / sizeof redis_rig_pids[0]; i++)
        if (add ? redis_rig_pids[i] == 0 : redis_rig_pids[i] == pid) {
            redis_rig_pids[i] = add ? pid : 0;
            return;
        }
}

/* A port nothing listens on now (bind to 0, read it back, close). */
static inline int redis_rig_free_port(void) {
    int fd = socket(AF_INET, SOCK_STREAM, 0);
    struct sockaddr_in a = {.sin_family = AF_INET, .sin_addr.s_addr = htonl(INADDR_LOOPBACK)};
    socklen_t len = sizeof a;
    if (fd < 0 || bind(fd, (struct sockaddr *)&a, sizeof a) != 0 ||
        getsockname(fd, (struct sockaddr *)&a, &len) != 0) {
        if (fd >= 0)
            close(fd);
        return -1;
    }
    close(fd);
    return ntohs(a.sin_port);
}

static inline void redis_rig_sleep_ms(long ms) {
    struct timespec ts = {ms / 1000, (ms % 1000) * 1000000};
    nanosleep(&ts, NULL);
}

/* A connection to 127.0.0.1:port, or NULL if it does not answer PING. */
static inline redisContext *redis_rig_connect(int port) {
    struct timeval tv = {1, 0};
    redisContext *c = redisConnectWithTimeout("127.0.0.1", port, tv);
    if (c == NULL || c->err) {
        if (c)
            redisFree(c);
        return NULL;
    }
    redisReply *r = redisCommand(c, "PING");
    bool ok = r && r->type == REDIS_REPLY_STATUS;
    if (r)
        freeReplyObject(r);
    if (!ok) {
        redisFree(c);
        return NULL;
    }
    return c;
}

/* Stops it (SIGTERM, then SIGKILL after 2 s) and removes its directory. */
static inline void redis_rig_stop(redis_proc_t *r) {
    if (r->pid > 0) {
        redis_rig_track(r->pid, false);
        kill(r->pid, SIGTERM);
        for (int i = 0; i < 200; i++) {
            if (waitpid(r->pid, NULL, WNOHANG) == r->pid) {
                r->pid = 0;
                break;
            }
            redis_rig_sleep_ms(10);
        }
        if (r->pid > 0) {
            kill(r->pid, SIGKILL);
            waitpid(r->pid, NULL, 0);
            r->pid = 0;
        }
    }
    if (r->dir[0]) {
        char cmd[128];
        snprintf(cmd, sizeof cmd, "rm -rf '%s'", r->dir);
        if (system(cmd) != 0)
            fprintf(stderr, "redis_rig: could not remove %s\n", r->dir);
        r->dir[0] = '\0';
    }
}

/* ---- more than one server: replicas, Cluster, Sentinel ---------------------- */

/* One command to 127.0.0.1:port on a fresh connection: the reply (free it
 * with freeReplyObject) or NULL when the server does not answer. */
static inline redisReply *redis_rig_command(int port, const char *fmt, ...) {
    redisContext *c = redis_rig_connect(port);
    if (c == NULL)
        return NULL;
    va_list ap;
    va_start(ap, fmt);
    redisReply *r = redisvCommand(c, fmt, ap);
    va_end(ap);
    redisFree(c);
    return r;
}

/* Whether INFO <section> of the server on port contains `needle`. */
static inline bool redis_rig_info_has(int port, const char *section, const char *needle) {
    redisReply *r = redis_rig_command(port, "INFO %s", section);
    bool has = r && r->type == REDIS_REPLY_STRING && strstr(r->str, needle) != NULL;
    if (r)
        freeReplyObject(r);
    return has;
}

/* Kills it with SIGKILL and reaps it, keeping its port and directory (to
 * restart it there). */
static inline void redis_rig_kill(redis_proc_t *r) {
    if (r->pid > 0) {
        redis_rig_track(r->pid, false);
        kill(r->pid, SIGKILL);
        waitpid(r->pid, NULL, 0);
        r->pid = 0;
    }
}

/* Starts redis-server again on r's port and directory (after redis_rig_kill),
 * with a config file first when conf is not NULL (sentinels). Returns 0 or -1. */
static inline int redis_rig_spawn(redis_proc_t *r, const char *conf, const char *const *extra) {
    char port[16];
    snprintf(port, sizeof port, "%d", r->port);
    const char *argv[72];
    size_t n = 0;
    argv[n++] = "redis-server";
    if (conf)
        argv[n++] = conf;
    const char *base[] = {"--port", port, "--bind", "127.0.0.1", "--save", "", "--appendonly",
                          "no", "--dir", r->dir, "--logfile", "redis.log", "--daemonize", "no"};
    for (size_t i = 0; i < sizeof base / sizeof base[0]; i++)
        argv[n++] = base[i];
    for (size_t i = 0; extra && extra[i] && n < 71; i++)
        argv[n++] = extra[i];
    argv[n] = NULL;
    r->pid = fork();
    if (r->pid == 0) {
        execvp("redis-server", (char *const *)argv);
        _exit(127);
    }
    redis_rig_track(r->pid, true);
    for (int i = 0; i < 300; i++) { /* up to 3 s */
        redisContext *c = redis_rig_connect(r->port);
        if (c) {
            redisFree(c);
            return 0;
        }
        if (waitpid(r->pid, NULL, WNOHANG) == r->pid) {
            redis_rig_track(r->pid, false);
            r->pid = 0;
            return -1;
        }
        redis_rig_sleep_ms(10);
    }
    redis_rig_kill(r);
    return -1;
}

/* A fresh r with its own scratch directory. */
static inline int redis_rig_scratch(redis_proc_t *r) {
    memset(r, 0, sizeof *r);
    snprintf(r->dir, sizeof r->dir, "/tmp/sl-redis-XXXXXX");
    if (mkdtemp(r->dir) == NULL) {
        perror("mkdtemp");
        return -1;
    }
    return 0;
}

/* redis_rig_spawn on a free port, trying another when one is taken meanwhile. */
static inline int redis_rig_spawn_anywhere(redis_proc_t *r, const char *conf,
                                           const char *const *extra) {
    for (int attempt = 0; attempt < 5; attempt++) {
        r->port = redis_rig_free_port();
        if (redis_rig_spawn(r, conf, extra) == 0)
            return 0;
    }
    fprintf(stderr, "redis_rig: cannot start redis-server (is it installed?), see %s/redis.log\n",
            r->dir);
    return -1;
}

/* Starts redis-server with extra arguments (NULL-terminated, may be NULL),
 * e.g. {"--cluster-enabled", "yes", NULL}; waits until it answers. Returns 0
 * or -1 (and prints why). */
static inline int redis_rig_start(redis_proc_t *r, const char *const *extra) {
    return redis_rig_scratch(r) == 0 ? redis_rig_spawn_anywhere(r, NULL, extra) : -1;
}

/* Starts a redis-server like redis_rig_start, with a config file first.
 * For sentinels. */
static inline int redis_rig_start_conf(redis_proc_t *r, const char *conf_text,
                                       const char *const *extra) {
    if (redis_rig_scratch(r) != 0)
        return -1;
    char conf[128];
    snprintf(conf, sizeof conf, "%s/redis.conf", r->dir);
    FILE *f = fopen(conf, "w");
    if (f == NULL || fputs(conf_text, f) < 0 || fclose(f) != 0) {
        perror(conf);
        return -1;
    }
    return redis_rig_spawn_anywhere(r, conf, extra);
}

/* Whether the server on port says it is a master (ROLE). */
static inline bool redis_rig_is_master(int port) {
    redisReply *r = redis_rig_command(port, "ROLE");
    bool m = r && r->type == REDIS_REPLY_ARRAY && r->elements > 0 &&
             r->element[0]->type == REDIS_REPLY_STRING && strcmp(r->element[0]->str, "master") == 0;
    if (r)
        freeReplyObject(r);
    return m;
}

#define REDIS_RIG_MAX_CLUSTER 9

typedef struct redis_cluster {
    int n;                                  /* servers */
    redis_proc_t node[REDIS_RIG_MAX_CLUSTER];
} redis_cluster_t;

/* Whether every live node of the cluster says cluster_state:ok and knows
 * `masters` masters with slots. */
static inline bool redis_rig_cluster_ok(const redis_cluster_t *cl, int masters) {
    for (int i = 0; i < cl->n; i++) {
        if (cl->node[i].pid <= 0)
            continue;
        redisReply *r = redis_rig_command(cl->node[i].port, "CLUSTER INFO");
        bool ok = r && r->type == REDIS_REPLY_STRING && strstr(r->str, "cluster_state:ok");
        if (ok) {
            char want[64];
            snprintf(want, sizeof want, "cluster_size:%d\r", masters);
            ok = strstr(r->str, want) != NULL;
        }
        if (r)
            freeReplyObject(r);
        if (!ok)
            return false;
    }
    return true;
}

/* Starts masters * (1 + replicas) cluster-enabled servers and makes them a
 * cluster with redis-cli --cluster create; waits (up to 20 s) until every
 * node says cluster_state:ok. node_timeout_ms: cluster-node-timeout (how
 * soon a dead master is failed over). Returns 0 or -1. */
static inline int redis_rig_cluster_start(redis_cluster_t *cl, int masters, int replicas,
                                          int node_timeout_ms) {
    memset(cl, 0, sizeof *cl);
    int n = masters * (1 + replicas);
    if (n > REDIS_RIG_MAX_CLUSTER)
        return -1;
    char timeout[16];
    snprintf(timeout, sizeof timeout, "%d", node_timeout_ms);
    char cmd[1024];
    int len = snprintf(cmd, sizeof cmd, "timeout 30 redis-cli --cluster create");
    for (int i = 0; i < n; i++) {
        /* The bus port is the port + 10000 unless given: a free port of its
         * own (a port above 55535 has no +10000). Validity factor 0: a
         * replica fails over however long ago it heard from its master. */
        char bus[16];
        snprintf(bus, sizeof bus, "%d", redis_rig_free_port());
        const char *extra[] = {"--cluster-enabled", "yes", "--cluster-config-file", "nodes.conf",
                               "--cluster-node-timeout", timeout, "--cluster-port", bus,
                               "--cluster-require-full-coverage", "no",
                               "--cluster-replica-validity-factor", "0",
                               "--repl-diskless-sync-delay", "0", NULL};
        if (redis_rig_start(&cl->node[i], extra) != 0)
            return -1;
        cl->n = i + 1;
        len += snprintf(cmd + len, sizeof cmd - (size_t)len, " 127.0.0.1:%d", cl->node[i].port);
    }
    snprintf(cmd + len, sizeof cmd - (size_t)len,
             " --cluster-replicas %d --cluster-yes > %s/create.log 2>&1", replicas,
             cl->node[0].dir);
    if (system(cmd) != 0) {
        fprintf(stderr, "redis_rig: redis-cli --cluster create failed, see %s/create.log\n",
                cl->node[0].dir);
        return -1;
    }
    for (int i = 0; i < 2000; i++) { /* up to 20 s */
        bool ok = redis_rig_cluster_ok(cl, masters);
        /* and every replica in sync (a failover test needs its data) */
        for (int k = 0; ok && k < cl->n; k++)
            ok = redis_rig_is_master(cl->node[k].port) ||
                 redis_rig_info_has(cl->node[k].port, "replication", "master_link_status:up");
        if (ok)
            return 0;
        redis_rig_sleep_ms(10);
    }
    fprintf(stderr, "redis_rig: the cluster did not reach cluster_state:ok\n");
    return -1;
}

static inline void redis_rig_cluster_stop(redis_cluster_t *cl) {
    for (int i = 0; i < cl->n; i++)
        redis_rig_stop(&cl->node[i]);
    cl->n = 0;
}

/* A master, one replica of it and `sentinels` sentinels watching it as
 * "mymaster" (quorum 1, down after down_after_ms). */
typedef struct redis_sentinel_set {
    redis_proc_t master, replica;
    int n_sentinels;
    redis_proc_t sentinel[3];
} redis_sentinel_set_t;

static inline int redis_rig_sentinel_start(redis_sentinel_set_t *s, int sentinels,
                                           int down_after_ms) {
    memset(s, 0, sizeof *s);
    const char *fast[] = {"--repl-diskless-sync-delay", "0", NULL};
    if (sentinels < 1 || sentinels > 3 || redis_rig_start(&s->master, fast) != 0)
        return -1;
    char mport[16];
    snprintf(mport, sizeof mport, "%d", s->master.port);
    const char *rep[] = {"--replicaof", "127.0.0.1", mport, NULL};
    if (redis_rig_start(&s->replica, rep) != 0)
        return -1;
    char conf[512];
    snprintf(conf, sizeof conf,
             "sentinel monitor mymaster 127.0.0.1 %d 1\n"
             "sentinel down-after-milliseconds mymaster %d\n"
             "sentinel failover-timeout mymaster 2000\n"
             "sentinel parallel-syncs mymaster 1\n",
             s->master.port, down_after_ms);
    const char *extra[] = {"--sentinel", NULL};
    for (int i = 0; i < sentinels; i++) {
        if (redis_rig_start_conf(&s->sentinel[i], conf, extra) != 0)
            return -1;
        s->n_sentinels = i + 1;
    }
    /* wait until the replica is in sync and the sentinels know it (10 s) */
    for (int i = 0; i < 1000; i++) {
        bool ok = redis_rig_info_has(s->replica.port, "replication", "master_link_status:up");
        for (int k = 0; ok && k < sentinels; k++) {
            redisReply *r = redis_rig_command(s->sentinel[k].port, "SENTINEL REPLICAS mymaster");
            ok = r && r->type == REDIS_REPLY_ARRAY && r->elements >= 1;
            if (r)
                freeReplyObject(r);
        }
        if (ok)
            return 0;
        redis_rig_sleep_ms(10);
    }
    fprintf(stderr, "redis_rig: the sentinels never saw the replica\n");
    return -1;
}

static inline void redis_rig_sentinel_stop(redis_sentinel_set_t *s) {
    for (int i = 0; i < s->n_sentinels; i++)
        redis_rig_stop(&s->sentinel[i]);
    redis_rig_stop(&s->replica);
    redis_rig_stop(&s->master);
}

/* ---- one server for a group of tests ---------------------------------------- */

/* The server a test file's tests share: cmocka_run_group_tests(tests,
 * redis_rig_group_start, redis_rig_group_stop) starts it before the first
 * test and stops it after the last; a test reaches it as redis_rig_group. */
static redis_proc_t redis_rig_group;

static inline int redis_rig_group_start(void **state) {
    (void)state;
    if (redis_rig_start(&redis_rig_group, NULL) != 0)
        fail_msg("no redis-server");
    return 0;
}

static inline int redis_rig_group_stop(void **state) {
    (void)state;
    redis_rig_stop(&redis_rig_group);
    return 0;
}

#endif
