/* redis_rig.h -- real redis-server processes for the tests of the Redis
 * store: started on a free loopback port in a scratch directory, with no
 * persistence, stopped (SIGTERM, then SIGKILL) and cleaned up by the test.
 * Header-only; include after rig.h (or cmocka). Loopback only.
 */
#ifndef SL_TEST_REDIS_RIG_H
#define SL_TEST_REDIS_RIG_H

#include <errno.h>
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

/* Starts redis-server with extra arguments (NULL-terminated, may be NULL),
 * e.g. {"--cluster-enabled", "yes", NULL}; waits until it answers. Returns 0
 * or -1 (and prints why). */
static inline int redis_rig_start(redis_proc_t *r, const char *const *extra) {
    memset(r, 0, sizeof *r);
    snprintf(r->dir, sizeof r->dir, "/tmp/sl-redis-XXXXXX");
    if (mkdtemp(r->dir) == NULL) {
        perror("mkdtemp");
        return -1;
    }
    for (int attempt = 0; attempt < 5; attempt++) {
        r->port = redis_rig_free_port();
        char port[16];
        snprintf(port, sizeof port, "%d", r->port);
        const char *argv[64] = {"redis-server", "--port", port, "--bind", "127.0.0.1", "--save", "",
                                "--appendonly", "no", "--dir", r->dir, "--logfile", "redis.log",
                                "--daemonize", "no"};
        size_t n = 15;
        for (size_t i = 0; extra && extra[i] && n < 63; i++)
            argv[n++] = extra[i];
        argv[n] = NULL;
        r->pid = fork();
        if (r->pid == 0) {
            execvp("redis-server", (char *const *)argv);
            _exit(127);
        }
        for (int i = 0; i < 200; i++) { /* up to 2 s */
            redisContext *c = redis_rig_connect(r->port);
            if (c) {
                redisFree(c);
                return 0;
            }
            int status;
            if (waitpid(r->pid, &status, WNOHANG) == r->pid)
                break; /* it died: the port was taken after all, or no redis-server */
            redis_rig_sleep_ms(10);
        }
        kill(r->pid, SIGKILL);
        waitpid(r->pid, NULL, 0);
    }
    fprintf(stderr, "redis_rig: cannot start redis-server (is it installed?) in %s\n", r->dir);
    return -1;
}

/* Stops it (SIGTERM, then SIGKILL after 2 s) and removes its directory. */
static inline void redis_rig_stop(redis_proc_t *r) {
    if (r->pid > 0) {
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

#endif
