/* BF16 attention for short sequences (T <= 128, head_dim 32 or 64) with the
 * scores, probabilities and outputs in registers (mma.sync m16n8k16).
 *
 * One block per (sample, head, group of 16-row query tiles); each warp owns
 * one query tile. K (RoPE'd, exact BF16 values) and V sit in shared memory,
 * keys padded to Tp (a multiple of 16) with zero rows. Per warp:
 *     S = Q K^T: per 8-key tile, one m16n8k16 per 16-wide k step from a zero
 *         accumulator, the steps' partial tiles added in F32 in ascending k;
 *     P = softmax(S * scale) in F32 over the T real keys: max subtracted,
 *         exponentials as 2^((S * scale * log2 e) - max) with the hardware
 *         exp2 (~2 ulp, results below 2^-126 flushed to 0; P enters P V
 *         with ~16 significant bits), e_j *
 *         (1 / sum); each thread holds two rows' slices, reduced across the
 *         four threads that share a row;
 *     O = P_hi V + P_lo V, P_hi = bf16(P), P_lo = bf16(P - P_hi) (P keeps
 *         ~16 significant bits), each 16-key step's partial tile added in
 *         F32 in ascending keys, rounded once.
 * S's accumulator fragments are P's operand fragments (the m16n8 C layout of
 * two adjacent key tiles is the m16k16 A layout), so S and P never touch
 * shared memory. How query tiles are grouped into blocks (chosen from the
 * batch to fill the GPU) never changes a row's arithmetic: a row's bits
 * depend only on its (sample, head) data, so tiered == baseline stays
 * bitwise. The register kernel replaces model_attn.cu's wmma kernel where it
 * applies (that one round-trips S and P through shared memory and runs one
 * block per (sample, head): 8 blocks at batch 1). */
#include "cuda/attn_mma_tile.cuh"
#include "cuda/attn_rope.cuh"
#include "cuda/bf16.cuh"
#include "cuda/model_internal.cuh"
#include "cuda/pdl.cuh"

