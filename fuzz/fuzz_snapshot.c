/* fuzz_snapshot.c -- libFuzzer target for the snapshot parser.
 *
 * Any bytes: the parser must answer SL_OK or an error, never crash, leak or
 * read out of bounds. Each input is parsed as it is (the checksum stops
 * nearly every mutation) and once more with its checksum recomputed, so that
 * the record walk behind the checksum gets fuzzed too.
 * Build and run: make fuzz (clang, ASan + UBSan, under CTest).
 */
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include <xxhash.h>

#include "sluice.h"
#include "store/snapshot.h"

static void parse(const uint8_t *data, size_t size) {
    sl__snapshot_t snap;
    if (sl__snapshot_parse(data, size, 0, &snap) == SL_OK)
        sl__snapshot_release(&snap);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
    parse(data, size);
    if (size < 64)
        return 0;
    uint8_t *sealed = malloc(size);
    if (sealed == NULL)
        return 0;
    memcpy(sealed, data, size);
    uint64_t sum = XXH3_64bits(sealed, size - 16);
    for (int i = 0; i < 8; i++)
        sealed[size - 16 + i] = (uint8_t)(sum >> (8 * i));
    parse(sealed, size);
    free(sealed);
    return 0;
}
