/* Device and host helpers of the sm_90a kernels (the .cu files beside it, built
 * for compute capability 9.0 only): mbarriers, TMA tile loads, wgmma
 * descriptors and instructions, and the tensor maps those loads read. Each
 * includer is one translation unit, so everything here is internal to it. */
#ifndef HRMT_CUDA_SM90A_WGMMA_COMMON_CUH
#define HRMT_CUDA_SM90A_WGMMA_COMMON_CUH

#include <cuda.h>
#include <cudaTypedefs.h>
#include <stdint.h>

#include "cuda/pdl.cuh"

#if defined(__CUDA_ARCH__) && defined(__CUDA_ARCH_FEAT_SM90_ALL)
#define HRMT_SM90A 1 /* device pass with wgmma and setmaxnreg */
#endif

namespace {

constexpr int BK = 64; /* k per TMA box and stage: one 128-byte swizzled row */
constexpr int ROW_BYTES = BK * 2;

#ifdef HRMT_SM90A
__device__ __forceinline__ uint32_t smem_u32(const void *p) {
    return (uint32_t)__cvta_generic_to_shared(p);
}
/* The dynamic shared memory from its first 1024-byte boundary (the 128-byte
 * swizzle's period), as an offset from the __shared__ array itself: the
 * compiler then still knows every pointer made from it is shared and emits
 * LDS / STS. Rounding the address as an integer (as every sm90a kernel did
 * until session 55; ring_wres.cuh still does, measured faster so) made each
 * access through it generic (LD.E / ST.E): in the cluster norm's owner
 * epilogue a row's 16-byte loads come after the previous chunk's global
 * store, and the link trace put that epilogue at 1.47 us generic against
 * 1.09 shared (H100, batch 8). The same boundary either way: the shared
 * window's generic base is aligned far beyond 1024 bytes. */
__device__ __forceinline__ uint8_t *smem_align1024(uint8_t *raw) {
    return raw + ((1024u - (smem_u32(raw) & 1023u)) & 1023u);
}
__device__ __forceinline__ void mbar_init(uint64_t *b, unsigned count) {
    asm volatile("mbarrier.init.shared::cta.b64 [%0], %1;" ::"r"(smem_u32(b)), "r"(count));
}
/* A TMA ring's barriers, by one thread: full[s] completes on the producer's
 * arrive plus the stage's bytes, empty[s] on `consumers` arrives. */
__device__ __forceinline__ void ring_init(uint64_t *full, uint64_t *empty, int stages,
                                          unsigned consumers) {
    for (int s = 0; s < stages; s++) {
        mbar_init(&full[s], 1);
        mbar_init(&empty[s], consumers);
    }
}
/* The ring's barriers made by thread 0 and visible to the whole CTA; every
 * thread of the CTA calls it. */
__device__ __forceinline__ void ring_setup(uint64_t *full, uint64_t *empty, int stages,
                                           unsigned consumers) {
    if (threadIdx.x == 0) {
        ring_init(full, empty, stages, consumers);
        asm volatile("fence.mbarrier_init.release.cluster;" ::: "memory");
    }
    __syncthreads();
}
/* The ring's next stage; the parity to wait for flips at each wrap. */
__device__ __forceinline__ void ring_next(int &s, unsigned &ph, int stages) {
    if (++s == stages) {
        s = 0;
        ph ^= 1;
    }
}
__device__ __forceinline__ void mbar_expect_tx(uint64_t *b, unsigned bytes) {
    asm volatile("mbarrier.arrive.expect_tx.shared::cta.b64 _, [%0], %1;" ::"r"(smem_u32(b)),
                 "r"(bytes)
                 : "memory");
}
__device__ __forceinline__ void mbar_arrive(uint64_t *b) {
    asm volatile("mbarrier.arrive.shared::cta.b64 _, [%0];" ::"r"(smem_u32(b)) : "memory");
}
__device__ __forceinline__ void mbar_wait(uint64_t *b, unsigned parity) {
    asm volatile(
        "{\n"
        ".reg .pred p;\n"
        "W: mbarrier.try_wait.parity.shared::cta.b64 p, [%0], %1;\n"
        "@!p bra W;\n"
        "}" ::"r"(smem_u32(b)),
        "r"(parity)
        : "memory");
}
__device__ __forceinline__ void tma_load(void *dst, const CUtensorMap *map, uint64_t *bar, int c0,
                                         int c1) {
    asm volatile(
        "cp.async.bulk.tensor.2d.shared::cluster.global.mbarrier::complete_tx::bytes"
        " [%0], [%1, {%3, %4}], [%2];" ::"r"(smem_u32(dst)),
        "l"(map), "r"(smem_u32(bar)), "r"(c0), "r"(c1)
        : "memory");
}

/* A box of shared memory written to a 2-D tensor map's box at (c0, c1) by
 * the copy engine (rows past the map's end are not written), in this
 * thread's bulk group; bulk_commit closes the group, bulk_wait_read<N>
 * waits until at most N groups still read shared memory, bulk_wait<N>
 * until at most N are incomplete. The writes to src must be made visible
 * to the copy engine first (fence.proxy.async.shared::cta). */
__device__ __forceinline__ void tma_store(const CUtensorMap *map, const void *src, int c0, int c1) {
    asm volatile(
        "cp.async.bulk.tensor.2d.global.shared::cta.bulk_group [%0, {%2, %3}], [%1];" ::"l"(map),
        "r"(smem_u32(src)), "r"(c0), "r"(c1)
        : "memory");
}
/* A 4-byte store to shared memory as such (STS): through a generic
 * pointer nvcc cannot place (an aligned offset of the dynamic buffer) it
 * emits a generic ST, which resolves the address space at run time. */
__device__ __forceinline__ void sts_u32(void *p, uint32_t v) {
    asm volatile("st.shared.u32 [%0], %1;" ::"r"(smem_u32(p)), "r"(v) : "memory");
}
__device__ __forceinline__ void bulk_commit() {
    asm volatile("cp.async.bulk.commit_group;" ::: "memory");
}
template <int N>
__device__ __forceinline__ void bulk_wait_read() {
    asm volatile("cp.async.bulk.wait_group.read %0;" ::"n"(N) : "memory");
}
template <int N>
__device__ __forceinline__ void bulk_wait() {
    asm volatile("cp.async.bulk.wait_group %0;" ::"n"(N) : "memory");
}
/* A box of a 3-D tensor map (encode_kb: KP k blocks of a row tile in one
 * copy). */
__device__ __forceinline__ void tma_load_3d(void *dst, const CUtensorMap *map, uint64_t *bar,
                                            int c0, int c1, int c2) {
    asm volatile(
        "cp.async.bulk.tensor.3d.shared::cluster.global.mbarrier::complete_tx::bytes"
        " [%0], [%1, {%3, %4, %5}], [%2];" ::"r"(smem_u32(dst)),
        "l"(map), "r"(smem_u32(bar)), "r"(c0), "r"(c1), "r"(c2)
        : "memory");
}
/* A box of a 4-D tensor map (encode_parts: the q, k and v rows of a head
 * in one copy). */
__device__ __forceinline__ void tma_load_4d(void *dst, const CUtensorMap *map, uint64_t *bar,
                                            int c0, int c1, int c2, int c3) {
    asm volatile(
        "cp.async.bulk.tensor.4d.shared::cluster.global.mbarrier::complete_tx::bytes"
        " [%0], [%1, {%3, %4, %5, %6}], [%2];" ::"r"(smem_u32(dst)),
        "l"(map), "r"(smem_u32(bar)), "r"(c0), "r"(c1), "r"(c2), "r"(c3)
        : "memory");
}
/* Rows r0.. of k blocks kb .. kb + KP - 1 into dst, one 2-D copy per block
 * (KP = 1, encode's map) or one 3-D copy of all (encode_kb's): the same
 * bytes in the same places, [KP][rows][64] in the 128-byte swizzle. */
template <int KP>
__device__ __forceinline__ void tma_load_kb(void *dst, const CUtensorMap *map, uint64_t *bar,
                                            int kb, int r0) {
    if constexpr (KP == 1)
        tma_load(dst, map, bar, kb * BK, r0);
    else
        tma_load_3d(dst, map, bar, 0, r0, kb);
}

__device__ __forceinline__ uint32_t cl_rank() {
    uint32_t r;
    asm volatile("mov.u32 %0, %%cluster_ctarank;" : "=r"(r));
    return r;
}
/* The same shared-memory offset in CTA `rank` of the cluster. */
__device__ __forceinline__ uint32_t cl_map(const void *p, uint32_t rank) {
    uint32_t r;
    asm volatile("mapa.shared::cluster.u32 %0, %1, %2;" : "=r"(r) : "r"(smem_u32(p)), "r"(rank));
    return r;
}
/* A store into another CTA's shared memory at `a` (cl_map). */
__device__ __forceinline__ void cl_st_f32(uint32_t a, float v) {
    asm volatile("st.shared::cluster.f32 [%0], %1;" ::"r"(a), "f"(v) : "memory");
}
/* Every thread of every CTA of the cluster: writes before it (shared and
 * distributed shared memory) are seen by reads after it. */
__device__ __forceinline__ void cl_sync() {
    asm volatile("barrier.cluster.arrive.release;\n\tbarrier.cluster.wait.acquire;" ::: "memory");
}

/* This thread's warpgroup as a warp-uniform value (lane 0's, by shuffle;
 * every lane of the warp must be active). nvcc cannot tell that
 * threadIdx.x / 128 is the same across a warp, so what derives from it (a
 * consumer's ring position, its stages' addresses, the wgmma descriptors)
 * stayed in per-thread registers and each HGMMA waited for its descriptors'
 * moves to uniform registers: ring_wres's issue loop ran ~18 instructions
 * an HGMMA, 4 of them R2UR (cuobjdump, session 42; ncu: the products' issue
 * phases were the kernel's critical path). From this value the descriptors
 * are built in uniform registers (session 43, H100: that gate_up 126 ->
 * 115 us at batch 256, the step 0.96x at batch 64 and 256). CUTLASS's
 * canonical_warp_group_idx does the same. */
__device__ __forceinline__ int warpgroup_idx() {
    return __shfl_sync(0xffffffffu, (int)threadIdx.x / 128, 0);
}

/* Shared-memory matrix descriptor of a K-major operand in the 128-byte
 * swizzle: 8-row groups 1024 bytes apart; a k16 step moves the start 32 bytes
 * along the (swizzled) row. */
__device__ __forceinline__ uint64_t desc_k128(const void *p) {
    const uint64_t a = smem_u32(p);
    return ((a & 0x3ffff) >> 4) | (1ull << 16) | ((uint64_t)(1024 >> 4) << 32) | (1ull << 62);
}

__device__ __forceinline__ void wg_fence() {
    asm volatile("wgmma.fence.sync.aligned;" ::: "memory");
}
__device__ __forceinline__ void wg_commit() {
    asm volatile("wgmma.commit_group.sync.aligned;" ::: "memory");
}
template <int N>
__device__ __forceinline__ void wg_wait() {
    asm volatile("wgmma.wait_group.sync.aligned %0;" ::"n"(N) : "memory");
}

#define WG_R8(i)                                                                                \
    "+f"(d[i]), "+f"(d[i + 1]), "+f"(d[i + 2]), "+f"(d[i + 3]), "+f"(d[i + 4]), "+f"(d[i + 5]), \
        "+f"(d[i + 6]), "+f"(d[i + 7])

/* D[64 x N] += A[64 x 16] B[N x 16]^T, both K-major in shared memory. */
__device__ __forceinline__ void wgmma_n128(float (&d)[64], uint64_t da, uint64_t db) {
    asm volatile(
        "{\n.reg .pred p;\nsetp.ne.b32 p, %66, 0;\n"
        "wgmma.mma_async.sync.aligned.m64n128k16.f32.bf16.bf16 "
        "{%0, %1, %2, %3, %4, %5, %6, %7, %8, %9, %10, %11, %12, %13, %14, %15, "
        "%16, %17, %18, %19, %20, %21, %22, %23, %24, %25, %26, %27, %28, %29, %30, "
        "%31, %32, %33, %34, %35, %36, %37, %38, %39, %40, %41, %42, %43, %44, %45, "
        "%46, %47, %48, %49, %50, %51, %52, %53, %54, %55, %56, %57, %58, %59, %60, "
        "%61, %62, %63}, %64, %65, p, 1, 1, 0, 0;\n}"
        : WG_R8(0), WG_R8(8), WG_R8(16), WG_R8(24), WG_R8(32), WG_R8(40), WG_R8(48), WG_R8(56)
        : "l"(da), "l"(db), "r"(1));
}
/* The same with N = 256 (128 accumulators per thread). */
__device__ __forceinline__ void wgmma_n256(float (&d)[128], uint64_t da, uint64_t db) {
    asm volatile(
        "{\n.reg .pred p;\nsetp.ne.b32 p, %130, 0;\n"
        "wgmma.mma_async.sync.aligned.m64n256k16.f32.bf16.bf16 "
        "{%0, %1, %2, %3, %4, %5, %6, %7, %8, %9, %10, %11, %12, %13, %14, %15, "
        "%16, %17, %18, %19, %20, %21, %22, %23, %24, %25, %26, %27, %28, %29, %30, "
        "%31, %32, %33, %34, %35, %36, %37, %38, %39, %40, %41, %42, %43, %44, %45, "
        "%46, %47, %48, %49, %50, %51, %52, %53, %54, %55, %56, %57, %58, %59, %60, "
        "%61, %62, %63, %64, %65, %66, %67, %68, %69, %70, %71, %72, %73, %74, %75, "
        "%76, %77, %78, %79, %80, %81, %82, %83, %84, %85, %86, %87, %88, %89, %90, "
        "%91, %92, %93, %94, %95, %96, %97, %98, %99, %100, %101, %102, %103, %104, "
        "%105, %106, %107, %108, %109, %110, %111, %112, %113, %114, %115, %116, %117, "
        "%118, %119, %120, %121, %122, %123, %124, %125, %126, %127}, %128, %129, p, 1, 1, "
        "0, 0;\n}"
        : WG_R8(0), WG_R8(8), WG_R8(16), WG_R8(24), WG_R8(32), WG_R8(40), WG_R8(48), WG_R8(56),
          WG_R8(64), WG_R8(72), WG_R8(80), WG_R8(88), WG_R8(96), WG_R8(104), WG_R8(112), WG_R8(120)
        : "l"(da), "l"(db), "r"(1));
}
/* Narrower N for small batches (more tiles per product). */
__device__ __forceinline__ void wgmma_n16(float (&d)[8], uint64_t da, uint64_t db) {
    asm volatile(
        "{\n.reg .pred p;\nsetp.ne.b32 p, %10, 0;\n"
        "wgmma.mma_async.sync.aligned.m64n16k16.f32.bf16.bf16 "
        "{%0, %1, %2, %3, %4, %5, %6, %7}, %8, %9, p, 1, 1, 0, 0;\n}"
        : WG_R8(0)
        : "l"(da), "l"(db), "r"(1));
}
__device__ __forceinline__ void wgmma_n32(float (&d)[16], uint64_t da, uint64_t db) {
    asm volatile(
        "{\n.reg .pred p;\nsetp.ne.b32 p, %18, 0;\n"
        "wgmma.mma_async.sync.aligned.m64n32k16.f32.bf16.bf16 "
        "{%0, %1, %2, %3, %4, %5, %6, %7, %8, %9, %10, %11, %12, %13, %14, %15}, %16, %17, "
        "p, 1, 1, 0, 0;\n}"
        : WG_R8(0), WG_R8(8)
        : "l"(da), "l"(db), "r"(1));
}
__device__ __forceinline__ void wgmma_n64(float (&d)[32], uint64_t da, uint64_t db) {
    asm volatile(
        "{\n.reg .pred p;\nsetp.ne.b32 p, %34, 0;\n"
        "wgmma.mma_async.sync.aligned.m64n64k16.f32.bf16.bf16 "
        "{%0, %1, %2, %3, %4, %5, %6, %7, %8, %9, %10, %11, %12, %13, %14, %15, %16, %17, "
        "%18, %19, %20, %21, %22, %23, %24, %25, %26, %27, %28, %29, %30, %31}, %32, %33, "
        "p, 1, 1, 0, 0;\n}"
        : WG_R8(0), WG_R8(8), WG_R8(16), WG_R8(24)
        : "l"(da), "l"(db), "r"(1));
}
/* D[64 x N] += A B^T for N in 16, 32, 64, 128, 256 (N / 2 accumulators). */
template <int N>
__device__ __forceinline__ void wgmma_n(float (&d)[N / 2], uint64_t da, uint64_t db) {
    if constexpr (N == 16)
        wgmma_n16(d, da, db);
    else if constexpr (N == 32)
        wgmma_n32(d, da, db);
    else if constexpr (N == 64)
        wgmma_n64(d, da, db);
    else if constexpr (N == 128)
        wgmma_n128(d, da, db);
    else
        wgmma_n256(d, da, db);
}
/* One warpgroup's products of a tile over kb_n k blocks of a TMA ring,
 * KP k blocks a stage, from stage s (parity ph): D[64 x N] += A W^T per k
 * block, the stage's A blocks a_blk bytes apart from its start and its W
 * blocks w_blk bytes apart from `w_off` (KP = 1: neither is read). Each
 * stage is given back (one arrive per warp on empty[]) once the next
 * stage's products are issued; the last stage's index comes back in prev
 * (-1: none) for the caller to give back when it is done with the ring; s
 * and ph move on past the tile. kb_n % KP == 0. The accumulators are
 * complete when it returns; the chain is the same k16 steps in the same
 * order whatever KP. */
template <int N, int KP = 1>
__device__ __forceinline__ void ring_products(float (&acc)[N / 2], const uint8_t *smem,
                                              int stage_bytes, int w_off, uint64_t *full,
                                              uint64_t *empty, int stages, int kb_n, int &s,
                                              unsigned &ph, int &prev, int lane, int a_blk = 0,
                                              int w_blk = 0) {
    prev = -1;
    for (int kb = 0; kb < kb_n; kb += KP) {
        mbar_wait(&full[s], ph);
        if (kb == 0) LT_PHASE(1);
        const uint8_t *st = smem + s * stage_bytes;
        wg_fence();
#pragma unroll
        for (int j = 0; j < KP; j++) {
            const uint64_t da = desc_k128(st + j * a_blk), dw = desc_k128(st + w_off + j * w_blk);
#pragma unroll
            for (int kk = 0; kk < BK / 16; kk++) wgmma_n<N>(acc, da + 2 * kk, dw + 2 * kk);
        }
        wg_commit();
        wg_wait<1>(); /* the previous stage is read: give it back */
        if (prev >= 0 && lane == 0) mbar_arrive(&empty[prev]);
        prev = s;
        ring_next(s, ph, stages);
    }
    wg_wait<0>();
    LT_PHASE(2);
    /* Keep the caller's reads of the accumulators after the wait. */
#pragma unroll
    for (int i = 0; i < N / 2; i++) asm volatile("" : "+f"(acc[i])::"memory");
}
#endif

/* Host side: whether a kernel's image loads on this device (another 9.0
 * part, a driver) with `smem` bytes of shared memory within `per_block`,
 * and its shared-memory opt-in before a launch. */
template <class K>
int image_loads(K *kern, size_t smem, size_t per_block) {
    cudaFuncAttributes fa;
    if (per_block < smem) return 0;
    if (cudaFuncGetAttributes(&fa, kern) != cudaSuccess) {
        (void)cudaGetLastError();
        return 0;
    }
    return 1;
}
template <class K>
cudaError_t smem_opt_in(K *kern, size_t smem) {
    return cudaFuncSetAttribute(kern, cudaFuncAttributeMaxDynamicSharedMemorySize, (int)smem);
}

/* How many clusters of `cl` such CTAs can be resident at once (0: none, or
 * the query failed); the kernel's shared-memory opt-in made. */
template <class K>
int cluster_fits(K *kern, int cl, int threads, size_t smem) {
    cudaLaunchAttribute at[2];
    const cudaLaunchConfig_t cfg = launch_config(dim3(cl), dim3(threads), smem, 0, 0, cl, at);
    int clusters = 0;
    if (cudaOccupancyMaxActiveClusters(&clusters, kern, &cfg) != cudaSuccess) {
        (void)cudaGetLastError();
        return 0;
    }
    return clusters;
}

PFN_cuTensorMapEncodeTiled_v12000 encode_fn() {
    void *fn = nullptr;
    cudaDriverEntryPointQueryResult q;
    if (cudaGetDriverEntryPointByVersion("cuTensorMapEncodeTiled", &fn, 12000, cudaEnableDefault,
                                         &q) != cudaSuccess ||
        q != cudaDriverEntryPointSuccess)
        return nullptr;
    return (PFN_cuTensorMapEncodeTiled_v12000)fn;
}

/* A 2-D BF16 tensor map of rows x cols (row stride ld elements) read in
 * boxes of box_rows x 64 with the 128-byte swizzle; rows past the end read
 * as zeros. */
int encode(PFN_cuTensorMapEncodeTiled_v12000 fn, CUtensorMap *map, const void *base, size_t rows,
           size_t cols, size_t ld, int box_rows) {
    const cuuint64_t dims[2] = {(cuuint64_t)cols, (cuuint64_t)rows};
    const cuuint64_t strides[1] = {(cuuint64_t)(ld * 2)};
    const cuuint32_t box[2] = {(cuuint32_t)BK, (cuuint32_t)box_rows}, elem[2] = {1, 1};
    return fn(map, CU_TENSOR_MAP_DATA_TYPE_BFLOAT16, 2, const_cast<void *>(base), dims, strides,
              box, elem, CU_TENSOR_MAP_INTERLEAVE_NONE, CU_TENSOR_MAP_SWIZZLE_128B,
              CU_TENSOR_MAP_L2_PROMOTION_L2_256B,
              CU_TENSOR_MAP_FLOAT_OOB_FILL_NONE) == CUDA_SUCCESS;
}

/* k blocks a copy for a ring over kb_n k blocks: `want` (1, 2, 4), halved
 * until the copies hold whole k extents. */
inline int kb_per_copy(int want, size_t kb_n) {
    while (want > 1 && kb_n % (size_t)want != 0) want /= 2;
    return want;
}

/* The same rows x cols as a 3-D map [cols / 64][rows][64] read in boxes
 * of KP k blocks of box_rows rows (tma_load_kb): one copy lands k blocks kb
 * .. kb + KP - 1 one after the other, each as encode's box would. kp = 1:
 * encode's map. cols % 64 == 0. */
int encode_kb(PFN_cuTensorMapEncodeTiled_v12000 fn, CUtensorMap *map, const void *base, size_t rows,
              size_t cols, size_t ld, int box_rows, int kp) {
    if (kp == 1) return encode(fn, map, base, rows, cols, ld, box_rows);
    const cuuint64_t dims[3] = {(cuuint64_t)BK, (cuuint64_t)rows, (cuuint64_t)(cols / BK)};
    const cuuint64_t strides[2] = {(cuuint64_t)(ld * 2), (cuuint64_t)ROW_BYTES};
    const cuuint32_t box[3] = {(cuuint32_t)BK, (cuuint32_t)box_rows, (cuuint32_t)kp};
    const cuuint32_t elem[3] = {1, 1, 1};
    return fn(map, CU_TENSOR_MAP_DATA_TYPE_BFLOAT16, 3, const_cast<void *>(base), dims, strides,
              box, elem, CU_TENSOR_MAP_INTERLEAVE_NONE, CU_TENSOR_MAP_SWIZZLE_128B,
              CU_TENSOR_MAP_L2_PROMOTION_L2_256B,
              CU_TENSOR_MAP_FLOAT_OOB_FILL_NONE) == CUDA_SUCCESS;
}

/* W [parts x rows, cols] (row stride ld) as a 4-D map [cols / 64][parts]
 * [rows][64] read in boxes of box_rows rows of every part over one k
 * block: one copy lands part p's rows r0 .. r0 + box_rows - 1 at p box_rows
 * 128 bytes, as `parts` copies of encode's map at rows p rows + r0 would. */
int encode_parts(PFN_cuTensorMapEncodeTiled_v12000 fn, CUtensorMap *map, const void *base,
                 size_t rows, int parts, size_t cols, size_t ld, int box_rows) {
    const cuuint64_t dims[4] = {(cuuint64_t)BK, (cuuint64_t)rows, (cuuint64_t)parts,
                                (cuuint64_t)(cols / BK)};
    const cuuint64_t strides[3] = {(cuuint64_t)(ld * 2), (cuuint64_t)(rows * ld * 2),
                                   (cuuint64_t)ROW_BYTES};
    const cuuint32_t box[4] = {(cuuint32_t)BK, (cuuint32_t)box_rows, (cuuint32_t)parts, 1};
    const cuuint32_t elem[4] = {1, 1, 1, 1};
    return fn(map, CU_TENSOR_MAP_DATA_TYPE_BFLOAT16, 4, const_cast<void *>(base), dims, strides,
              box, elem, CU_TENSOR_MAP_INTERLEAVE_NONE, CU_TENSOR_MAP_SWIZZLE_128B,
              CU_TENSOR_MAP_L2_PROMOTION_L2_256B,
              CU_TENSOR_MAP_FLOAT_OOB_FILL_NONE) == CUDA_SUCCESS;
}

} // namespace

#endif