namespace {

constexpr int MAX_KT = 8;     /* key (and query) tiles of 16: T <= 128 */
constexpr int MID_KT = 6;     /* T <= 96 (HRM's Sudoku: 82): a smaller register cap */
constexpr int LOAD_WARPS = 4; /* warps that load K and V, even for one query tile */

struct mma_layout {
    int Tp, nkt, ldk; /* ldk: bf16 row stride of K, V and the warp tiles */
    size_t v_off, q_off, bytes;
};

__host__ __device__ inline mma_layout mma_plan(int T, int d, int warps) {
    mma_layout L;
    L.Tp = (T + 15) / 16 * 16;
    L.nkt = L.Tp / 16;
    L.ldk = d + 8; /* 16-byte rows, staggered banks */
    L.v_off = (size_t)L.Tp * L.ldk * 2;
    L.q_off = 2 * L.v_off;
    L.bytes = L.q_off + (size_t)warps * 16 * L.ldk * 2;
    return L;
}

/* grid (heads * groups, samples); block max(W, LOAD_WARPS) warps; a team
 * of `team` warps shares each of the block's W query tiles (W team <=
 * LOAD_WARPS; attn_mma_tile.cuh: each makes S and P, then a share of O's
 * column passes), warp w on tile group * W + w / team. */
/* KT: key tiles the registers are sized for. At KT = MID_KT the cap of 80
 * registers gives six warps per scheduler: four blocks of KT warps share an
 * SM, so that one block's loads overlap the others' arithmetic (at 112, two
 * blocks did; ncu: 2.8 active warps per scheduler, half the issue slots
 * idle); two at MAX_KT. */
/* DESC: the launch's samples last first (HRMT_CUDA_ATTN_DESCEND). A
 * template argument: as a run-time one, ptxas kept s live across the tile
 * and spilled two to three times the bytes under the cap. EF: the q, k and
 * v copies evict-first in L2 (HRMT_CUDA_ATTN_STREAM). */
template <int D, int KT, bool FULL, bool ONCE, bool DESC, bool EF>
__global__ void __launch_bounds__(KT * 32) __maxnreg__(KT <= MID_KT ? 80 : 128)
    attend_mma(int T, int hidden, int W, int groups, int team, const void *__restrict__ qkv,
               void *__restrict__ att, const float *__restrict__ cs, const float *__restrict__ sn,
               float scale) {
    extern __shared__ __align__(128) unsigned char mma_smem[];
    pdl_wait(); /* qkv is the kernel before's (pdl.cuh) */
    pdl_trigger();
    const mma_layout L = mma_plan(T, D, W);
    const int h = blockIdx.x / groups, grp = blockIdx.x % groups;
    const int lane = threadIdx.x % 32, warp = threadIdx.x / 32;
    const size_t s = DESC ? gridDim.y - 1 - blockIdx.y : blockIdx.y, ld3 = 3 * (size_t)hidden;
    uint16_t *Ks = (uint16_t *)mma_smem, *Vs = (uint16_t *)(mma_smem + L.v_off);
    const uint16_t *base = (const uint16_t *)qkv + s * T * ld3 + (size_t)h * D;
    /* The block's query tiles (consecutive 16-row slabs of the Q area)
     * copied with K and V by cp.async, all in flight at once, then RoPE'd in
     * shared memory (66.4 -> 62.1 us a call at batch 256 on the H200 than
     * load_qkv's register pass, ncu; same bytes). */
    const int slot = warp / team, mate = warp % team;
    const int rt = grp * W + slot;
    const bool active = slot < W && rt < L.nkt;
    const int r0 = rt * 16;
    const int q0 = grp * W * 16, q1 = min(q0 + W * 16, L.Tp);
    uint16_t *Qs = (uint16_t *)(mma_smem + L.q_off) + (size_t)slot * 16 * L.ldk;
    load_qkv_async<D, ONCE, EF>(base, T, L.Tp, hidden, L.ldk, cs, sn, Ks, Vs, q0, q1,
                                (uint16_t *)(mma_smem + L.q_off), L.ldk);
    __syncthreads();
    if (!active) return; /* only the team's named barrier follows */
    attend_tile<D, KT, FULL>(T, L.nkt, Ks, Vs, L.ldk, Qs, L.ldk, 16, scale, mate, team, 1 + slot);
    /* The tile's O is whole in shared memory: the team's passes are done. */
    if (team > 1)
        team_sync(1 + slot, team * 32);
    else
        __syncwarp();
    uint16_t *out = (uint16_t *)att + s * T * (size_t)hidden + (size_t)h * D;
    for (int e = mate * 32 + lane; e < 16 * (D / 8); e += team * 32) {
        const int i = e / (D / 8), c = (e % (D / 8)) * 8, t = r0 + i;
        if (t < T) *(uint4 *)(out + (size_t)t * hidden + c) = *(const uint4 *)(Qs + i * L.ldk + c);
    }
}

template <int D, int KT, bool FULL, bool ONCE, bool DESC, bool EF>
cudaError_t launch_kernel(const hrmt_model *m, const void *qkv, void *att, size_t n, int W,
                          int groups, size_t bytes, const float *cs, const float *sn, float scale) {
    cudaError_t e = cudaFuncSetAttribute(attend_mma<D, KT, FULL, ONCE, DESC, EF>,
                                         cudaFuncAttributeMaxDynamicSharedMemorySize, (int)bytes);
    const size_t rows3 = 3 * m->hidden * m->esz * m->T, rows1 = m->hidden * m->esz * m->T;
    const int threads = 32 * (W > LOAD_WARPS ? W : LOAD_WARPS);
    /* Small batches (one or two query tiles a block): the load warps share
     * the tiles' column passes (HRMT_CUDA_ATTN_TEAMS). */
    const int team = cu_model(m)->attn_teams && W <= 2 ? LOAD_WARPS / W : 1;
    /* Launches of at most 65535 samples (the grid's y limit), the last
     * first when the kernel takes its samples last first. */
    const size_t chunks = (n + 65534) / 65535;
    for (size_t c = 0; c < chunks && e == cudaSuccess; c++) {
        const size_t s0 = (DESC ? chunks - 1 - c : c) * 65535;
        const size_t cnt = n - s0 < 65535 ? n - s0 : 65535;
        dim3 grid((unsigned)(m->heads * (size_t)groups), (unsigned)cnt);
        e = pdl_launch(attend_mma<D, KT, FULL, ONCE, DESC, EF>, grid, dim3(threads), bytes,
                       cu_stream(m), cu_model(m)->pdl, (int)m->T, (int)m->hidden, W, groups, team,
                       (const void *)((const char *)qkv + s0 * rows3),
                       (void *)((char *)att + s0 * rows1), cs, sn, scale);
    }
    return e;
}

/* The model's switches as the kernel's template flags, one bool at a time:
 * ONCE, the factor loads shared by K and Q (HRMT_CUDA_ATTN_ROPE_ONCE, models
 * with RoPE); DESC, the samples last first (HRMT_CUDA_ATTN_DESCEND); EF, the
 * copies evict-first (HRMT_CUDA_ATTN_STREAM). */
template <int D, int KT, bool FULL, bool... F>
cudaError_t launch(const hrmt_model *m, const void *qkv, void *att, size_t n, int W, int groups,
                   size_t bytes, const float *cs, const float *sn, float scale) {
    if constexpr (sizeof...(F) == 3) {
        return launch_kernel<D, KT, FULL, F...>(m, qkv, att, n, W, groups, bytes, cs, sn, scale);
    } else {
        const struct hrmt_model_cuda *g = cu_model(m);
        const bool flag[3] = {g->attn_rope_once && cs, g->attn_descend != 0, g->attn_stream != 0};
        if (flag[sizeof...(F)])
            return launch<D, KT, FULL, F..., true>(m, qkv, att, n, W, groups, bytes, cs, sn, scale);
        return launch<D, KT, FULL, F..., false>(m, qkv, att, n, W, groups, bytes, cs, sn, scale);
    }
}

} // namespace

