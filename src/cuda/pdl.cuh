/* Programmatic dependent launch (compute capability 9.0 and up): a kernel
 * launched with it may start while the kernel before it in the stream still
 * runs; it does what does not depend on that kernel (barrier set-up, loads
 * of weights), then pdl_wait() until the kernel before has finished and its
 * writes are visible, then pdl_trigger() lets the kernel after it start the
 * same way. Both are no-ops in a kernel launched without it, and compile to
 * nothing below 9.0. Every kernel launched with it must call pdl_wait()
 * before it reads or writes any buffer another kernel touches: that keeps
 * "each kernel waits for the one before" transitive along the stream.
 * The launch helpers below also take thread-block clusters (sm_90a kernels). */
#ifndef HRMT_CUDA_PDL_CUH
#define HRMT_CUDA_PDL_CUH

#include <cuda_runtime.h>

#include "cuda/link_trace.cuh"

__device__ __forceinline__ void pdl_wait() {
#ifdef HRMT_CUDA_LINK_TRACE
    const unsigned long long t_call = lt_now();
#endif
#if defined(__CUDA_ARCH__) && __CUDA_ARCH__ >= 900
    asm volatile("griddepcontrol.wait;" ::: "memory");
#endif
#ifdef HRMT_CUDA_LINK_TRACE
    lt_record(t_call);
#endif
}
__device__ __forceinline__ void pdl_trigger() {
#if defined(__CUDA_ARCH__) && __CUDA_ARCH__ >= 900
    asm volatile("griddepcontrol.launch_dependents;" ::: "memory");
#endif
}

/* A launch config with programmatic dependent launch when pdl is set and
 * clusters of `cl` CTAs along x when cl > 1; `at` holds its attributes. */
inline cudaLaunchConfig_t launch_config(dim3 grid, dim3 block, size_t smem, cudaStream_t st,
                                        int pdl, int cl, cudaLaunchAttribute (&at)[2]) {
    cudaLaunchConfig_t cfg = {};
    cfg.gridDim = grid;
    cfg.blockDim = block;
    cfg.dynamicSmemBytes = smem;
    cfg.stream = st;
    cfg.attrs = at;
    cfg.numAttrs = 0;
    if (pdl) {
        at[cfg.numAttrs].id = cudaLaunchAttributeProgrammaticStreamSerialization;
        at[cfg.numAttrs++].val.programmaticStreamSerializationAllowed = 1;
    }
    if (cl > 1) {
        at[cfg.numAttrs].id = cudaLaunchAttributeClusterDimension;
        at[cfg.numAttrs++].val.clusterDim = {(unsigned)cl, 1, 1};
    }
    return cfg;
}

/* kern<<<grid, block, smem, st>>>(args...) in clusters of `cl` CTAs (1:
 * none), with programmatic dependent launch when pdl is set (the caller
 * checked that the device has both). */
template <class... P, class... A>
cudaError_t cluster_launch(void (*kern)(P...), int cl, dim3 grid, dim3 block, size_t smem,
                           cudaStream_t st, int pdl, A &&...args) {
    cudaLaunchAttribute at[2];
    const cudaLaunchConfig_t cfg = launch_config(grid, block, smem, st, pdl, cl, at);
    return cudaLaunchKernelEx(&cfg, kern, static_cast<A &&>(args)...);
}
template <class... P, class... A>
cudaError_t pdl_launch(void (*kern)(P...), dim3 grid, dim3 block, size_t smem, cudaStream_t st,
                       int pdl, A &&...args) {
    return cluster_launch(kern, 1, grid, block, smem, st, pdl, static_cast<A &&>(args)...);
}

#endif
