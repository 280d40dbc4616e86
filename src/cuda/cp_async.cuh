/* cp.async helpers (sm_80 and later): 16-byte global -> shared copies that
 * bypass L1, their commit groups and waits. Shared by the own GEMM kernels
 * (model_gemm_kernels.cuh) and the persistent L-level kernel. */
#ifndef HRMT_CUDA_CP_ASYNC_CUH
#define HRMT_CUDA_CP_ASYNC_CUH

namespace {

/* src_bytes 0 writes zeros (rows and k past a matrix) without reading. */
__device__ __forceinline__ void cp_async16(void *dst, const void *src, int src_bytes) {
    unsigned s = (unsigned)__cvta_generic_to_shared(dst);
    asm volatile("cp.async.cg.shared.global [%0], [%1], 16, %2;\n" ::"r"(s), "l"(src),
                 "r"(src_bytes));
}
__device__ __forceinline__ void cp_async_commit() { asm volatile("cp.async.commit_group;\n" ::); }
template <int N>
__device__ __forceinline__ void cp_async_wait() {
    asm volatile("cp.async.wait_group %0;\n" ::"n"(N));
}

} // namespace

#endif
