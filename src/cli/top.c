/* top.c -- `sluice top` (see top.h). */
#include <errno.h>
#include <inttypes.h>
#include <poll.h>
#include <signal.h>
#include <stdarg.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/ioctl.h>
#include <termios.h>
#include <time.h>
#include <unistd.h>
#include <yaml.h>

#include "cli/http_get.h"
#include "cli/top.h"

#define TOP_KEYS 5         /* heavy hitters shown per table */
#define LINE_MAX_BYTES 512

/* ---- the JSON, through libyaml's document tree --------------------------------------- */

static yaml_node_t *node(yaml_document_t *doc, int i) { return i ? yaml_document_get_node(doc, i) : NULL; }

/* The value of `key` in mapping m, or NULL. */
static yaml_node_t *get(yaml_document_t *doc, yaml_node_t *m, const char *key) {
    if (m == NULL || m->type != YAML_MAPPING_NODE)
        return NULL;
    for (yaml_node_pair_t *p = m->data.mapping.pairs.start; p < m->data.mapping.pairs.top; p++) {
        yaml_node_t *k = node(doc, p->key);
        if (k && k->type == YAML_SCALAR_NODE && strcmp((const char *)k->data.scalar.value, key) == 0)
            return node(doc, p->value);
    }
    return NULL;
}

static size_t count(yaml_node_t *s) {
    return s && s->type == YAML_SEQUENCE_NODE ? (size_t)(s->data.sequence.items.top - s->data.sequence.items.start) : 0;
}

static yaml_node_t *at(yaml_document_t *doc, yaml_node_t *s, size_t i) {
    return i < count(s) ? node(doc, s->data.sequence.items.start[i]) : NULL;
}

/* A scalar's text; NULL for null, a missing value or a collection. */
static const char *text(yaml_node_t *n) {
    if (n == NULL || n->type != YAML_SCALAR_NODE)
        return NULL;
    const char *s = (const char *)n->data.scalar.value;
    return n->data.scalar.style == YAML_PLAIN_SCALAR_STYLE && strcmp(s, "null") == 0 ? NULL : s;
}

static double number(yaml_node_t *n, double otherwise) {
    const char *s = text(n);
    char *end;
    double v = s ? strtod(s, &end) : 0;
    return s && end != s && *end == '\0' ? v : otherwise;
}

static bool truth(yaml_node_t *n) {
    const char *s = text(n);
    return s && strcmp(s, "true") == 0;
}

/* ---- a frame: lines, cut to the terminal ------------------------------------------------- */

typedef struct frame {
    char (*line)[LINE_MAX_BYTES];
    size_t n, max;
} frame_t;

