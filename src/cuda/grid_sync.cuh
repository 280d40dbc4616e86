/* A grid-wide barrier for cooperative launches (model_grid.cu; timed alone
 * by bench/cuda_grid_sync.cu). */
#ifndef HRMT_CUDA_GRID_SYNC_CUH
#define HRMT_CUDA_GRID_SYNC_CUH

namespace {

__device__ __forceinline__ unsigned ld_acquire(const unsigned *p) {
    unsigned v;
    asm volatile("ld.acquire.gpu.global.u32 %0, [%1];\n" : "=r"(v) : "l"(p) : "memory");
    return v;
}

/* Every CTA of the grid arrives, then waits for all: the writes before it
 * are visible to every CTA's reads after it (release by the fence and the
 * arrival, acquire by the loads; the launch is cooperative, so all CTAs are
 * resident). `target` counts arrivals over the launch; *bar starts at 0. */
__device__ __forceinline__ void grid_sync(unsigned *bar, unsigned &target) {
    target += gridDim.x;
    __syncthreads();
    if (threadIdx.x == 0) {
        __threadfence();
        atomicAdd(bar, 1u);
        while (ld_acquire(bar) < target) {
        }
        __threadfence();
    }
    __syncthreads();
}

} // namespace

#endif