int cu_attention_mma_applies(const hrmt_model *m) {
    const size_t d = m->head_dim;
    return m->dt == HRMT_BF16 && (d == 32 || d == 64) && m->T >= 1 && m->T <= 16 * MAX_KT &&
           m->hidden % 8 == 0;
}

hrmt_status cu_attention_mma(const hrmt_model *m, const void *qkv, void *att, size_t n,
                             const float *cs, const float *sn, float scale, int sms,
                             size_t per_block) {
    const int d = (int)m->head_dim, nkt = mma_plan((int)m->T, d, 1).nkt;
    /* Query tiles per block: all of a head's tiles (K and V loaded once)
     * when the batch fills the GPU twice over, else fewer, so that small
     * batches still spread over the SMs. */
    const size_t units = n * m->heads, want = 2 * (size_t)(sms > 0 ? sms : 1);
    size_t split = units >= want ? 1 : (want + units - 1) / units;
    if (split > (size_t)nkt) split = (size_t)nkt;
    const int W = (int)((nkt + split - 1) / split), groups = (nkt + W - 1) / W;
    const size_t bytes = mma_plan((int)m->T, d, W).bytes;
    if (bytes > per_block)
        return hrmt_fail(m->ctx, HRMT_ERR_UNSUPPORTED,
                         "cuda attention: %zu bytes of shared memory needed (device: %zu)", bytes,
                         per_block);
    cudaError_t e;
    if (nkt == MID_KT)
        e = d == 32 ? launch<32, MID_KT, true>(m, qkv, att, n, W, groups, bytes, cs, sn, scale)
                    : launch<64, MID_KT, true>(m, qkv, att, n, W, groups, bytes, cs, sn, scale);
    else if (nkt < MID_KT)
        e = d == 32 ? launch<32, MID_KT, false>(m, qkv, att, n, W, groups, bytes, cs, sn, scale)
                    : launch<64, MID_KT, false>(m, qkv, att, n, W, groups, bytes, cs, sn, scale);
    else if (nkt == MAX_KT)
        e = d == 32 ? launch<32, MAX_KT, true>(m, qkv, att, n, W, groups, bytes, cs, sn, scale)
                    : launch<64, MAX_KT, true>(m, qkv, att, n, W, groups, bytes, cs, sn, scale);
    else
        e = d == 32 ? launch<32, MAX_KT, false>(m, qkv, att, n, W, groups, bytes, cs, sn, scale)
                    : launch<64, MAX_KT, false>(m, qkv, att, n, W, groups, bytes, cs, sn, scale);
    if (e != cudaSuccess) return cu_fail(m->ctx, e, "cuda attention: shared memory opt-in");
    return cu_check(m->ctx, "cuda attention (registers)");
}
