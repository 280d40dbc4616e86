/* cp.async helpers (sm_80 and later): 16-byte global -> shared copies that
 * bypass L1, their commit groups and waits. Shared by the own GEMM kernels
 * (model_gemm_kernels.cuh) and the persistent L-level kernel. */
#ifndef HRMT_CUDA_CP_ASYNC_CUH
#define HRMT_CUDA_CP_ASYNC_CUH

#include <stdint.h>

namespace {

/* src_bytes 0 writes zeros (rows and k past a matrix) without reading. */
__device__ __forceinline__ void cp_async16(void *dst, const void *src, int src_bytes) {
    unsigned s = (unsigned)__cvta_generic_to_shared(dst);
    asm volatile("cp.async.cg.shared.global [%0], [%1], 16, %2;\n" ::"r"(s), "l"(src),
                 "r"(src_bytes));
}
/* The same with an L2 eviction priority of evict-first: for data read
 * here for the last time, so that the L2 gives up its lines before others. */
__device__ __forceinline__ uint64_t l2_evict_first_policy() {
    uint64_t pol;
    asm volatile("createpolicy.fractional.L2::evict_first.b64 %0, 1.0;\n" : "=l"(pol));
    return pol;
}
__device__ __forceinline__ void cp_async16_hint(void *dst, const void *src, int src_bytes,
                                                uint64_t pol) {
    unsigned s = (unsigned)__cvta_generic_to_shared(dst);
    asm volatile("cp.async.cg.shared.global.L2::cache_hint [%0], [%1], 16, %2, %3;\n" ::"r"(s),
                 "l"(src), "r"(src_bytes), "l"(pol));
}
__device__ __forceinline__ void cp_async_commit() { asm volatile("cp.async.commit_group;\n" ::); }
template <int N>
__device__ __forceinline__ void cp_async_wait() {
    asm volatile("cp.async.wait_group %0;\n" ::"n"(N));
}

} // namespace

#endif
