/* What one link of a chain of dependent kernels costs on this GPU, the way
 * the model's step runs them (a CUDA graph; programmatic dependent launch,
 * src/cuda/pdl.cuh): a graph of N kernels, each waiting for the one before
 * and passing a value on (kernel k writes v[k + 1] = v[k] + 1 after its
 * wait, the last one hands v[N] back to v[0], so after R replays v[N] is
 * R N unless some kernel read before the one before had written), replayed
 * R times; the time per link, best of 5, for shapes like the step's
 * kernels at batch 1: one CTA; 32 CTAs in clusters of 16 with ~200 KB of
 * shared memory (the cluster projection + norm); 132 CTAs, one per SM (a
 * persistent kernel: the next one cannot be resident early). Each with and
 * without programmatic dependent launch, and with ~3 us of work a kernel
 * (a spin on %globaltimer after the wait) so that the next kernel's launch
 * can hide behind it: then (per link - 3 us) is what a link adds to work.
 * At batch 1 the step is 98 such links (docs/CUDA-KERNELS.md). Not part of
 * CMake. On the GPU machine, from the repository root:
 *   nvcc -std=c++17 -O3 -arch=sm_90 -I src bench/cuda_link_latency.cu \
 *        -o /tmp/link_latency && /tmp/link_latency
 * Exit status 0 when every chain passed its values on in order. */
#include <stdio.h>
#include <stdlib.h>

#include "cuda/pdl.cuh"

#include "cuda_check.cuh"

__global__ void link(unsigned *v, int k, int n, unsigned spin_ns) {
    pdl_wait();
    if (blockIdx.x == 0 && threadIdx.x == 0) {
        const unsigned x = __ldcg(v + k) + 1u;
        __stcg(v + k + 1, x);
        if (k + 1 == n) __stcg(v, x);
    }
    pdl_trigger();
    if (spin_ns && threadIdx.x == 0) {
        const unsigned long long t0 = now_ns();
        while (now_ns() - t0 < spin_ns) {
        }
    }
}

struct shape {
    const char *what;
    int grid, cluster;
    size_t smem;
};

/* One graph of n links of the shape, replayed reps times: ms per replay
 * (best of 5 runs); *bad += 1 when the values did not pass along. */
static double chain_ms(const shape &s, int pdl, unsigned spin_ns, int n, int reps, unsigned *v,
                       int *bad) {
    cudaStream_t st;
    CK(cudaStreamCreateWithFlags(&st, cudaStreamNonBlocking));
    CK(cudaMemsetAsync(v, 0, sizeof(unsigned) * (size_t)(n + 1), st));
    cudaGraph_t g;
    CK(cudaStreamBeginCapture(st, cudaStreamCaptureModeThreadLocal));
    for (int k = 0; k < n; k++)
        CK(cluster_launch(link, s.cluster, dim3(s.grid), dim3(128), s.smem, st, pdl, v, k, n,
                          spin_ns));
    CK(cudaStreamEndCapture(st, &g));
    cudaGraphExec_t ge;
    CK(cudaGraphInstantiate(&ge, g, 0));
    const double best = graph_best_ms(ge, st, 10, reps, 5);
    unsigned last = 0;
    CK(cudaMemcpy(&last, v + n, sizeof last, cudaMemcpyDeviceToHost));
    const unsigned want = (unsigned)((10 + 5 * reps) * n);
    if (last != want) {
        printf("  %s, pdl %d: v[N] = %u, want %u: a kernel read before the one before wrote\n",
               s.what, pdl, last, want);
        ++*bad;
    }
    CK(cudaGraphExecDestroy(ge));
    CK(cudaGraphDestroy(g));
    CK(cudaStreamDestroy(st));
    return best;
}

int main(void) {
    cudaDeviceProp prop;
    CK(cudaGetDeviceProperties(&prop, 0));
    const int n = 98, reps = 200;
    const size_t big = 200 * 1024;
    CK(cudaFuncSetAttribute(link, cudaFuncAttributeMaxDynamicSharedMemorySize, (int)big));
    CK(cudaFuncSetAttribute(link, cudaFuncAttributeNonPortableClusterSizeAllowed, 1));
    const shape shapes[] = {
        {"1 CTA, no shared memory", 1, 1, 0},
        {"32 CTAs in clusters of 16, 200 KB shared", 32, 16, big},
        {"one CTA per SM, 200 KB shared", prop.multiProcessorCount, 1, big},
    };
    unsigned *v;
    CK(cudaMalloc(&v, sizeof(unsigned) * (size_t)(n + 1)));
    int bad = 0;
    printf(
        "%s: a graph of %d dependent kernels (128 threads a CTA) replayed %d times, best of "
        "5; us per link\n",
        prop.name, n, reps);
    printf("%-44s %10s %10s %14s %14s\n", "kernel shape", "plain", "PDL", "plain +3us", "PDL +3us");
    for (const shape &s : shapes) {
        double t[4];
        for (int i = 0; i < 4; i++)
            t[i] = chain_ms(s, i & 1, i >= 2 ? 3000u : 0u, n, reps, v, &bad) * 1e3 / n;
        printf("%-44s %10.2f %10.2f %14.2f %14.2f\n", s.what, t[0], t[1], t[2], t[3]);
    }
    printf("(+3us: each kernel spins 3 us after its wait; per link - 3 is what a link adds)\n");
    CK(cudaFree(v));
    return bad ? 1 : 0;
}
