/* What it costs a kernel to get the tile the kernel before it wrote, the two
 * fixed costs the link trace found in every small-batch kernel (session 32,
 * docs/CUDA-KERNELS.md: ~0.6-0.9 us from the last CTA's end to the next
 * kernel's wait return, then ~1 us to the first stage of A in shared
 * memory; ~1.8 us a kernel, ~170 us of batch 1's ~500), and what the two
 * alternatives would save:
 *   handoff  PDL:  griddepcontrol.wait, as the model's kernels do (the
 *                  whole grid before must have ended and flushed);
 *            flag: the kernel before's CTAs each add one to a counter
 *                  (release, gpu scope) after their stores, and this
 *                  kernel's CTAs spin on it (acquire) until all have; no
 *                  griddepcontrol.wait (flag_wait and flag_release below;
 *                  the model's opt-in HRMT_CUDA_FLAG_LINKS, removed as
 *                  slower than the PDL wait). Each CTA keeps its own
 *                  generation slot, so graph replays need no reset;
 *   load     TMA:  one 64 x 64 BF16 box by the tensor map, 128-byte
 *                  swizzle, counted on an mbarrier (the kernels' A stage);
 *            LDG:  128 threads, four 16-byte ld.global.cg each, stored
 *                  into the same swizzled places, then a CTA barrier;
 *            cp.async: the same chunks by cp.async.cg, then wait_group.
 * A chain of N kernels as one CUDA graph, each launched with programmatic
 * dependent launch (so it is resident early), replayed R times: kernel k
 * loads tile (CTA % P) of buffer k, adds 1 to each element and writes its
 * own tile of buffer k + 1 (the last also buffer 0), so after all replays
 * (warm-ups and timed) every element of buffer N is its first value (which
 * depends on its tile, row and column) plus their count times N, unless
 * some kernel read before the kernel before had written; each CTA also
 * checks that every element of its tile has had the same count of hops (a
 * torn read, or one from the wrong place). The time per link, best of 5, for the step's
 * batch-1 shapes, with nothing else in a kernel and with ~3 us of work
 * after the load (a spin on %globaltimer before the stores): (per link - 3
 * us) is what the handoff and the load add to a kernel's work.
 * Not part of CMake. On the GPU machine, from the repository root
 * (bench/gpu_links.sh does it):
 *   nvcc -std=c++17 -O3 -arch=sm_90a -I include -I src \
 *        bench/cuda_handoff_latency.cu -o /tmp/handoff && /tmp/handoff
 * Exit status 0 when every chain passed its values on in order. */
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>

#include "cuda/sm90a/act_tile_swizzle.h"
#include "cuda/sm90a/wgmma_common.cuh"

#include "cuda_check.cuh"

