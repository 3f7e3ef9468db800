/* grpc_config.c -- the gRPC front's settings (see grpc_config.h). */
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "server/grpc/grpc_config.h"

/* a certificate chain or a key: far below this */
#define MAX_PEM_BYTES (1u << 20)

const sld_config_listen_t sld_grpc_listen_key = {
    .name = "grpc",
    .fallback = NULL,
    .option = "--grpc",
    .help = "gRPC listen address: Envoy's rate limit service (default off)",
};

const char *sld_grpc_listen(const sld_config_t *cfg) {
    const char *addr = sld_config_listen(cfg, sld_grpc_listen_key.name);
    return addr ? addr : "";
}

typedef struct raw_tls {
    char *cert;
    char *key;
} raw_tls_t;

typedef struct raw_grpc {
    raw_tls_t *tls;
} raw_grpc_t;

static const cyaml_schema_field_t tls_fields[] = {
    SLD_CFG_STR("cert", 0, raw_tls_t, cert),
    SLD_CFG_STR("key", 0, raw_tls_t, key),
    CYAML_FIELD_END,
};

static const cyaml_schema_field_t grpc_fields[] = {
    CYAML_FIELD_MAPPING_PTR("tls", SLD_CFG_NULLABLE | SLD_CFG_OPT, raw_grpc_t, tls, tls_fields),
    CYAML_FIELD_END,
};

static const cyaml_schema_value_t grpc_schema = {
    CYAML_VALUE_MAPPING(CYAML_FLAG_POINTER, raw_grpc_t, grpc_fields),
};

static void grpc_free(void *value) {
    sld_grpc_settings_t *s = value;
    if (s == NULL)
        return;
    free(s->cert_path);
    free(s->key_path);
    free(s->cert_pem);
    if (s->key_pem) /* a private key: not left in freed memory */
        memset(s->key_pem, 0, strlen(s->key_pem));
    free(s->key_pem);
    free(s);
}

/* The PEM file at path, NUL-terminated, in *out; an error about `what`
 * (grpc.tls.cert) otherwise. Whether OpenSSL takes it is known when the
 * front starts: this catches a missing, unreadable or plainly wrong file. */
static int read_pem(sld_config_ctx_t *c, const char *what, const char *path, char **out) {
    char shown[64];
    if (path[0] == '\0')
        return sld_config_bad(c, what, "is empty (a PEM file is expected)");
    FILE *f = fopen(path, "rb");
    if (f == NULL)
        return sld_config_bad(c, what, "cannot read '%s'", sld_config_show(path, shown));
    char *buf = malloc(MAX_PEM_BYTES + 1);
    size_t n = buf ? fread(buf, 1, MAX_PEM_BYTES + 1, f) : 0;
    bool failed = buf && ferror(f);
    fclose(f);
    if (buf == NULL)
        return sld_config_oom(c);
    buf[n <= MAX_PEM_BYTES ? n : MAX_PEM_BYTES] = '\0';
    *out = buf; /* freed with the settings, even on an error */
    if (failed)
        return sld_config_bad(c, what, "cannot read '%s'", sld_config_show(path, shown));
    if (n > MAX_PEM_BYTES)
        return sld_config_bad(c, what, "'%s' is larger than 1 MiB: not a PEM file",
                              sld_config_show(path, shown));
    if (strlen(buf) != n || strstr(buf, "-----BEGIN ") == NULL)
        return sld_config_bad(c, what, "'%s' is not a PEM file (no '-----BEGIN ')",
                              sld_config_show(path, shown));
    return SL_OK;
}

static int grpc_parse(sld_config_ctx_t *c, const void *raw, void **out) {
    const raw_grpc_t *r = raw;
    *out = NULL;
    if (r->tls == NULL)
        return SL_OK; /* grpc: with nothing in it: cleartext */
    sld_grpc_settings_t *s = calloc(1, sizeof *s);
    if (s == NULL)
        return sld_config_oom(c);
    *out = s;
    if ((s->cert_path = sld_config_dup(c, r->tls->cert)) == NULL ||
        (s->key_path = sld_config_dup(c, r->tls->key)) == NULL)
        return SL_ENOMEM;
    int rc = read_pem(c, "grpc.tls.cert", s->cert_path, &s->cert_pem);
    return rc != SL_OK ? rc : read_pem(c, "grpc.tls.key", s->key_path, &s->key_pem);
}

const sld_config_section_t sld_grpc_section = {
    .name = "grpc",
    .schema = &grpc_schema,
    .listens = false,
    .parse = grpc_parse,
    .check = NULL,
    .free = grpc_free,
};

const sld_grpc_settings_t *sld_grpc_tls(const sld_config_t *cfg) {
    return cfg ? sld_config_value(cfg, &sld_grpc_section) : NULL;
}
