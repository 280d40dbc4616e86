/* The L2's read ceiling next to DRAM's, for judging the batch-256 GEMMs'
 * L2 traffic (ncu's lts__t_bytes: the fused gate_up 5.6 TB/s, cuBLASLt's
 * qkv 7.3 TB/s in session 38; docs/CUDA-KERNELS.md): is that the L2's
 * bandwidth or below it?
 *
 * Each size's buffer is read whole, over and over, by every SM (grid-stride
 * 16-byte loads that skip L1, ld.global.cg, eight in flight a thread), its
 * words summed so that nothing is elided; the sums are checked against the
 * host's. Sizes that fit the L2 (4-32 MB; the H100's and H200's L2 is 50
 * MB, two partitions) give its read rate, 1 GB gives DRAM's. GB/s is bytes
 * read / event time, the best of REPS launches after a warm-up one. Not part
 * of CMake. On the GPU machine, from the repository root:
 *   nvcc -std=c++17 -O3 -arch=sm_90 -I include -I src bench/cuda_l2_read.cu \
 *        -o /tmp/l2_read && /tmp/l2_read
 * Exit status 0 when every sum matched. */
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>

#include "cuda_check.cuh"

namespace {

constexpr int REPS = 20;
constexpr int THREADS = 512;
constexpr int UNROLL = 8;

__device__ __forceinline__ uint4 ld_cg(const uint4 *p) {
    uint4 v;
    asm volatile("ld.global.cg.v4.u32 {%0, %1, %2, %3}, [%4];"
                 : "=r"(v.x), "=r"(v.y), "=r"(v.z), "=r"(v.w)
                 : "l"(p));
    return v;
}

/* Every thread sums words of n 16-byte vectors, `passes` times over; the
 * block's sum (mod 2^32) to out[block]. */
__global__ void read_kernel(const uint4 *buf, size_t n, int passes, unsigned *out) {
    const size_t stride = (size_t)gridDim.x * blockDim.x;
    unsigned s = 0;
    for (int p = 0; p < passes; p++) {
        size_t i = (size_t)blockIdx.x * blockDim.x + threadIdx.x;
        for (; i + (UNROLL - 1) * stride < n; i += UNROLL * stride) {
            uint4 v[UNROLL];
#pragma unroll
            for (int u = 0; u < UNROLL; u++) v[u] = ld_cg(buf + i + u * stride);
#pragma unroll
            for (int u = 0; u < UNROLL; u++) s += v[u].x + v[u].y + v[u].z + v[u].w;
        }
        for (; i < n; i += stride) {
            const uint4 v = ld_cg(buf + i);
            s += v.x + v.y + v.z + v.w;
        }
    }
    __shared__ unsigned part[THREADS / 32];
    for (int o = 16; o > 0; o /= 2) s += __shfl_xor_sync(0xffffffffu, s, o);
    if (threadIdx.x % 32 == 0) part[threadIdx.x / 32] = s;
    __syncthreads();
    if (threadIdx.x == 0) {
        unsigned t = 0;
        for (int w = 0; w < THREADS / 32; w++) t += part[w];
        out[blockIdx.x] = t;
    }
}

__global__ void fill_kernel(uint32_t *buf, size_t words) {
    for (size_t i = (size_t)blockIdx.x * blockDim.x + threadIdx.x; i < words;
         i += (size_t)gridDim.x * blockDim.x)
        buf[i] = (uint32_t)(i * 2654435761u);
}

} // namespace

int main() {
    cudaDeviceProp prop;
    CK(cudaGetDeviceProperties(&prop, 0));
    const int sms = prop.multiProcessorCount, blocks = 2 * sms;
    printf("%s: %d SMs, L2 %d MB; %d blocks of %d threads, ld.global.cg 16 B, best of %d\n",
           prop.name, sms, prop.l2CacheSize >> 20, blocks, THREADS, REPS);
    const size_t sizes_mb[] = {4, 8, 16, 24, 32, 1024};
    const size_t max_bytes = (size_t)1024 << 20;
    uint4 *buf = nullptr;
    unsigned *out = nullptr;
    CK(cudaMalloc((void **)&buf, max_bytes));
    CK(cudaMalloc((void **)&out, blocks * sizeof(unsigned)));
    CK(cudaMemset(out, 0, blocks * sizeof(unsigned)));
    fill_kernel<<<4 * sms, 256>>>((uint32_t *)buf, max_bytes / 4);
    CK(cudaGetLastError());
    CK(cudaDeviceSynchronize());
    cudaEvent_t e0, e1;
    CK(cudaEventCreate(&e0));
    CK(cudaEventCreate(&e1));
    unsigned *host = (unsigned *)malloc(blocks * sizeof(unsigned));
    if (!host) return 2;
    int bad = 0;
    printf("%10s %8s %10s %10s\n", "MB", "passes", "us", "GB/s");
    for (size_t mb : sizes_mb) {
        const size_t bytes = mb << 20, n = bytes / 16;
        /* ~256 MB a launch, so that launch cost is small beside it. */
        const int passes = (int)(bytes >= ((size_t)256 << 20) ? 1 : ((size_t)256 << 20) / bytes);
        read_kernel<<<blocks, THREADS>>>(buf, n, passes, out); /* warm-up: into L2 */
        CK(cudaGetLastError());
        float best = 1e30f;
        for (int r = 0; r < REPS; r++) {
            CK(cudaEventRecord(e0));
            read_kernel<<<blocks, THREADS>>>(buf, n, passes, out);
            CK(cudaEventRecord(e1));
            CK(cudaEventSynchronize(e1));
            CK(cudaGetLastError());
            float ms = 0.0f;
            CK(cudaEventElapsedTime(&ms, e0, e1));
            if (ms < best) best = ms;
        }
        /* The sum over all blocks against the host's, passes times the buffer's. */
        CK(cudaMemcpy(host, out, blocks * sizeof(unsigned), cudaMemcpyDeviceToHost));
        unsigned got = 0, want = 0;
        for (int b = 0; b < blocks; b++) got += host[b];
        for (size_t i = 0; i < bytes / 4; i++) want += (uint32_t)(i * 2654435761u);
        want *= (unsigned)passes;
        if (got != want) {
            printf("%10zu: sum %u, expected %u\n", mb, got, want);
            bad = 1;
        }
        const double gbs = (double)bytes * passes / (best * 1e-3) / 1e9;
        printf("%10zu %8d %10.1f %10.0f\n", mb, passes, best * 1e3, gbs);
    }
    free(host);
    CK(cudaFree(buf));
    CK(cudaFree(out));
    return bad;
}
