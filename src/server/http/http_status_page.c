/* http_status_page.c -- GET /status (see http_status_page.h). */
#include "server/http/http_api.h"  /* the daemon's state, as every HTTP route sees it */
#include "server/http/http_routes.h"
#include "server/http/http_status_page.h"

static void status_page(const sld_http_call_t *c) {
    sld_http_reply_t *r = c->reply;
    r->status = 200;
    r->content_type = "text/html; charset=utf-8";
    sld_buf_append(&r->body, sld_status_page_html, sld_status_page_html_len);
}

const sld_http_route_t sld_http_status_page_routes[] = {
    {SLD_M_GET | SLD_M_HEAD, SLD_MATCH_EXACT, "/status", status_page, 0},
    {0, SLD_MATCH_EXACT, NULL, NULL, 0},
};
