/* sm_90 bulk copies (the TMA engine, 1-D: contiguous bytes global -> shared)
 * completing on a shared-memory mbarrier, for model_grid.cu: one thread
 * issues a whole row where cp.async needs one instruction per 16 bytes per
 * thread, and the copies in flight are not bounded by the SM's load queue. */
#ifndef HRMT_CUDA_TMA_BULK_CUH
#define HRMT_CUDA_TMA_BULK_CUH

#include <stdint.h>

namespace {

__device__ __forceinline__ unsigned smem_addr(const void *p) {
    return (unsigned)__cvta_generic_to_shared(p);
}

/* An mbarrier expecting one arrival per phase. */
__device__ __forceinline__ void mbar_init(uint64_t *bar) {
    asm volatile("mbarrier.init.shared::cta.b64 [%0], 1;\n" ::"r"(smem_addr(bar)) : "memory");
}

/* The one arrival of this phase, announcing `bytes` of copies to complete it. */
__device__ __forceinline__ void mbar_expect(uint64_t *bar, unsigned bytes) {
    asm volatile("mbarrier.arrive.expect_tx.shared::cta.b64 _, [%0], %1;\n" ::"r"(smem_addr(bar)),
                 "r"(bytes)
                 : "memory");
}

/* Waits until the phase with this parity has completed. */
__device__ __forceinline__ void mbar_wait(uint64_t *bar, unsigned parity) {
    const unsigned a = smem_addr(bar);
    unsigned done = 0;
    do {
        asm volatile("{\n .reg .pred p;\n mbarrier.try_wait.parity.shared::cta.b64 p, [%1], %2;\n"
                     " selp.u32 %0, 1, 0, p;\n}\n"
                     : "=r"(done)
                     : "r"(a), "r"(parity)
                     : "memory");
    } while (!done);
}

/* bytes (a multiple of 16; both addresses 16-byte aligned) from global src
 * to shared dst, completing on bar. */
__device__ __forceinline__ void bulk_copy(void *dst, const void *src, unsigned bytes, uint64_t *bar) {
    asm volatile(
        "cp.async.bulk.shared::cluster.global.mbarrier::complete_tx::bytes [%0], [%1], %2, [%3];\n" ::
            "r"(smem_addr(dst)),
        "l"(src), "r"(bytes), "r"(smem_addr(bar))
        : "memory");
}

/* Orders this thread's earlier shared-memory accesses (generic proxy) before
 * later bulk copies into the same memory (async proxy). */
__device__ __forceinline__ void fence_proxy_async() {
    asm volatile("fence.proxy.async.shared::cta;\n" ::: "memory");
}

} // namespace

#endif
