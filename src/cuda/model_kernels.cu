/* The step's small kernels: reset of halted samples, input embeddings and the
 * Q-head finish with the ACT halting rule. Arithmetic as model/forward.c and
 * model/act.c: each product and sum rounded separately (no FMA contraction),
 * BF16 by round-to-nearest-even of the F32 result. */
#include "cuda/act_finish.cuh"
#include "cuda/bf16.cuh"
#include "cuda/inject_pair.cuh"
#include "cuda/model_kernels.cuh"
#include "cuda/pdl.cuh"

namespace {

__device__ __forceinline__ float bf16_to_f32(uint16_t h) {
    return __uint_as_float((uint32_t)h << 16);
}

constexpr int THREADS = 256;

unsigned blocks_for(size_t n) {
    size_t b = (n + THREADS - 1) / THREADS;
    return (unsigned)(b > 65535u * 8 ? 65535u * 8 : b ? b : 1);
}

/* zH, zL rows of halted samples = H_init, L_init (element type E). */
template <typename E>
__global__ void reset_z(size_t total, size_t T, size_t H, const int32_t *halted, E *zH, E *zL,
                        const E *Hi, const E *Li) {
    for (size_t i = blockIdx.x * (size_t)blockDim.x + threadIdx.x; i < total;
         i += (size_t)gridDim.x * blockDim.x) {
        size_t s = i / (T * H), c = i % H;
        if (halted[s]) {
            zH[i] = Hi[c];
            zL[i] = Li[c];
        }
    }
}

/* Eight elements a thread (16-byte accesses) and 32-bit index arithmetic:
 * the one-element kernels' two 64-bit divisions per element held them at
 * ~45 us (reset) and ~74 us (embed) a step at batch 256 on the H200 (ncu),
 * for ~43 and ~21 MB of stores. Used where H % 8 == 0 and the chunk count
 * fits 32 bits; same values. */
template <typename E>
struct alignas(16) vec8 {
    E v[8];
};

template <typename E>
__global__ void reset_z8(unsigned chunks, unsigned TH8, unsigned H8, const int32_t *halted, E *zH,
                         E *zL, const E *Hi, const E *Li) {
    for (unsigned i = blockIdx.x * blockDim.x + threadIdx.x; i < chunks;
         i += gridDim.x * blockDim.x) {
        if (!halted[i / TH8]) continue;
        const unsigned c = i % H8;
        ((vec8<E> *)zH)[i] = ((const vec8<E> *)Hi)[c];
        ((vec8<E> *)zL)[i] = ((const vec8<E> *)Li)[c];
    }
}

__global__ void reset_ids(size_t B, size_t seq, const int32_t *halted, int32_t *steps,
                          int32_t *inputs, const int32_t *new_inputs, int32_t *pids,
                          const int32_t *new_pids, int has_pids) {
    for (size_t i = blockIdx.x * (size_t)blockDim.x + threadIdx.x; i < B * seq;
         i += (size_t)gridDim.x * blockDim.x) {
        size_t s = i / seq;
        if (!halted[s]) continue;
        inputs[i] = new_inputs[i];
        if (i % seq == 0) {
            steps[s] = 0;
            pids[s] = has_pids ? new_pids[s] : 0;
        }
    }
}

/* c * x as forward.c's scale_rows: BF16 casts the scalar to bf16 first. */
template <bool BF>
__device__ __forceinline__ float scale(float c, float x) {
    if (BF)
        return bf16_to_f32(hrmt_cu_f32_to_bf16(__fmul_rn(bf16_to_f32(hrmt_cu_f32_to_bf16(c)), x)));
    return __fmul_rn(c, x);
}

/* One element of the embedding: e (and its position embedding p when pos
 * is set) as F32 values of the storage type, scaled as forward.c does. */
template <bool BF>
__device__ __forceinline__ float embed_el(float v, bool pos, float p, float sqrt_h) {
    if (pos) {
        /* 0.707106781 * (e + embed_pos): the add and the product each round. */
        v = __fadd_rn(v, p);
        if (BF) v = bf16_to_f32(hrmt_cu_f32_to_bf16(v));
        v = scale<BF>(0.707106781f, v);
    }
    return scale<BF>(sqrt_h, v);
}

template <bool BF>
__global__ void embed(size_t total, size_t T, size_t P, size_t seq, size_t H, const int32_t *inputs,
                      const int32_t *pids, const void *tok, const void *puz, const void *pos,
                      float sqrt_h, void *x) {
    typedef typename std::conditional<BF, uint16_t, float>::type E;
    for (size_t i = blockIdx.x * (size_t)blockDim.x + threadIdx.x; i < total;
         i += (size_t)gridDim.x * blockDim.x) {
        size_t s = i / (T * H), t = (i / H) % T, c = i % H;
        E e = t < P ? ((const E *)puz)[((size_t)pids[s] * P + t) * H + c]
                    : ((const E *)tok)[(size_t)inputs[s * seq + t - P] * H + c];
        float p = 0.0f;
        if (pos)
            p = BF ? bf16_to_f32(((const uint16_t *)pos)[t * H + c])
                   : ((const float *)pos)[t * H + c];
        const float v =
            embed_el<BF>(BF ? bf16_to_f32((uint16_t)e) : (float)e, pos != nullptr, p, sqrt_h);
        if (BF)
            ((uint16_t *)x)[i] = hrmt_cu_f32_to_bf16(v);
        else
            ((float *)x)[i] = v;
    }
}

/* Chunk c8 of an embedding row: the eight elements of table row `src` (and
 * of position row t when pos is set), embed_el's arithmetic on each. */
template <bool BF, typename E>
__device__ __forceinline__ vec8<E> embed_chunk(const E *src, const void *pos, unsigned t,
                                               unsigned H8, unsigned c8, float sqrt_h) {
    const vec8<E> e = ((const vec8<E> *)src)[c8];
    vec8<E> p, o;
    if (pos) p = ((const vec8<E> *)pos)[(size_t)t * H8 + c8];
#pragma unroll
    for (int k = 0; k < 8; k++) {
        float v, q = 0.0f;
        if constexpr (BF) {
            v = bf16_to_f32(e.v[k]);
            if (pos) q = bf16_to_f32(p.v[k]);
        } else {
            v = e.v[k];
            if (pos) q = p.v[k];
        }
        v = embed_el<BF>(v, pos != nullptr, q, sqrt_h);
        if constexpr (BF)
            o.v[k] = hrmt_cu_f32_to_bf16(v);
        else
            o.v[k] = v;
    }
    return o;
}

/* embed's arithmetic, eight elements a thread (see reset_z8). */
template <bool BF>
__global__ void embed8(unsigned chunks, unsigned T, unsigned P, unsigned seq, unsigned H8,
                       const int32_t *inputs, const int32_t *pids, const void *tok, const void *puz,
                       const void *pos, float sqrt_h, void *x) {
    typedef typename std::conditional<BF, uint16_t, float>::type E;
    const size_t H = (size_t)H8 * 8;
    for (unsigned i = blockIdx.x * blockDim.x + threadIdx.x; i < chunks;
         i += gridDim.x * blockDim.x) {
        const unsigned row = i / H8, c8 = i % H8, s = row / T, t = row % T;
        const E *src = t < P ? (const E *)puz + ((size_t)pids[s] * P + t) * H
                             : (const E *)tok + (size_t)inputs[(size_t)s * seq + t - P] * H;
        const vec8<E> o = embed_chunk<BF>(src, pos, t, H8, c8, sqrt_h);
        ((vec8<E> *)x)[i] = o;
    }
}

/* reset_z8, reset_ids and embed8 as one kernel, one link of the step's
 * chain instead of three: each thread resets its chunk of a halted sample's
 * z_H and z_L and embeds its chunk of x from the ids the reset gives that
 * sample (new ones where halted; the first thread of each row stores them).
 * A row's other threads read the ids from where reset_ids reads them, never
 * from what this kernel writes, so the values are the three kernels'. With
 * INJ (BF16) the first L level's injection follows on the same chunk:
 * z_L = bf16(z_L + bf16(z_H + x)), the injection kernel's bits. */
template <bool BF, bool INJ>
__global__ void reset_embed8(unsigned chunks, unsigned T, unsigned P, unsigned seq, unsigned H8,
                             const int32_t *halted, int32_t *steps, int32_t *inputs,
                             const int32_t *new_inputs, int32_t *pids, const int32_t *new_pids,
                             int has_pids, void *zH, void *zL, const void *Hi, const void *Li,
                             const void *tok, const void *puz, const void *pos, float sqrt_h,
                             void *x) {
    typedef typename std::conditional<BF, uint16_t, float>::type E;
    pdl_trigger(); /* the injection after it waits for the whole grid */
    const size_t H = (size_t)H8 * 8;
    for (unsigned i = blockIdx.x * blockDim.x + threadIdx.x; i < chunks;
         i += gridDim.x * blockDim.x) {
        const unsigned row = i / H8, c8 = i % H8, s = row / T, t = row % T;
        const bool h = halted[s] != 0;
        uint4 zh, zl; /* INJ: this chunk of z_H and z_L after the reset */
        if (h) {
            ((vec8<E> *)zH)[i] = ((const vec8<E> *)Hi)[c8];
            ((vec8<E> *)zL)[i] = ((const vec8<E> *)Li)[c8];
        }
        if constexpr (INJ) {
            zh = h ? ((const uint4 *)Hi)[c8] : ((const uint4 *)zH)[i];
            zl = h ? ((const uint4 *)Li)[c8] : ((const uint4 *)zL)[i];
        }
        const int32_t pid = h ? (has_pids ? new_pids[s] : 0) : pids[s];
        if (h && c8 == 0 && t == 0) {
            steps[s] = 0;
            pids[s] = pid;
        }
        const E *src;
        if (t < P) {
            src = (const E *)puz + ((size_t)pid * P + t) * H;
        } else {
            const size_t k = (size_t)s * seq + t - P;
            const int32_t id = h ? new_inputs[k] : inputs[k];
            if (h && c8 == 0) inputs[k] = id;
            src = (const E *)tok + (size_t)id * H;
        }
        const vec8<E> o = embed_chunk<BF>(src, pos, t, H8, c8, sqrt_h);
        ((vec8<E> *)x)[i] = o;
        if constexpr (INJ) {
            const uint4 xv = *(const uint4 *)&o;
            ((uint4 *)zL)[i] = make_uint4(
                inject_pair<true>(zl.x, zh.x, xv.x), inject_pair<true>(zl.y, zh.y, xv.y),
                inject_pair<true>(zl.z, zh.z, xv.z), inject_pair<true>(zl.w, zh.w, xv.w));
        }
    }
}

/* The eight-wide kernels' conditions: whole 16-byte chunks (H % 8; the
 * buffers are 256-byte aligned), chunk counts below 2^31 (a grid-stride
 * index in 32 bits never wraps). */
bool vec8_ok(size_t rows, size_t H) {
    return H >= 8 && H % 8 == 0 && rows <= (UINT32_MAX / 2) / (H / 8);
}

__global__ void finish(int B, float *q, float b0, float b1, int bf, int32_t *steps, int32_t *halted,
                       int max_steps, int early) {
    int s = blockIdx.x * blockDim.x + threadIdx.x;
    if (s >= B) return;
    act_finish_sample(s, q[2 * s], q[2 * s + 1], b0, b1, bf, q, steps, halted, max_steps, early);
}

} // namespace

