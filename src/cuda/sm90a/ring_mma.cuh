/* ring_products (wgmma_common.cuh) by mma.sync instead of wgmma: one
 * consumer warpgroup's D[64 x N] += A W^T over a TMA ring's stages, with the
 * same accumulator layout (warp w holds rows 16 w .. 16 w + 15; acc[4 i ..
 * 4 i + 3] is n8 tile i's m16n8 fragment, which is the wgmma m64nN layout),
 * so a kernel's epilogue takes either.
 *
 * Why: a narrow wgmma's products into one accumulator are a chain of
 * dependent instructions, and at a few samples that chain is the kernel (on
 * the H200 the cluster projection + norm spent ~290 cycles per 64-k stage of
 * four m64n32k16: 16 more stages of down_proj cost 2.6 us a call). mma.sync
 * runs each warp's N / 8 column tiles as independent chains, and the next k
 * step's fragments are loaded (ldmatrix from the stage's 128-byte swizzle)
 * while this step's products run.
 *
 * Bits: each output is the same F32 chain of BF16 k16 steps in ascending k
 * from +0 (cuda_model/cluster_norm_equals_launches checks the bytes). */
#ifndef HRMT_CUDA_SM90A_RING_MMA_CUH
#define HRMT_CUDA_SM90A_RING_MMA_CUH

#include "cuda/sm90a/wgmma_common.cuh"

namespace {

#ifdef HRMT_SM90A
__device__ __forceinline__ void ldsm4(uint32_t a, uint32_t (&r)[4]) {
    asm volatile("ldmatrix.sync.aligned.m8n8.x4.shared.b16 {%0,%1,%2,%3}, [%4];"
                 : "=r"(r[0]), "=r"(r[1]), "=r"(r[2]), "=r"(r[3])
                 : "r"(a));
}
__device__ __forceinline__ void mma16816(float *d, const uint32_t (&a)[4], const uint32_t (&b)[2]) {
    asm volatile(
        "mma.sync.aligned.m16n8k16.row.col.f32.bf16.bf16.f32 {%0,%1,%2,%3}, "
        "{%4,%5,%6,%7}, {%8,%9}, {%0,%1,%2,%3};"
        : "+f"(d[0]), "+f"(d[1]), "+f"(d[2]), "+f"(d[3])
        : "r"(a[0]), "r"(a[1]), "r"(a[2]), "r"(a[3]), "r"(b[0]), "r"(b[1]));
}
/* Byte offset of (row, 16-byte chunk) in a 128-byte-swizzled tile whose
 * start is 1024-byte aligned (the TMA box layout wgmma reads). */
__device__ __forceinline__ uint32_t sw128(int row, int chunk) {
    return (uint32_t)(row * 128 + ((chunk ^ (row & 7)) << 4));
}
/* Warp `warp`'s A fragment (rows 16 warp ..) and the N / 8 W fragments of
 * k16 step kk of the stage at `st` (W at w_off). */
template <int N>
__device__ __forceinline__ void ring_frags(uint32_t (&a)[4], uint32_t (&b)[N / 8][2], uint32_t st,
                                           int w_off, int kk, int warp, int lane) {
    const int ar = warp * 16 + (lane & 15);
    ldsm4(st + sw128(ar, 2 * kk + (lane >> 4)), a);
#pragma unroll
    for (int np = 0; np < N / 16; np++) {
        const int wr = np * 16 + (lane & 7) + ((lane >> 4) << 3);
        uint32_t r[4];
        ldsm4(st + (uint32_t)w_off + sw128(wr, 2 * kk + ((lane >> 3) & 1)), r);
        b[2 * np][0] = r[0];
        b[2 * np][1] = r[1];
        b[2 * np + 1][0] = r[2];
        b[2 * np + 1][1] = r[3];
    }
}

/* As ring_products: kb_n stages from stage s (parity ph), s and ph moved on
 * past them. Each stage is given back (one arrive per warp on empty[]) once
 * its last fragments are in registers, so prev comes back -1. */
template <int N>
__device__ __forceinline__ void ring_products_mma(float (&acc)[N / 2], const uint8_t *smem,
                                                  int stage_bytes, int w_off, uint64_t *full,
                                                  uint64_t *empty, int stages, int kb_n, int &s,
                                                  unsigned &ph, int &prev, int warp, int lane) {
    constexpr int NI = N / 8;
    prev = -1;
    if (kb_n <= 0) return;
    const uint32_t base = smem_u32(smem);
    uint32_t a[2][4], b[2][NI][2];
    mbar_wait(&full[s], ph);
    ring_frags<N>(a[0], b[0], base + (uint32_t)(s * stage_bytes), w_off, 0, warp, lane);
    for (int kb = 0; kb < kb_n; kb++) {
        const uint32_t st = base + (uint32_t)(s * stage_bytes);
        int s2 = s;
        unsigned ph2 = ph;
        ring_next(s2, ph2, stages);
#pragma unroll
        for (int kk = 0; kk < BK / 16; kk++) {
            const int cur = kk & 1, nxt = cur ^ 1;
            if (kk + 1 < BK / 16) {
                ring_frags<N>(a[nxt], b[nxt], st, w_off, kk + 1, warp, lane);
            } else if (kb + 1 < kb_n) {
                mbar_wait(&full[s2], ph2);
                ring_frags<N>(a[nxt], b[nxt], base + (uint32_t)(s2 * stage_bytes), w_off, 0, warp,
                              lane);
            }
#pragma unroll
            for (int i = 0; i < NI; i++) mma16816(&acc[4 * i], a[cur], b[cur][i]);
        }
        /* The stage's fragments were all read (the products above took them). */
        __syncwarp();
        if (lane == 0) mbar_arrive(&empty[s]);
        s = s2;
        ph = ph2;
    }
}
#endif

} // namespace

#endif
