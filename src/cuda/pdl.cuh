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

/* Flag links (HRMT_CUDA_FLAG_LINKS, opt-in; model_internal.cuh's cu_links
 * on the host): a kernel whose kernel before releases a counter waits for
 * that counter to reach the kernel before's CTA count (each of its CTAs adds
 * one after its last store) instead of griddepcontrol.wait, which waits for
 * the whole grid to end and its writes to be flushed. Either way every CTA
 * of the kernel before has done all its memory work when the wait returns,
 * so "each waits for the one before" stays transitive along the stream.
 * wait NULL: pdl_wait(); rel NULL: nothing to release. Every field zero is
 * the plain launch. A kernel of another kind after such a kernel waits by
 * pdl_wait for that one grid: what the kernels before it stored is ordered
 * before by the counters' release / acquire chain (every CTA of each
 * kernel acquired the one before's count before its own release), and the
 * grid's end orders that for the waiter. */
struct cu_link {
    const unsigned *wait;
    unsigned want;
    unsigned *rel;
};

#if defined(__CUDA_ARCH__) && __CUDA_ARCH__ >= 900
/* Until the count is reached, polled relaxed (an acquire load also
 * invalidates L1 each time). */
__device__ __forceinline__ void link_poll(const cu_link &k) {
    unsigned v;
    do {
        asm volatile("ld.relaxed.gpu.global.u32 %0, [%1];" : "=r"(v) : "l"(k.wait) : "memory");
    } while ((int)(v - k.want) < 0);
}
/* Then one acquire load (it passes at once), and the async proxy (TMA)
 * ordered after it: the grid end's flush did this for pdl_wait. */
__device__ __forceinline__ void link_acquire(const cu_link &k) {
    asm volatile("{\n\t.reg .b32 t;\n\tld.acquire.gpu.global.u32 t, [%0];\n\t}" ::"l"(k.wait)
                 : "memory");
    asm volatile("fence.proxy.async.global;" ::: "memory");
}
#endif

/* The wait for THREADS threads (a multiple of 32) that meet at named
 * barrier ID: only the poller polls (every polling warp is one more request
 * a round trip on the counter's L2 line, beside the kernel before's
 * traffic), then each acquires once. ID < 0: the one calling thread alone. */
template <int ID, int THREADS>
__device__ __forceinline__ void link_wait_group(const cu_link &k, bool poller) {
#if defined(__CUDA_ARCH__) && __CUDA_ARCH__ >= 900
    if (k.wait) {
#ifdef HRMT_CUDA_LINK_TRACE
        const unsigned long long t_call = lt_now();
#endif
        if (poller) link_poll(k);
        if constexpr (ID >= 0) asm volatile("bar.sync %0, %1;" ::"n"(ID), "n"(THREADS) : "memory");
        link_acquire(k);
#ifdef HRMT_CUDA_LINK_TRACE
        lt_record(t_call);
#endif
        return;
    }
#endif
    pdl_wait();
}
__device__ __forceinline__ void link_wait(const cu_link &k) { link_wait_group<-1, 0>(k, true); }

/* The CTA's hand-over after its last store, by the THREADS threads (a
 * multiple of 32) that store for the kernel after, at named barrier ID:
 * each orders its stores for that kernel's TMA reads, then the barrier
 * orders them all before the leader's release (which is cumulative), so
 * whoever acquires the count sees them. Nothing without a counter. */
template <int ID, int THREADS>
__device__ __forceinline__ void link_end(const cu_link &k, bool leader) {
#if defined(__CUDA_ARCH__) && __CUDA_ARCH__ >= 900
    if (!k.rel) return;
    asm volatile("fence.proxy.async.global;" ::: "memory");
    asm volatile("bar.sync %0, %1;" ::"n"(ID), "n"(THREADS) : "memory");
    if (leader) asm volatile("red.release.gpu.global.add.u32 [%0], 1;" ::"l"(k.rel) : "memory");
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
