/* hello.c -- HELLO's arguments and reply (see hello.h). */
#include <stdio.h>

#include "server/resp/hello.h"
#include "sluice.h"

const char *sld_hello_parse(const sld_arg_t *argv, size_t argc, sld_hello_t *h, char *err,
                            size_t errlen) {
    *h = (sld_hello_t){0};
    if (argc < 2)
        return NULL;
    int64_t v;
    if (sld_arg_int(&argv[1], &v) != SL_OK) {
        snprintf(err, errlen, "ERR Protocol version is not an integer or out of range");
        return err;
    }
    if (v != SLD_PROTO_2 && v != SLD_PROTO_3) {
        snprintf(err, errlen, "NOPROTO unsupported protocol version");
        return err;
    }
    h->proto = (int)v;
    for (size_t i = 2; i < argc; i++) {
        if (sld_arg_is(&argv[i], "AUTH") && argc - i >= 3) {
            h->user = &argv[i + 1];
            h->pass = &argv[i + 2];
            i += 2;
        } else if (sld_arg_is(&argv[i], "SETNAME") && argc - i >= 2) {
            h->name = &argv[i + 1];
            i += 1;
            if (!sld_hello_name_ok(h->name)) {
                snprintf(err, errlen,
                         "ERR Client names cannot contain spaces, newlines or special characters.");
                return err;
            }
        } else {
            snprintf(err, errlen, "ERR Syntax error in HELLO option '%.*s'",
                     (int)(argv[i].len > 64 ? 64 : argv[i].len), argv[i].ptr);
            return err;
        }
    }
    return NULL;
}

int sld_hello_name_ok(const sld_arg_t *name) {
    for (size_t i = 0; i < name->len; i++)
        if (name->ptr[i] < '!' || name->ptr[i] > '~')
            return 0;
    return 1;
}

void sld_hello_reply(sld_buf_t *out, int proto, uint64_t id) {
    sld_reply_map(out, proto, 7);
    sld_reply_bulk_str(out, "server");
    sld_reply_bulk_str(out, "sluice");
    sld_reply_bulk_str(out, "version");
    sld_reply_bulk_str(out, SL_VERSION_STRING);
    sld_reply_bulk_str(out, "proto");
    sld_reply_int(out, proto);
    sld_reply_bulk_str(out, "id");
    sld_reply_int(out, (int64_t)id);
    sld_reply_bulk_str(out, "mode");
    sld_reply_bulk_str(out, "standalone");
    sld_reply_bulk_str(out, "role");
    sld_reply_bulk_str(out, "master");
    sld_reply_bulk_str(out, "modules");
    sld_reply_array(out, 0);
}
