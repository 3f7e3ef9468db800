/* bench_rng.h -- the benchmarks' random numbers: splitmix64 and a uniform
 * pick below n. Shared by sluice_bench.c and rmw_ceiling.c so that the
 * ceiling pays for choosing a key exactly what a decide worker pays.
 *
 * Not a library interface: bench/ only.
 */
#ifndef SL_BENCH_RNG_H
#define SL_BENCH_RNG_H

#include <stdint.h>

static inline uint64_t splitmix64(uint64_t *state) {
    uint64_t z = (*state += UINT64_C(0x9e3779b97f4a7c15));
    z = (z ^ (z >> 30)) * UINT64_C(0xbf58476d1ce4e5b9);
    z = (z ^ (z >> 27)) * UINT64_C(0x94d049bb133111eb);
    return z ^ (z >> 31);
}

/* Uniform in [0, n) without a division: the high half of a 32x32 product. */
static inline uint32_t below(uint64_t r, uint32_t n) {
    return (uint32_t)(((r >> 32) * (uint64_t)n) >> 32);
}

#endif