namespace {

constexpr int TILE_ROWS = 64, TILE_BYTES = TILE_ROWS * ROW_BYTES; /* 64 x 64 BF16: 8 KB */
constexpr int THREADS = 128;
enum { HAND_PDL, HAND_FLAG };
enum { LOAD_TMA, LOAD_LDG, LOAD_CPASYNC };

#ifdef HRMT_SM90A
/* The flag hand-over's wait: until the count reaches `want`, polled relaxed
 * (an acquire load also invalidates L1 each time), then one acquire load
 * (it passes at once) and the async proxy (TMA) ordered after it, as the
 * grid end's flush does for the PDL wait. */
__device__ __forceinline__ void flag_wait(const unsigned *cnt, unsigned want) {
    unsigned v;
    do {
        asm volatile("ld.relaxed.gpu.global.u32 %0, [%1];" : "=r"(v) : "l"(cnt) : "memory");
    } while ((int)(v - want) < 0);
    asm volatile("{\n\t.reg .b32 t;\n\tld.acquire.gpu.global.u32 t, [%0];\n\t}" ::"l"(cnt)
                 : "memory");
    asm volatile("fence.proxy.async.global;" ::: "memory");
}
/* The CTA's release after its last store (nothing without a counter): each
 * thread orders its stores for the next kernel's TMA reads, the barrier
 * orders them all before the leader's release (which is cumulative), so
 * whoever acquires the count sees them. */
__device__ __forceinline__ void flag_release(unsigned *cnt, bool leader) {
    if (!cnt) return;
    asm volatile("fence.proxy.async.global;" ::: "memory");
    asm volatile("bar.sync 1, %0;" ::"n"(THREADS) : "memory");
    if (leader) asm volatile("red.release.gpu.global.add.u32 [%0], 1;" ::"l"(cnt) : "memory");
}
#endif

/* Buffer 0's value at (tile, row, column): position-dependent, so that a
 * tile read from the wrong place, rows or swizzle fails the checks. */
__host__ __device__ __forceinline__ uint16_t seed_at(int tile, int row, int col) {
    return (uint16_t)((tile * 97 + row * 67 + col * 13) & 0x3ff);
}

struct link_args {
    const uint16_t *in; /* buffer k: P tiles of 64 rows x 64 */
    uint16_t *out;      /* buffer k + 1 */
    uint16_t *wrap;     /* buffer 0 when this is the chain's last kernel, else null */
    const unsigned *cnt_in;
    unsigned *cnt_out; /* flag handoff: CTAs of this kernel that have stored */
    unsigned *gen;     /* this kernel's per-CTA generation slots */
    unsigned *bad;     /* torn tiles seen */
    int tiles;         /* P: the grid before's CTAs (and tiles) */
    unsigned spin_ns;
};

template <int HAND, int LOAD>
__global__ void __launch_bounds__(THREADS)
    hop(const __grid_constant__ CUtensorMap tm, const link_args a) {
#ifdef HRMT_SM90A
    extern __shared__ __align__(1024) uint8_t raw[];
    uint8_t *tile = (uint8_t *)(((uintptr_t)raw + 1023) & ~(uintptr_t)1023);
    __shared__ uint64_t bar;
    if (LOAD == LOAD_TMA) {
        if (threadIdx.x == 0) {
            mbar_init(&bar, 1);
            asm volatile("fence.mbarrier_init.release.cluster;" ::: "memory");
        }
        __syncthreads();
    }
    if (HAND == HAND_PDL) {
        pdl_wait();
        pdl_trigger();
    } else {
        if (a.cnt_in && threadIdx.x == 0) {
            /* On a count that grows by the grid before's CTAs each
             * replay. */
            const unsigned g = a.gen[blockIdx.x] + 1;
            flag_wait(a.cnt_in, (unsigned)a.tiles * g);
            a.gen[blockIdx.x] = g;
        }
        __syncthreads();
        /* As the PDL form: the next kernel becomes resident while this one
         * works, and spins on this one's counter meanwhile. */
        pdl_trigger();
    }
    const int src = (int)(blockIdx.x % (unsigned)a.tiles);
    const uint8_t *in = (const uint8_t *)(a.in + (size_t)src * TILE_ROWS * 64);
    if (LOAD == LOAD_TMA) {
        if (threadIdx.x == 0) {
            mbar_expect_tx(&bar, TILE_BYTES);
            tma_load(tile, &tm, &bar, 0, src * TILE_ROWS);
        }
        mbar_wait(&bar, 0);
    } else {
        for (int i = 0; i < 4; i++) {
            const int c = (int)threadIdx.x + i * THREADS, row = c >> 3, chunk = c & 7;
            uint8_t *dst = tile + sw128_offset(row, chunk);
            const uint8_t *p = in + row * ROW_BYTES + chunk * 16;
            if (LOAD == LOAD_LDG) {
                *(uint4 *)dst = __ldcg((const uint4 *)p);
            } else {
                asm volatile("cp.async.cg.shared.global [%0], [%1], 16;" ::"r"(smem_u32(dst)),
                             "l"(p)
                             : "memory");
            }
        }
        if (LOAD == LOAD_CPASYNC) asm volatile("cp.async.wait_all;" ::: "memory");
        __syncthreads();
    }
    /* The work the loaded tile feeds (the kernels' products): every store
     * after it. */
    if (a.spin_ns) {
        if (threadIdx.x == 0) {
            const unsigned long long t0 = now_ns();
            while (now_ns() - t0 < a.spin_ns) {
            }
        }
        __syncthreads();
    }
    /* Every element is its seed plus the hops so far: one count a tile. */
    const uint16_t hops = (uint16_t)(*(const uint16_t *)tile - seed_at(src, 0, 0));
    int torn = 0;
    uint16_t *out = a.out + (size_t)blockIdx.x * TILE_ROWS * 64;
    uint16_t *wrap = a.wrap ? a.wrap + (size_t)blockIdx.x * TILE_ROWS * 64 : nullptr;
    for (int i = 0; i < 4; i++) {
        const int c = (int)threadIdx.x + i * THREADS, row = c >> 3, chunk = c & 7;
        uint16_t v[8];
        *(uint4 *)v = *(const uint4 *)(tile + sw128_offset(row, chunk));
        for (int e = 0; e < 8; e++) {
            torn |= v[e] != (uint16_t)(seed_at(src, row, chunk * 8 + e) + hops);
            v[e] = (uint16_t)(v[e] + 1u);
        }
        __stcg((uint4 *)(out + row * 64 + chunk * 8), *(const uint4 *)v);
        if (wrap) __stcg((uint4 *)(wrap + row * 64 + chunk * 8), *(const uint4 *)v);
    }
    if (torn) atomicAdd(a.bad, 1u);
    /* Every thread's stores, a barrier, one release. */
    if (HAND == HAND_FLAG) flag_release(a.cnt_out, threadIdx.x == 0);
#endif
}

struct shape {
    const char *what;
    int grid, cluster;
    size_t smem;
};

struct chain {
    int n, tiles;
    uint16_t *buf;  /* n + 1 buffers of `tiles` tiles */
    uint16_t *seed; /* host: buffer 0's first values (seed_at) */
    unsigned *cnt, *gen, *bad;
    CUtensorMap *maps;
};

using hop_fn = void (*)(const CUtensorMap, const link_args);
hop_fn pick(int hand, int load) {
    static const hop_fn t[2][3] = {
        {hop<HAND_PDL, LOAD_TMA>, hop<HAND_PDL, LOAD_LDG>, hop<HAND_PDL, LOAD_CPASYNC>},
        {hop<HAND_FLAG, LOAD_TMA>, hop<HAND_FLAG, LOAD_LDG>, hop<HAND_FLAG, LOAD_CPASYNC>},
    };
    return t[hand][load];
}

/* One graph of c.n kernels of the shape, replayed reps times: ms per replay
 * (best of 5); *fails += 1 when a chain did not pass its values on. */
double chain_ms(const chain &c, const shape &s, int hand, int load, unsigned spin_ns, int reps,
                int *fails) {
    const size_t tile_elems = (size_t)TILE_ROWS * 64, buf_elems = tile_elems * (size_t)c.tiles;
    cudaStream_t st;
    CK(cudaStreamCreateWithFlags(&st, cudaStreamNonBlocking));
    CK(cudaMemsetAsync(c.buf, 0, sizeof(uint16_t) * buf_elems * (size_t)(c.n + 1), st));
    CK(cudaMemcpyAsync(c.buf, c.seed, sizeof(uint16_t) * buf_elems, cudaMemcpyHostToDevice, st));
    CK(cudaMemsetAsync(c.cnt, 0, sizeof(unsigned) * (size_t)(c.n + 1), st));
    CK(cudaMemsetAsync(c.gen, 0, sizeof(unsigned) * (size_t)c.n * (size_t)c.tiles, st));
    CK(cudaMemsetAsync(c.bad, 0, sizeof(unsigned), st));
    hop_fn f = pick(hand, load);
    cudaGraph_t g;
    CK(cudaStreamBeginCapture(st, cudaStreamCaptureModeThreadLocal));
    for (int k = 0; k < c.n; k++) {
        link_args a;
        a.in = c.buf + buf_elems * (size_t)k;
        a.out = c.buf + buf_elems * (size_t)(k + 1);
        a.wrap = k + 1 == c.n ? c.buf : nullptr;
        a.cnt_in = k ? c.cnt + k : nullptr; /* the chain's first kernel follows the last replay */
        a.cnt_out = c.cnt + k + 1;
        a.gen = c.gen + (size_t)k * (size_t)c.tiles;
        a.bad = c.bad;
        a.tiles = c.tiles;
        a.spin_ns = spin_ns;
        CK(cluster_launch(f, s.cluster, dim3(s.grid), dim3(THREADS), s.smem, st, 1, c.maps[k], a));
    }
    CK(cudaStreamEndCapture(st, &g));
    cudaGraphExec_t ge;
    CK(cudaGraphInstantiate(&ge, g, 0));
    const int warm = 10;
    const double best = graph_best_ms(ge, st, warm, reps, 5);
    uint16_t *last = (uint16_t *)malloc(sizeof(uint16_t) * buf_elems);
    if (!last) {
        fprintf(stderr, "out of host memory\n");
        exit(2);
    }
    CK(cudaMemcpy(last, c.buf + buf_elems * (size_t)c.n, sizeof(uint16_t) * buf_elems,
                  cudaMemcpyDeviceToHost));
    unsigned torn = 0;
    CK(cudaMemcpy(&torn, c.bad, sizeof torn, cudaMemcpyDeviceToHost));
    const unsigned hops = (unsigned)(warm + 5 * reps) * (unsigned)c.n;
    size_t wrong = 0;
    for (size_t i = 0; i < buf_elems; i++) wrong += last[i] != (uint16_t)(c.seed[i] + hops);
    if (wrong || torn) {
        printf("  %s, %s handoff, load %d: %zu of %zu values wrong (%u hops), %u torn tiles\n",
               s.what, hand == HAND_PDL ? "PDL" : "flag", load, wrong, buf_elems, hops, torn);
        ++*fails;
    }
    free(last);
    CK(cudaGraphExecDestroy(ge));
    CK(cudaGraphDestroy(g));
    CK(cudaStreamDestroy(st));
    return best;
}

} // namespace

