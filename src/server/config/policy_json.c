/* policy_json.c -- one policy as the admin API receives it: JSON, written
 * as in the file. JSON is YAML's flow syntax, so the body goes through the
 * very same loader (config.c) inside a small document, and every check and
 * message is the file's; messages are then told about the body ("request
 * body:LINE", "in the policy").
 *
 * Not here: the HTTP side of the admin API (http/), copies of the whole
 * configuration (config_edit.c).
 */
#include <ctype.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "server/base/buf.h"
#include "server/config/config.h"
#include "server/config/config_private.h"

/* Messages about the wrapped document, told about the body instead: lines
 * counted from the body's first, "policies[0]." left out. */
static void unwrap_error(char *err, size_t err_len, long shift) {
    const char *prefix = "request body:";
    size_t pl = strlen(prefix);
    char out[SLD_MAX_ERROR], *o = out;
    size_t room = sizeof out;
    const char *m = err;
    if (strncmp(m, prefix, pl) == 0 && isdigit((unsigned char)m[pl])) {
        char *end;
        long line = strtol(m + pl, &end, 10) - shift;
        int n = snprintf(o, room, "request body:%ld", line > 0 ? line : 1);
        o += n;
        room -= (size_t)n;
        m = end;
    }
    while (*m && room > 1) {
        if (strncmp(m, "policies[0].", 12) == 0) {
            m += 12;
        } else if (strncmp(m, "in policies[0]", 14) == 0) {
            int n = snprintf(o, room, "in the policy");
            o += n < (int)room ? n : (int)room - 1;
            room -= n < (int)room ? (size_t)n : room - 1;
            m += 14;
        } else {
            *o++ = *m++;
            room--;
        }
    }
    *o = '\0';
    snprintf(err, err_len, "%s", out);
}

int sld_config_parse_policy(const char *name, const char *json, size_t len, uint32_t max_key_bytes,
                            sld_policy_t **out, char *err, size_t err_len) {
    /* The body is the policy as the file writes it, in JSON, which is YAML's
     * flow syntax: it goes through the very same loader and checks, in a
     * document with the running key size limit. The name comes from the
     * path; the body may repeat it. */
    size_t n = strlen(name);
    bool name_ok = n >= 1 && n <= 64;
    for (size_t k = 0; name_ok && k < n; k++)
        name_ok =
            isalnum((unsigned char)name[k]) || name[k] == '_' || name[k] == '.' || name[k] == '-';
    if (!name_ok) {
        snprintf(err, err_len, "policy name: expected 1 to 64 of A-Z a-z 0-9 _ . -");
        return SL_EINVAL;
    }
    size_t i = 0;
    while (i < len && (json[i] == ' ' || json[i] == '\t' || json[i] == '\r' || json[i] == '\n'))
        i++;
    if (i == len || json[i] != '{') {
        snprintf(err, err_len, "request body: expected a JSON object");
        return SL_EINVAL;
    }
    sld_buf_t doc = {0};
    sld_buf_printf(&doc, "limits: {max_key_bytes: %u}\npolicies:\n  - ", max_key_bytes);
    sld_buf_append(&doc, json + i, len - i);
    sld_buf_append(&doc, "\n", 1);
    if (doc.failed) {
        sld_buf_free(&doc);
        return SL_ENOMEM;
    }
    long shift = 2; /* the document's lines before the body's '{' ... */
    for (size_t k = 0; k < i; k++)
        shift -= json[k] == '\n'; /* ... less the body's own, which were dropped */
    sld_config_t *cfg = NULL;
    int rc = sld__cfg_parse("request body", name, doc.data, doc.len, &cfg, err, err_len);
    sld_buf_free(&doc);
    if (rc != SL_OK) {
        if (err && err_len)
            unwrap_error(err, err_len, shift);
        return rc;
    }
    sld_policy_t *p = malloc(sizeof *p);
    if (p == NULL) {
        sld_config_free(cfg);
        return SL_ENOMEM;
    }
    *p = cfg->policies[0]; /* taken over: the config forgets it */
    cfg->npolicies = 0;
    sld_config_free(cfg);
    *out = p;
    return SL_OK;
}

void sld_config_policy_free(sld_policy_t *p) {
    if (p == NULL)
        return;
    sld__cfg_policy_free_fields(p);
    free(p);
}
