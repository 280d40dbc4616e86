/* The step's links as they run (a development aid, compiled only with
 * -DHRMT_CUDA_LINK_TRACE=ON, off by default): each kernel that waits for
 * the one before through pdl_wait() records, once per warpgroup leader
 * that calls it, when it called the wait and when the wait returned (the
 * kernel before had finished and its writes were visible), read from
 * %globaltimer, with its grid, block and dynamic shared memory, so that a
 * step's timeline can be read without a profiler that serialises kernels
 * (ncu) or one the GPU machine lacks (nsys). The records of kernel k+1 all
 * follow kernel k's: its waits return only once k has finished.
 * LT_PHASE(id) marks points inside the small batches' kernels (1: the first
 * stage of operands landed, 2: the products done, 3-5: steps of the
 * epilogue, each kernel's comments say which, 8: the end), stored in the
 * record of the warpgroup leader's wait without an atomic (a first form
 * with one atomic record per point added ~0.45 us a point and distorted
 * what it measured); nothing in other builds.
 * HRMT_CUDA_LINK_TRACE_OUT=FILE writes each step's records there
 * (link_trace.cu); bench/link_trace.py makes the table.
 * Each translation unit has its own copy of the device pointer, set through
 * a setter it registers at load: the pointer lives in the module of each
 * .cu file. Not for release builds: this is the only global state of its
 * kind, and only in this build. */
#ifndef HRMT_CUDA_LINK_TRACE_CUH
#define HRMT_CUDA_LINK_TRACE_CUH

#ifdef HRMT_CUDA_LINK_TRACE
#include <cuda_runtime.h>

constexpr int LT_PHASES = 8;
constexpr int LT_SLOTS = 256 * 64; /* (SM, warp slot) pairs */

struct lt_rec {
    unsigned long long t_call, t_pass;      /* ns, %globaltimer */
    unsigned grid, block, smem, cta_thread; /* cta_thread: CTA << 10 | thread */
    unsigned long long ph[LT_PHASES];       /* LT_PHASE(id) at ph[id - 1]; 0: not passed */
};
struct lt_buf {
    unsigned long long n, cap;
    /* Per (SM, warp slot): the %gridid and record of the warp's last wait,
     * where LT_PHASE finds its record. */
    unsigned long long stash[LT_SLOTS][2];
    lt_rec rec[1]; /* cap of them */
};

typedef cudaError_t (*lt_setter)(lt_buf *);
int hrmt_cuda_link_trace_register(lt_setter f);

namespace {
__device__ lt_buf *lt_dev;
cudaError_t lt_set(lt_buf *p) { return cudaMemcpyToSymbol(lt_dev, &p, sizeof p); }
[[maybe_unused]] const int lt_registered = hrmt_cuda_link_trace_register(lt_set);
} // namespace

__device__ __forceinline__ unsigned long long lt_now() {
    unsigned long long t;
    asm volatile("mov.u64 %0, %%globaltimer;" : "=l"(t));
    return t;
}

__device__ __forceinline__ unsigned lt_where() {
    unsigned sm, w;
    asm volatile("mov.u32 %0, %%smid;" : "=r"(sm));
    asm volatile("mov.u32 %0, %%warpid;" : "=r"(w));
    return (sm * 64 + w) % LT_SLOTS;
}

__device__ __forceinline__ unsigned long long lt_grid() {
    unsigned long long g;
    asm volatile("mov.u64 %0, %%gridid;" : "=l"(g));
    return g;
}

__device__ __forceinline__ void lt_record(unsigned long long t_call) {
    lt_buf *b = lt_dev;
    if (!b || (threadIdx.x & 127) != 0) return;
    const unsigned long long t = lt_now();
    const unsigned long long i = atomicAdd(&b->n, 1ull);
    if (i >= b->cap) return;
    lt_rec r = {};
    r.t_call = t_call;
    r.t_pass = t;
    r.grid = gridDim.x * gridDim.y * gridDim.z;
    r.block = blockDim.x * blockDim.y * blockDim.z;
    asm volatile("mov.u32 %0, %%dynamic_smem_size;" : "=r"(r.smem));
    r.cta_thread =
        (blockIdx.x + gridDim.x * (blockIdx.y + gridDim.y * blockIdx.z)) << 10 | threadIdx.x;
    b->rec[i] = r;
    unsigned long long *st = b->stash[lt_where()];
    st[0] = lt_grid();
    st[1] = i;
}

__device__ __forceinline__ void lt_phase(unsigned id) {
    lt_buf *b = lt_dev;
    if (!b || (threadIdx.x & 127) != 0 || id < 1 || id > LT_PHASES) return;
    const unsigned long long t = lt_now();
    const unsigned long long *st = b->stash[lt_where()];
    const unsigned long long i = st[1];
    if (st[0] == lt_grid() && i < b->cap) b->rec[i].ph[id - 1] = t;
}
#define LT_PHASE(id) lt_phase(id)
#else
#define LT_PHASE(id) ((void)0)
#endif

#endif