hrmt_status cu_reset(const hrmt_model *m, const hrmt_carry *c, int has_pids) {
    const struct hrmt_carry_cuda *g = cu_carry(c);
    const struct hrmt_model_cuda *w = cu_model(m);
    const size_t B = (size_t)c->batch, total = B * m->T * m->hidden;
    cudaStream_t st = cu_stream(m);
    if (vec8_ok(B * m->T, m->hidden)) {
        const unsigned H8 = (unsigned)(m->hidden / 8), chunks = (unsigned)(total / 8);
        if (m->dt == HRMT_BF16)
            reset_z8<uint16_t><<<blocks_for(chunks), THREADS, 0, st>>>(
                chunks, (unsigned)m->T * H8, H8, g->halted, (uint16_t *)g->zH, (uint16_t *)g->zL,
                (const uint16_t *)w->H_init, (const uint16_t *)w->L_init);
        else
            reset_z8<float><<<blocks_for(chunks), THREADS, 0, st>>>(
                chunks, (unsigned)m->T * H8, H8, g->halted, (float *)g->zH, (float *)g->zL,
                (const float *)w->H_init, (const float *)w->L_init);
    } else if (m->dt == HRMT_BF16)
        reset_z<uint16_t><<<blocks_for(total), THREADS, 0, st>>>(
            total, m->T, m->hidden, g->halted, (uint16_t *)g->zH, (uint16_t *)g->zL,
            (const uint16_t *)w->H_init, (const uint16_t *)w->L_init);
    else
        reset_z<float><<<blocks_for(total), THREADS, 0, st>>>(
            total, m->T, m->hidden, g->halted, (float *)g->zH, (float *)g->zL,
            (const float *)w->H_init, (const float *)w->L_init);
    hrmt_status s = cu_check(m->ctx, "cuda reset");
    if (s != HRMT_OK) return s;
    reset_ids<<<blocks_for(B * m->seq), THREADS, 0, st>>>(
        B, m->seq, g->halted, g->steps, g->inputs, g->new_inputs, g->pids, g->new_pids, has_pids);
    return cu_check(m->ctx, "cuda reset ids");
}

