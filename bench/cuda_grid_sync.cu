/* What a grid-wide barrier costs on this GPU (model_grid.cu's grid_sync,
 * src/cuda/grid_sync.cuh): one cooperative launch of one 256-thread CTA per
 * SM runs N barriers back to back; then the same with each CTA reading a
 * value another CTA wrote before the barrier (the pattern of the level
 * kernel's stages); and the time of an empty cooperative launch. Not part
 * of CMake. On the GPU machine, from the repository root:
 *   nvcc -std=c++17 -O3 -arch=sm_90 -I include -I src bench/cuda_grid_sync.cu \
 *        -o /tmp/grid_sync && /tmp/grid_sync
 * Exit status 0 when the exchange read what it should. */
#include <stdio.h>
#include <stdlib.h>

#include "../src/cuda/grid_sync.cuh"

#include "cuda_check.cuh"

__global__ void barriers(unsigned *bar, int n, unsigned *slots, unsigned *bad) {
    unsigned target = 0;
    for (int i = 0; i < n; i++) {
        if (slots && threadIdx.x == 0) slots[blockIdx.x] = (unsigned)i;
        grid_sync(bar, target);
        if (slots && threadIdx.x == 0) {
            const unsigned v = __ldcg(slots + (blockIdx.x + 1) % gridDim.x);
            if (v != (unsigned)i) atomicAdd(bad, 1u);
        }
        if (slots) grid_sync(bar, target); /* slots rewritten only after every read */
    }
}

static float run(unsigned *bar, int grid, int n, unsigned *slots, unsigned *bad) {
    CK(cudaMemset(bar, 0, 4));
    cudaEvent_t a, b;
    CK(cudaEventCreate(&a));
    CK(cudaEventCreate(&b));
    void *args[4] = {&bar, &n, &slots, &bad};
    CK(cudaEventRecord(a));
    CK(cudaLaunchCooperativeKernel((void *)barriers, dim3(grid), dim3(256), args, 0, 0));
    CK(cudaEventRecord(b));
    CK(cudaEventSynchronize(b));
    float ms = 0;
    CK(cudaEventElapsedTime(&ms, a, b));
    CK(cudaEventDestroy(a));
    CK(cudaEventDestroy(b));
    return ms;
}

int main(void) {
    cudaDeviceProp prop;
    CK(cudaGetDeviceProperties(&prop, 0));
    const int grid = prop.multiProcessorCount;
    unsigned *bar, *slots, *bad;
    CK(cudaMalloc(&bar, 4));
    CK(cudaMalloc(&slots, 4 * (size_t)grid));
    CK(cudaMalloc(&bad, 4));
    CK(cudaMemset(bad, 0, 4));
    run(bar, grid, 10, NULL, NULL); /* warm up */
    const int n = 20000;
    float best_empty = 1e30f, best_sync = 1e30f, best_xchg = 1e30f;
    for (int r = 0; r < 5; r++) {
        float e = run(bar, grid, 0, NULL, NULL), s = run(bar, grid, n, NULL, NULL),
              x = run(bar, grid, n, slots, bad);
        best_empty = e < best_empty ? e : best_empty;
        best_sync = s < best_sync ? s : best_sync;
        best_xchg = x < best_xchg ? x : best_xchg;
    }
    unsigned nbad = 0;
    CK(cudaMemcpy(&nbad, bad, 4, cudaMemcpyDeviceToHost));
    printf("%s, %d CTAs of 256 threads (best of 5):\n", prop.name, grid);
    printf("  empty cooperative launch (event to event): %.2f us\n", best_empty * 1e3);
    printf("  grid barrier: %.3f us each (%d back to back)\n", (best_sync - best_empty) * 1e3 / n,
           n);
    printf(
        "  write, barrier, read a neighbour's value, barrier: %.3f us per round; %u stale reads\n",
        (best_xchg - best_empty) * 1e3 / n, nbad);
    CK(cudaFree(bar));
    CK(cudaFree(slots));
    CK(cudaFree(bad));
    return nbad ? 1 : 0;
}
