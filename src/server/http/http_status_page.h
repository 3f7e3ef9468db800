/* http_status_page.h -- GET /status: the live status page, one HTML file
 * (src/server/http/status/status.html) built into the daemon by
 * scripts/embed.cmake. The page polls /v1/stats (http_stats.c) once a
 * second and draws it; it carries no data itself, so it is served without
 * the admin token, and asks for the token (a form field, sent as
 * Authorization: Bearer) when /v1/stats wants one.
 *
 * Not here: the figures (http_stats.c), the route table (http_routes.h).
 */
#ifndef SL_SERVER_HTTP_STATUS_PAGE_H
#define SL_SERVER_HTTP_STATUS_PAGE_H

/* The page's bytes, generated at build time (NUL-terminated). */
extern const char sld_status_page_html[];
extern const unsigned long sld_status_page_html_len;

#endif