int main(void) {
    cudaDeviceProp prop;
    if (!sm90_device(&prop)) return 2;
    const int n = 98, reps = 100;
    const size_t big = 200 * 1024;
    /* The step's batch-1 kernels: the cluster projection + norm (32 CTAs in
     * clusters of 16, ~200 KB each), the fused gate_up (96 CTAs), one CTA. */
    const shape shapes[] = {
        {"1 CTA", 1, 1, 16 * 1024},
        {"32 CTAs in clusters of 16, 200 KB shared", 32, 16, big},
        {"96 CTAs, 100 KB shared", 96, 1, 100 * 1024},
    };
    for (int h = 0; h < 2; h++)
        for (int l = 0; l < 3; l++) {
            CK(cudaFuncSetAttribute(pick(h, l), cudaFuncAttributeMaxDynamicSharedMemorySize,
                                    (int)big));
            CK(cudaFuncSetAttribute(pick(h, l), cudaFuncAttributeNonPortableClusterSizeAllowed, 1));
        }
    PFN_cuTensorMapEncodeTiled_v12000 fn = encode_fn();
    if (!fn) {
        fprintf(stderr, "no cuTensorMapEncodeTiled\n");
        return 2;
    }
    int fails = 0;
    printf(
        "%s: a graph of %d dependent kernels (%d threads a CTA, each loading a 64 x 64 BF16 "
        "tile of %d bytes the one before wrote), replayed %d times, best of 5; us per link\n",
        prop.name, n, THREADS, TILE_BYTES, reps);
    printf("%-42s %-5s %9s %9s %9s %12s %12s %12s\n", "kernel shape", "hand", "TMA", "LDG",
           "cp.async", "TMA +3us", "LDG +3us", "cp.async +3");
    for (const shape &s : shapes) {
        chain c;
        c.n = n;
        c.tiles = s.grid;
        const size_t buf_elems = (size_t)TILE_ROWS * 64 * (size_t)c.tiles;
        CK(cudaMalloc(&c.buf, sizeof(uint16_t) * buf_elems * (size_t)(n + 1)));
        CK(cudaMalloc(&c.cnt, sizeof(unsigned) * (size_t)(n + 1)));
        CK(cudaMalloc(&c.gen, sizeof(unsigned) * (size_t)n * (size_t)c.tiles));
        CK(cudaMalloc(&c.bad, sizeof(unsigned)));
        /* The encoder wants the map 64-byte aligned; malloc gives 16. */
        c.maps =
            (CUtensorMap *)aligned_alloc(alignof(CUtensorMap), sizeof(CUtensorMap) * (size_t)n);
        c.seed = (uint16_t *)malloc(sizeof(uint16_t) * buf_elems);
        if (!c.maps || !c.seed) {
            fprintf(stderr, "out of host memory\n");
            return 2;
        }
        for (size_t i = 0; i < buf_elems; i++)
            c.seed[i] =
                seed_at((int)(i / (TILE_ROWS * 64)), (int)(i / 64 % TILE_ROWS), (int)(i % 64));
        for (int k = 0; k < n; k++)
            if (!encode(fn, &c.maps[k], c.buf + buf_elems * (size_t)k,
                        (size_t)TILE_ROWS * (size_t)c.tiles, 64, 64, TILE_ROWS)) {
                fprintf(stderr, "tensor map %d refused\n", k);
                return 2;
            }
        for (int h = 0; h < 2; h++) {
            double t[6];
            for (int i = 0; i < 6; i++)
                t[i] = chain_ms(c, s, h, i % 3, i >= 3 ? 3000u : 0u, reps, &fails) * 1e3 / n;
            printf("%-42s %-5s %9.2f %9.2f %9.2f %12.2f %12.2f %12.2f\n", s.what,
                   h == HAND_PDL ? "PDL" : "flag", t[0], t[1], t[2], t[3], t[4], t[5]);
        }
        free(c.maps);
        free(c.seed);
        CK(cudaFree(c.buf));
        CK(cudaFree(c.cnt));
        CK(cudaFree(c.gen));
        CK(cudaFree(c.bad));
    }
    printf(
        "(+3us: each kernel spins 3 us after its load; per link - 3 is what the handoff and "
        "the load add to a kernel's work)\n");
    return fails ? 1 : 0;
}