hrmt_status cu_embed(const hrmt_model *m, const hrmt_carry *c) {
    const struct hrmt_carry_cuda *g = cu_carry(c);
    const struct hrmt_model_cuda *w = cu_model(m);
    const size_t total = (size_t)c->batch * m->T * m->hidden;
    const float sh = (float)sqrt((double)m->hidden);
    cudaStream_t st = cu_stream(m);
    if (vec8_ok((size_t)c->batch * m->T, m->hidden)) {
        const unsigned H8 = (unsigned)(m->hidden / 8), chunks = (unsigned)(total / 8);
        if (m->dt == HRMT_BF16)
            embed8<true><<<blocks_for(chunks), THREADS, 0, st>>>(
                chunks, (unsigned)m->T, (unsigned)m->P, (unsigned)m->seq, H8, g->inputs, g->pids,
                w->embed_tokens, w->puzzle_emb, w->embed_pos, sh, g->x);
        else
            embed8<false><<<blocks_for(chunks), THREADS, 0, st>>>(
                chunks, (unsigned)m->T, (unsigned)m->P, (unsigned)m->seq, H8, g->inputs, g->pids,
                w->embed_tokens, w->puzzle_emb, w->embed_pos, sh, g->x);
    } else if (m->dt == HRMT_BF16)
        embed<true><<<blocks_for(total), THREADS, 0, st>>>(total, m->T, m->P, m->seq, m->hidden,
                                                           g->inputs, g->pids, w->embed_tokens,
                                                           w->puzzle_emb, w->embed_pos, sh, g->x);
    else
        embed<false><<<blocks_for(total), THREADS, 0, st>>>(total, m->T, m->P, m->seq, m->hidden,
                                                            g->inputs, g->pids, w->embed_tokens,
                                                            w->puzzle_emb, w->embed_pos, sh, g->x);
    return cu_check(m->ctx, "cuda embed");
}

