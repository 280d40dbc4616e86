/* Memory probes: stream_read returns cpu/rowops_scalar.c's value, the XOR of
 * the 8-byte words at p, p + 8, ... (little-endian) and of the last
 * nbytes % 8 bytes each into the low byte. XOR is associative and
 * commutative, so any split over threads gives the same value: threads XOR
 * 16-byte aligned loads (rotated by 8 * (p % 8) bits when p is not 8-byte
 * aligned, which moves each byte to its lane of the words at p + 8i), thread
 * 0 takes the unaligned ends byte by byte, warps combine with shuffles and
 * atomicXor into one 8-byte device word that is copied back: stream_read
 * WAITS for its stream (it returns the data). stream_write is
 * cudaMemsetAsync and does not wait. */
#include "cuda/cuda_backend.h"
#include "cuda/rowops_common.cuh"

using namespace hrmt_rowops_cuda;

namespace {

#define HRMT_PROBE_THREADS 256
#define HRMT_PROBE_MAX_BLOCKS 4096

__device__ __forceinline__ uint64_t rotr64(uint64_t w, unsigned s) {
    return s ? (w >> s) | (w << (64 - s)) : w;
}

__global__ void __launch_bounds__(HRMT_PROBE_THREADS)
    xor_kernel(const unsigned char *p, size_t nbytes, unsigned long long *acc) {
    const size_t n8 = nbytes / 8 * 8; /* bytes that belong to whole words */
    const uintptr_t base = (uintptr_t)p;
    uintptr_t a = (base + 15) & ~(uintptr_t)15, b = (base + n8) & ~(uintptr_t)15;
    if (b <= a) a = b = base + n8; /* too short for an aligned body */
    const size_t nq = (b - a) / 16;
    const uint4 *q = (const uint4 *)a;
    uint64_t x = 0;
    const size_t step = (size_t)gridDim.x * blockDim.x;
    size_t i = (size_t)blockIdx.x * blockDim.x + threadIdx.x;
    for (; i + 3 * step < nq; i += 4 * step) {
        uint4 v[4];
        HRMT_UNROLL
        for (int k = 0; k < 4; k++) v[k] = q[i + k * step];
        HRMT_UNROLL
        for (int k = 0; k < 4; k++)
            x ^= ((uint64_t)v[k].x | (uint64_t)v[k].y << 32) ^
                 ((uint64_t)v[k].z | (uint64_t)v[k].w << 32);
    }
    for (; i < nq; i += step) {
        const uint4 v = q[i];
        x ^= ((uint64_t)v.x | (uint64_t)v.y << 32) ^ ((uint64_t)v.z | (uint64_t)v.w << 32);
    }
    x = rotr64(x, (unsigned)(base % 8) * 8);
    if (blockIdx.x == 0 && threadIdx.x == 0) {
        for (uintptr_t c = base; c < a; c++) x ^= (uint64_t)p[c - base] << ((c - base) % 8 * 8);
        for (uintptr_t c = b; c < base + n8; c++)
            x ^= (uint64_t)p[c - base] << ((c - base) % 8 * 8);
        for (size_t c = n8; c < nbytes; c++) x ^= (uint64_t)p[c];
    }
    HRMT_UNROLL
    for (int d = 16; d >= 1; d /= 2) x ^= __shfl_xor_sync(HRMT_FULL_MASK, x, d);
    if ((threadIdx.x & 31) == 0 && x) atomicXor(acc, (unsigned long long)x);
}

static uint64_t stream_read_cuda(const void *p, size_t nbytes) {
    if (nbytes == 0) return 0;
    const cudaStream_t s = cudaStreamPerThread;
    unsigned long long *d = nullptr, h = 0;
    if (cudaMallocAsync((void **)&d, sizeof *d, s) != cudaSuccess) return 0;
    cudaMemsetAsync(d, 0, sizeof *d, s);
    const size_t blocks = cdiv(nbytes / 16 + 1, HRMT_PROBE_THREADS);
    xor_kernel<<<(unsigned)(blocks < HRMT_PROBE_MAX_BLOCKS ? blocks : HRMT_PROBE_MAX_BLOCKS),
                 HRMT_PROBE_THREADS, 0, s>>>((const unsigned char *)p, nbytes, d);
    cudaMemcpyAsync(&h, d, sizeof h, cudaMemcpyDeviceToHost, s);
    cudaFreeAsync(d, s);
    cudaStreamSynchronize(s);
    return (uint64_t)h;
}

static void stream_write_cuda(void *p, size_t nbytes, uint8_t v) {
    if (nbytes) cudaMemsetAsync(p, v, nbytes, cudaStreamPerThread);
}

} // namespace

void hrmt_rowops_fill_cuda_probe(hrmt_rowops *t) {
    t->stream_read = stream_read_cuda;
    t->stream_write = stream_write_cuda;
}
