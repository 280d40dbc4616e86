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
 * stage of operands landed, 2: the products done, 3-7: steps of the
 * epilogue, each kernel's comments say which, 8: the end; a persistent
 * kernel's 1 and 2 are its last tile's), stored in the
 * record of the warpgroup leader's wait, found through 128 bytes of static
 * shared memory the trace build adds to each kernel, without an atomic or a
 * global load (the measured forms with them added ~0.3-0.45 us a point and
 * distorted what they measured); nothing in other builds.
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

struct lt_rec {
    unsigned long long t_call, t_pass;      /* ns, %globaltimer */
    unsigned grid, block, smem, cta_thread; /* cta_thread: CTA << 10 | thread */
    unsigned long long ph[LT_PHASES];       /* LT_PHASE(id) at ph[id - 1]; 0: not passed */
};
struct lt_buf {
    unsigned long long n, cap;
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

/* Where this warpgroup leader's wait put its record, per kernel in its own
 * static shared memory: the record's address and a tag of it with the CTA,
 * so that a leader that never waited finds none. A point then reads only
 * shared memory: a global load per point (the first forms read lt_dev and
 * the record count, or a per-(SM, warp) stash) costs an L2 round trip. */
struct lt_where {
    lt_rec *rec;
    unsigned long long tag;
};

__device__ __forceinline__ lt_where *lt_slot() {
    __shared__ lt_where slot[8];
    return &slot[(threadIdx.x / 128) & 7];
}

__device__ __forceinline__ unsigned long long lt_tag(const lt_rec *r) {
    return ~(unsigned long long)r ^ (blockIdx.x * 2654435761ull) ^ threadIdx.x;
}

/* The leader always writes its slot (no record: null), so that a point
 * never trusts what an earlier kernel's CTA left in that shared memory. */
__device__ __forceinline__ void lt_record(unsigned long long t_call) {
    if ((threadIdx.x & 127) != 0) return;
    lt_where *w = lt_slot();
    w->rec = nullptr;
    lt_buf *b = lt_dev;
    if (!b) return;
    const unsigned long long t = lt_now();
    const unsigned long long i = atomicAdd(&b->n, 1ull); /* past cap: counted, dropped */
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
    w->rec = &b->rec[i];
    w->tag = lt_tag(&b->rec[i]);
}

__device__ __forceinline__ void lt_phase(unsigned id) {
    if ((threadIdx.x & 127) != 0 || id < 1 || id > LT_PHASES) return;
    const unsigned long long t = lt_now();
    const lt_where *w = lt_slot();
    lt_rec *r = w->rec;
    if (r && w->tag == lt_tag(r)) r->ph[id - 1] = t;
}
#define LT_PHASE(id) lt_phase(id)
#else
#define LT_PHASE(id) ((void)0)
#endif

#endif