hrmt_status cu_reset_embed(const hrmt_model *m, const hrmt_carry *c, int has_pids, int inject,
                           int *done) {
    const struct hrmt_carry_cuda *g = cu_carry(c);
    const struct hrmt_model_cuda *w = cu_model(m);
    const size_t B = (size_t)c->batch;
    *done = 0;
    if (!w->fused_reset || !vec8_ok(B * m->T, m->hidden)) return HRMT_OK;
    const unsigned H8 = (unsigned)(m->hidden / 8), chunks = (unsigned)(B * m->T * H8);
    const float sh = (float)sqrt((double)m->hidden);
    void (*kern)(unsigned, unsigned, unsigned, unsigned, unsigned, const int32_t *, int32_t *,
                 int32_t *, const int32_t *, int32_t *, const int32_t *, int, void *, void *,
                 const void *, const void *, const void *, const void *, const void *, float,
                 void *) = m->dt != HRMT_BF16 ? reset_embed8<false, false>
                           : inject           ? reset_embed8<true, true>
                                              : reset_embed8<true, false>;
    kern<<<blocks_for(chunks), THREADS, 0, cu_stream(m)>>>(
        chunks, (unsigned)m->T, (unsigned)m->P, (unsigned)m->seq, H8, g->halted, g->steps,
        g->inputs, g->new_inputs, g->pids, g->new_pids, has_pids, g->zH, g->zL, w->H_init,
        w->L_init, w->embed_tokens, w->puzzle_emb, w->embed_pos, sh, g->x);
    *done = 1;
    return cu_check(m->ctx, "cuda reset + embed");
}

hrmt_status cu_finish(const hrmt_model *m, const hrmt_carry *c, int early_halt) {
    const struct hrmt_carry_cuda *g = cu_carry(c);
    finish<<<(c->batch + 127) / 128, 128, 0, cu_stream(m)>>>(
        c->batch, g->q, m->q_bias[0], m->q_bias[1], m->dt == HRMT_BF16, g->steps, g->halted,
        m->cfg.halt_max_steps, early_halt);
    return cu_check(m->ctx, "cuda q head");
}
