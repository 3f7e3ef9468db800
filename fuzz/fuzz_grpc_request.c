/* fuzz_grpc_request.c -- the gRPC front's request decoder
 * (sld_grpc_rls_decode, read by hand) against protobuf-c's
 * (sld_grpc_rls_decode_pb, the reference): any bytes, both answer the same
 * (code, message, domain, every descriptor's entries, limit and hits) or
 * the target aborts; no crash, no leak, every accepted request within its
 * bounds, and the descriptor keys built from it. */
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>

#include "server/grpc/grpc_decide.h"
#include "server/grpc/grpc_messages.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
    sld_grpc_rls_request_t r, ref;
    char err[160] = "", err_pb[160] = "";
    int rc = sld_grpc_rls_decode(data, size, &r, err, sizeof err);
    int rc_pb = sld_grpc_rls_decode_pb(data, size, &ref, err_pb, sizeof err_pb);
    const char *what = sld_grpc_rls_differ(rc, &r, err, rc_pb, &ref, err_pb);
    if (what != NULL) {
        fprintf(stderr, "the hand reader and protobuf-c differ: %s (\"%s\" / \"%s\")\n", what, err, err_pb);
        abort();
    }
    if (rc_pb == SL_OK)
        sld_grpc_rls_request_free(&ref);
    if (rc != SL_OK)
        return 0;
    if (r.domain.len == 0 || r.ndescriptors == 0 || r.ndescriptors > SLD_GRPC_MAX_DESCRIPTORS)
        abort();
    for (size_t i = 0; i < r.ndescriptors; i++) {
        const sld_grpc_descriptor_t *d = &r.descriptors[i];
        if (d->nentries == 0 || d->nentries > SLD_GRPC_MAX_ENTRIES || d->hits == 0)
            abort();
        char *key;
        size_t key_len;
        if (sld_grpc_descriptor_key(d, 1024, &key, &key_len) == SL_OK)
            free(key);
    }
    sld_grpc_rls_request_free(&r);
    return 0;
}
