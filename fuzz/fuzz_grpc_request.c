/* fuzz_grpc_request.c -- the gRPC front's request decoder
 * (sld_grpc_rls_decode) and the descriptor keys built from what it
 * accepts: any bytes, no crash, no leak, and every accepted request within
 * its bounds. */
#include <stdint.h>
#include <stdlib.h>

#include "server/grpc/grpc_decide.h"
#include "server/grpc/grpc_messages.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
    sld_grpc_rls_request_t r;
    char err[160];
    if (sld_grpc_rls_decode(data, size, &r, err, sizeof err) != SL_OK)
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
