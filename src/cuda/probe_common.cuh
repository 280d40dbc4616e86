/* Helpers shared by probe_chase.cu and probe_stream.cu: status mapping with a
 * message, timers, and a random bijection of [0, n) for the chase cycles. */
#ifndef HRMT_CUDA_PROBE_COMMON_CUH
#define HRMT_CUDA_PROBE_COMMON_CUH

#include <cuda_runtime.h>
#include <stdint.h>
#include <stdio.h>

#include "cuda/cuda_internal.cuh"
#include "cuda/probe_cuda.h"

/* Internal linkage for everything here: no clash with the other CUDA files
 * (rowops_probe.cu has its own stream kernels). */
namespace {

/* Maps a CUDA status; `what` names the call. A failed allocation is not
 * sticky, so it is cleared for the next caller. */
inline hrmt_status probe_map(cudaError_t e, const char *what, char *err, size_t errlen) {
    if (e == cudaSuccess) return HRMT_OK;
    if (e == cudaErrorMemoryAllocation) (void)cudaGetLastError();
    return hrmt_cuda_map(e, what, err, errlen);
}

/* Launch check: the pending launch error, if any, under the kernel's name. */
inline hrmt_status probe_launched(const char *kernel, char *err, size_t errlen) {
    return probe_map(cudaGetLastError(), kernel, err, errlen);
}

inline void probe_err(char *err, size_t errlen, const char *msg, size_t a) {
    if (err && errlen) snprintf(err, errlen, msg, a);
}

/* The device's nanosecond timer and the SM's cycle counter; asm volatile keeps
 * them in program order with the chase's asm volatile loads. */
__device__ __forceinline__ uint64_t probe_globaltimer(void) {
    uint64_t t;
    asm volatile("mov.u64 %0, %%globaltimer;" : "=l"(t));
    return t;
}
__device__ __forceinline__ uint64_t probe_clock(void) {
    uint64_t t;
    asm volatile("mov.u64 %0, %%clock64;" : "=l"(t));
    return t;
}

/* A pseudo-random bijection of [0, n): a 4-round balanced Feistel network on
 * 2*hb bits (2^(2 hb) < 4n) with cycle walking. Visiting perm(0), perm(1), ...
 * gives one random cycle through every node, built in O(n) on the device
 * without a host shuffle or a sort (Sattolo's shuffle on the host would cost
 * seconds at HBM-sized sets). */
struct probe_perm {
    uint64_t n;
    unsigned hb;
    uint32_t mask;
    uint32_t key[4];
};

inline probe_perm probe_perm_make(uint64_t n, uint64_t seed) {
    probe_perm p;
    p.n = n;
    unsigned bits = 1;
    while (bits < 64 && (n - 1) >> bits) bits++;
    p.hb = (bits + 1) / 2;
    p.mask = (uint32_t)((1ull << p.hb) - 1);
    uint64_t s = seed ^ 0x9E3779B97F4A7C15ull ^ n;
    for (int r = 0; r < 4; r++) {
        s ^= s << 13;
        s ^= s >> 7;
        s ^= s << 17;
        p.key[r] = (uint32_t)(s >> 16);
    }
    return p;
}

__device__ __forceinline__ uint32_t probe_hash(uint32_t x) {
    x ^= x >> 16;
    x *= 0x7feb352du;
    x ^= x >> 15;
    x *= 0x846ca68bu;
    x ^= x >> 16;
    return x;
}

__device__ __forceinline__ uint64_t probe_permute(uint64_t i, const probe_perm &p) {
    uint64_t x = i;
    do {
        uint32_t l = (uint32_t)(x >> p.hb), r = (uint32_t)x & p.mask;
#pragma unroll
        for (int k = 0; k < 4; k++) {
            const uint32_t f = probe_hash(r ^ p.key[k]) & p.mask;
            const uint32_t nl = r;
            r = l ^ f;
            l = nl;
        }
        x = ((uint64_t)l << p.hb) | r;
    } while (x >= p.n);
    return x;
}

} // namespace

#endif