static void say(frame_t *f, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
static void say(frame_t *f, const char *fmt, ...) {
    if (f->n == f->max)
        return;
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(f->line[f->n++], LINE_MAX_BYTES, fmt, ap);
    va_end(ap);
}

/* A key as the terminal may show it: no control bytes (C0, DEL, and the
 * C1 range in UTF-8), which could move the cursor or worse. */
static void printable(const char *in, char *out, size_t size) {
    size_t o = 0;
    const unsigned char *u = (const unsigned char *)(in ? in : "(hidden)");
    for (size_t i = 0; u[i] && o + 2 < size; i++) {
        if (u[i] < 0x20 || u[i] == 0x7f)
            out[o++] = '?';
        else if (u[i] == 0xc2 && u[i + 1] >= 0x80 && u[i + 1] <= 0x9f)
            out[o++] = '?', i++;
        else
            out[o++] = (char)u[i];
    }
    out[o] = '\0';
}

static void human(double v, char *out, size_t size) {
    if (v >= 1e7)
        snprintf(out, size, "%.0fM", v / 1e6);
    else if (v >= 1e6)
        snprintf(out, size, "%.1fM", v / 1e6);
    else if (v >= 1e5)
        snprintf(out, size, "%.0fk", v / 1e3);
    else if (v >= 1e4)
        snprintf(out, size, "%.1fk", v / 1e3);
    else
        snprintf(out, size, "%.0f", v);
}

static void duration(yaml_node_t *n, char *out, size_t size) {
    const char *s = text(n);
    double v = number(n, -1);
    if (s == NULL || v < 0)
        snprintf(out, size, "-");
    else if (v == 0)
        snprintf(out, size, "now");
    else if (v < 1)
        snprintf(out, size, "%.0f ms", v * 1000);
    else if (v < 120)
        snprintf(out, size, "%.1f s", v);
    else
        snprintf(out, size, "%.0f min", v / 60);
}

/* The sum of the last n of a per-second series. */
static double last(yaml_document_t *doc, yaml_node_t *series, size_t n) {
    size_t len = count(series);
    double sum = 0;
    for (size_t i = len > n ? len - n : 0; i < len; i++)
        sum += number(at(doc, series, i), 0);
    return sum;
}

static void heavy(frame_t *f, yaml_document_t *doc, yaml_node_t *t, const char *title) {
    yaml_node_t *top = get(doc, t, "top");
    say(f, "  %-34s %9s %9s %9s", title, "count", "remaining", "retry");
    if (count(top) == 0)
        say(f, "    (none in the last minute)");
    for (size_t i = 0; i < count(top) && i < TOP_KEYS; i++) {
        yaml_node_t *e = at(doc, top, i);
        char key[80], c[16], rem[16], retry[16];
        printable(text(get(doc, e, "key")), key, 33);
        human(number(get(doc, e, "count"), 0), c, sizeof c);
        if (text(get(doc, e, "remaining")))
            human(number(get(doc, e, "remaining"), 0), rem, sizeof rem);
        else
            snprintf(rem, sizeof rem, "-");
        duration(get(doc, e, "retry_after"), retry, sizeof retry);
        say(f, "    %-32s%s %9s %9s %9s", key, truth(get(doc, e, "truncated")) ? "~" : " ", c, rem, retry);
    }
}

static void render(frame_t *f, yaml_document_t *doc, const char *where) {
    yaml_node_t *root = yaml_document_get_root_node(doc);
    char stamp[16] = "";
    time_t now = time(NULL);
    struct tm tm;
    if (localtime_r(&now, &tm))
        strftime(stamp, sizeof stamp, "%H:%M:%S", &tm);
    say(f, "sluice top  %s  %s  (q quits)", where, stamp);
    yaml_node_t *st = get(doc, root, "store"), *mem = get(doc, st, "memory");
    char bytes[16], states[16], ev[16];
    human(number(get(doc, mem, "bytes"), 0) / 1024, bytes, sizeof bytes);
    human(number(get(doc, mem, "states"), 0), states, sizeof states);
    human(number(get(doc, mem, "evictions"), 0), ev, sizeof ev);
    char snap[24] = "none yet";
    if (text(get(doc, st, "snapshot_age_seconds")))
        duration(get(doc, st, "snapshot_age_seconds"), snap, sizeof snap);
    const char *describe = text(get(doc, st, "describe"));
    say(f, "store %s %s  %s KiB  %s states  %s evictions  snapshot %s%s", describe ? describe : "?",
        truth(get(doc, st, "up")) ? "up" : "DOWN", bytes, states, ev, snap,
        text(get(doc, st, "snapshot_age_seconds")) ? " ago" : "");
    if (truth(get(doc, st, "shared")))
        say(f, "  breaker %s  calls %.0f  failures %.0f  timeouts %.0f", truth(get(doc, st, "breaker_open")) ? "OPEN" : "closed",
            number(get(doc, st, "calls"), 0), number(get(doc, st, "failures"), 0), number(get(doc, st, "timeouts"), 0));
    say(f, "%s", "");
    yaml_node_t *policies = get(doc, root, "policies");
    say(f, "%-24s %10s %10s %10s %10s %12s", "POLICY (last second)", "allowed", "delayed", "limited", "denied",
        "denied/min");
    if (count(policies) == 0)
        say(f, "  no decisions yet");
    for (size_t i = 0; i < count(policies); i++) {
        yaml_node_t *p = at(doc, policies, i), *per = get(doc, p, "per_second");
        char name[64], v[4][16], minute[16];
        printable(text(get(doc, p, "name")), name, 25);
        static const char *const series[] = {"allowed", "delayed", "limited", "denied"};
        for (int k = 0; k < 4; k++)
            human(last(doc, get(doc, per, series[k]), 1), v[k], sizeof v[k]);
        human(last(doc, get(doc, per, "denied"), 60), minute, sizeof minute);
        say(f, "%-24s %10s %10s %10s %10s %12s", name, v[0], v[1], v[2], v[3], minute);
        yaml_node_t *hh = get(doc, get(doc, p, "heavy_hitters"), "minute");
        heavy(f, doc, get(doc, hh, "requests"), "top by requests (1 min)");
        heavy(f, doc, get(doc, hh, "denials"), "top by denials (1 min)");
        say(f, "%s", "");
    }
    yaml_node_t *routes = get(doc, root, "routes");
    if (count(routes)) {
        say(f, "%-24s %9s %9s %11s %10s %12s", "ROUTE", "in flight", "queued", "forwarded", "rejected", "upstream ms");
        for (size_t i = 0; i < count(routes); i++) {
            yaml_node_t *r = at(doc, routes, i), *req = get(doc, r, "requests"), *up = get(doc, r, "upstream");
            char name[64];
            printable(text(get(doc, r, "name")), name, 25);
            double n = number(get(doc, up, "count"), 0);
            const char *inflight = text(get(doc, r, "inflight"));
            say(f, "%-24s %9s %9.0f %11.0f %10.0f %12.1f", name, inflight ? inflight : "-",
                number(get(doc, r, "queue_depth"), 0), number(get(doc, req, "forwarded"), 0),
                number(get(doc, req, "rejected"), 0), n ? 1000 * number(get(doc, up, "sum_seconds"), 0) / n : 0.0);
        }
    }
}

/* ---- the terminal ------------------------------------------------------------------------- */

static struct termios saved;
static bool raw_mode;
static volatile sig_atomic_t stop_signal;

static void on_signal(int sig) { stop_signal = sig; }

static void screen_enter(void) {
    if (tcgetattr(STDIN_FILENO, &saved) == 0) {
        struct termios t = saved;
        t.c_lflag &= (tcflag_t) ~(ICANON | ECHO);
        t.c_cc[VMIN] = 0;
        t.c_cc[VTIME] = 0;
        raw_mode = tcsetattr(STDIN_FILENO, TCSANOW, &t) == 0;
    }
    fputs("\x1b[?1049h\x1b[?25l", stdout); /* the alternate screen, no cursor */
}

static void screen_leave(void) {
    fputs("\x1b[?25h\x1b[?1049l", stdout);
    fflush(stdout);
    if (raw_mode)
        tcsetattr(STDIN_FILENO, TCSANOW, &saved);
}

static void draw(const frame_t *f, bool tty) {
    struct winsize ws = {0};
    size_t rows = f->n, cols = LINE_MAX_BYTES;
    if (tty && ioctl(STDOUT_FILENO, TIOCGWINSZ, &ws) == 0 && ws.ws_row > 0) {
        rows = ws.ws_row < f->n ? ws.ws_row : f->n;
        cols = ws.ws_col;
    }
    if (tty)
        fputs("\x1b[H", stdout);
    for (size_t i = 0; i < rows; i++) {
        /* cut at the width (bytes: keys are mostly ASCII) so nothing wraps */
        int width = (int)(strlen(f->line[i]) < cols ? strlen(f->line[i]) : cols);
        printf("%.*s%s%s", width, f->line[i], tty ? "\x1b[K" : "", i + 1 < rows || !tty ? "\n" : "");
    }
    if (tty)
        fputs("\x1b[J", stdout);
    fflush(stdout);
}

/* One poll: a frame from the daemon's answer, or one line saying why not. */
static void poll_once(frame_t *f, const char *host, const char *port, const char *token, const char *where,
                      bool live) {
    f->n = 0;
    sl_http_answer_t a;
    if (sl_http_get(host, port, "/v1/stats", token, 3000, &a) != 0) {
        say(f, "sluice top  %s: %s%s", where, a.error, live ? " (retrying; q quits)" : "");
        return;
    }
    if (a.status == 401)
        say(f, "sluice top  %s: the daemon wants its admin token: set SLUICE_ADMIN_TOKEN%s", where,
            token ? " (the one set was refused)" : "");
    else if (a.status == 404)
        say(f, "sluice top  %s: statistics are off: set observe: {heavy_hitters: on} in its configuration", where);
    else if (a.status != 200)
        say(f, "sluice top  %s: HTTP %d from /v1/stats", where, a.status);
    if (a.status != 200) {
        free(a.body);
        return;
    }
    yaml_parser_t parser;
    yaml_document_t doc;
    yaml_parser_initialize(&parser);
    yaml_parser_set_input_string(&parser, (const unsigned char *)a.body, a.body_len);
    if (yaml_parser_load(&parser, &doc) && yaml_document_get_root_node(&doc)) {
        render(f, &doc, where);
        yaml_document_delete(&doc);
    } else {
        say(f, "sluice top  %s: /v1/stats is not JSON: %s", where, parser.problem ? parser.problem : "empty");
    }
    yaml_parser_delete(&parser);
    free(a.body);
}

static int usage(void) {
    fprintf(stderr, "usage: sluice top [--http HOST:PORT] [--interval SECONDS] [--once]\n"
                    "  the admin token, if the daemon has one, from SLUICE_ADMIN_TOKEN\n");
    return 2;
}

int sl_cli_top(int argc, char **argv) {
    char host[256] = "127.0.0.1", port[16] = "8090", where[300];
    double interval = 1.0;
    bool once = false;
    for (int i = 1; i < argc; i++) {
        if (strcmp(argv[i], "--once") == 0) {
            once = true;
        } else if (strcmp(argv[i], "--http") == 0 && i + 1 < argc) {
            const char *v = argv[++i], *colon = strrchr(v, ':');
            size_t hl = colon ? (size_t)(colon - v) : 0;
            if (v[0] == '[' && hl >= 2 && v[hl - 1] == ']') /* [::1]:8090 */
                v++, hl -= 2;
            if (colon == NULL || hl == 0 || hl >= sizeof host || strlen(colon + 1) == 0 ||
                strlen(colon + 1) >= sizeof port) {
                fprintf(stderr, "sluice top: --http wants HOST:PORT, not %s\n", argv[i]);
                return 2;
            }
            memcpy(host, v, hl);
            host[hl] = '\0';
            snprintf(port, sizeof port, "%s", colon + 1);
        } else if (strcmp(argv[i], "--interval") == 0 && i + 1 < argc) {
            char *end;
            interval = strtod(argv[++i], &end);
            if (*end != '\0' || !(interval >= 0.2 && interval <= 3600)) {
                fprintf(stderr, "sluice top: --interval wants seconds from 0.2 to 3600, not %s\n", argv[i]);
                return 2;
            }
        } else {
            return usage();
        }
    }
    const char *token = getenv("SLUICE_ADMIN_TOKEN");
    if (token && *token == '\0')
        token = NULL;
    for (const char *t = token; t && *t; t++)
        if ((unsigned char)*t < 0x21 || (unsigned char)*t > 0x7e) {
            fprintf(stderr, "sluice top: SLUICE_ADMIN_TOKEN holds a space or control byte: not a token\n");
            return 2;
        }
    snprintf(where, sizeof where, "%s:%s", host, port);
    static char lines[200][LINE_MAX_BYTES];
    frame_t f = {.line = lines, .max = 200};
    bool tty = isatty(STDOUT_FILENO) && !once;
    if (!tty) {
        poll_once(&f, host, port, token, where, false);
        draw(&f, false);
        return f.n > 1 ? 0 : 1;
    }
    struct sigaction sa = {.sa_handler = on_signal};
    sigaction(SIGINT, &sa, NULL);
    sigaction(SIGTERM, &sa, NULL);
    sigaction(SIGWINCH, &sa, NULL); /* wakes the wait: the next frame fits the new size */
    screen_enter();
    for (bool quit = false; !quit && stop_signal != SIGINT && stop_signal != SIGTERM;) {
        struct timespec t0, t1;
        clock_gettime(CLOCK_MONOTONIC, &t0);
        poll_once(&f, host, port, token, where, true);
        draw(&f, true);
        /* wait out the interval from the start of this poll, reading keys */
        for (;;) {
            clock_gettime(CLOCK_MONOTONIC, &t1);
            double left = interval - ((double)(t1.tv_sec - t0.tv_sec) + (double)(t1.tv_nsec - t0.tv_nsec) / 1e9);
            if (left <= 0 || stop_signal == SIGINT || stop_signal == SIGTERM)
                break;
            struct pollfd p = {.fd = STDIN_FILENO, .events = POLLIN};
            int n = poll(&p, 1, (int)(left * 1000) + 1);
            if (n < 0 && errno == EINTR) {
                if (stop_signal == SIGWINCH) {
                    stop_signal = 0;
                    draw(&f, true);
                }
                continue;
            }
            if (n <= 0)
                continue;
            char c;
            ssize_t r = read(STDIN_FILENO, &c, 1);
            if (r == 0 || (p.revents & (POLLHUP | POLLERR))) {
                quit = true; /* no more keys will come */
                break;
            }
            if (r == 1 && (c == 'q' || c == 'Q' || c == 3)) {
                quit = true;
                break;
            }
        }
    }
    screen_leave();
    return 0;
}
