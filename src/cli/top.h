/* top.h -- `sluice top`: the daemon's /v1/stats in the terminal, redrawn
 * in place once a second (like htop), for hosts without a browser: per
 * policy the decisions of the last second and the last minute, the heavy
 * hitters by requests and by denials with what they have left, the store,
 * the gateway's routes.
 *
 *   sluice top [--http HOST:PORT] [--interval SECONDS] [--once]
 *
 * HOST:PORT defaults to 127.0.0.1:8090 (sluiced's HTTP default). The admin
 * token, when the daemon has one, comes from the environment variable
 * SLUICE_ADMIN_TOKEN (never a command-line argument, which any user can
 * read in ps). Plain ANSI escapes, no curses: the alternate screen, home,
 * clear to end of line; `q` (or Ctrl-C) quits and gives the screen back.
 * --once (or a stdout that is not a terminal) prints one frame and exits.
 * The JSON is read with libyaml (JSON is YAML's flow style), already a
 * dependency of the daemon's configuration.
 *
 * Not here: HTTP (http_get.h).
 */
#ifndef SL_CLI_TOP_H
#define SL_CLI_TOP_H

/* argv[0] is "top". Returns the process's exit status. */
int sl_cli_top(int argc, char **argv);

#endif
