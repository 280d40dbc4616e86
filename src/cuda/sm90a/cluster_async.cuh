/* Distributed shared memory written asynchronously, each arrival counted in
 * bytes on the receiver's mbarrier (sm_90): the sender does not wait, and
 * the receiver waits only for the bytes it is owed instead of for every
 * thread of every CTA at a cluster barrier. Used by the cluster kernels'
 * opt-in exchanges (HRMT_CUDA_CLUSTER_NORM_PUSH, HRMT_CUDA_QKV_ATTN_PUSH);
 * proj_norm_wgmma.cu's pair of CTAs hands over by remote arrivals.
 *
 * The rules the users keep (PTX ISA: st.async, cp.async.bulk, mbarrier):
 *  - a receiver's mbarrier is initialised and its init fenced for the
 *    cluster (ring_setup) before the cluster barrier's arrive, and nobody
 *    sends before that barrier's wait: no transaction reaches an
 *    uninitialised barrier. Its bytes are expected by its one arrival
 *    (arrive.expect_tx), which the relaxed arrive does not order before a
 *    peer's sends: a transaction may come first and take the count below
 *    zero, which the ISA allows; the phase cannot complete before that
 *    arrival, and then only at zero bytes owed;
 *  - a bulk copy's destination is another CTA's shared memory (the ISA's
 *    rule for shared::cta to shared::cluster); st.async may target the
 *    executing CTA (a cluster of more than one CTA);
 *  - every byte written into a CTA is counted by a barrier it waits on
 *    before it exits, so no write lands in a CTA that has gone;
 *  - a bulk copy's source stays untouched until the sender knows the copy
 *    landed (each kernel says how it knows). */
#ifndef HRMT_CUDA_SM90A_CLUSTER_ASYNC_CUH
#define HRMT_CUDA_SM90A_CLUSTER_ASYNC_CUH

#include "cuda/sm90a/wgmma_common.cuh"

namespace {

#ifdef HRMT_SM90A
/* The cluster barrier split: arrive early, wait just before the first
 * remote access (by then every CTA has arrived, so the wait is short). */
__device__ __forceinline__ void cl_arrive_relaxed() {
    asm volatile("barrier.cluster.arrive.relaxed;" ::: "memory");
}
__device__ __forceinline__ void cl_wait() { asm volatile("barrier.cluster.wait;" ::: "memory"); }
/* 4 bytes into another CTA at cluster address a, counted on its barrier
 * at cluster address bar. */
__device__ __forceinline__ void cl_st_async_f32(uint32_t a, float v, uint32_t bar) {
    asm volatile(
        "st.async.shared::cluster.mbarrier::complete_tx::bytes.b32 [%0], %1, [%2];" ::"r"(a),
        "r"(__float_as_uint(v)), "r"(bar)
        : "memory");
}
/* 16 bytes likewise (a 16-byte aligned). */
__device__ __forceinline__ void cl_st_async_v4(uint32_t a, uint4 v, uint32_t bar) {
    asm volatile(
        "st.async.shared::cluster.mbarrier::complete_tx::bytes.v4.b32 [%0], {%1, %2, %3, "
        "%4}, [%5];" ::"r"(a),
        "r"(v.x), "r"(v.y), "r"(v.z), "r"(v.w), "r"(bar)
        : "memory");
}
/* 16 bytes by an ordinary distributed-shared-memory store (seen after a
 * cluster barrier). */
__device__ __forceinline__ void cl_st_v4(uint32_t a, uint4 v) {
    asm volatile("st.shared::cluster.v4.u32 [%0], {%1, %2, %3, %4};" ::"r"(a), "r"(v.x), "r"(v.y),
                 "r"(v.z), "r"(v.w)
                 : "memory");
}
/* 16 bytes to `at` in CTA d; PUSH: by st.async, counted on d's `bar`. */
template <bool PUSH>
__device__ __forceinline__ void push16(const void *at, uint32_t d, uint4 v, uint64_t *bar) {
    if constexpr (PUSH)
        cl_st_async_v4(cl_map(at, d), v, cl_map(bar, d));
    else
        cl_st_v4(cl_map(at, d), v);
}
/* bytes (a multiple of 16, both ends 16-byte aligned) of this CTA's shared
 * memory at src copied by the copy engine to cluster address dst, counted
 * on the barrier at cluster address bar. The writes that made src must be
 * fenced for the async proxy first (fence_async_smem) by their threads. */
__device__ __forceinline__ void cl_copy_async(uint32_t dst, const void *src, uint32_t bytes,
                                              uint32_t bar) {
    asm volatile(
        "cp.async.bulk.shared::cluster.shared::cta.mbarrier::complete_tx::bytes [%0], [%1], %2, "
        "[%3];" ::"r"(dst),
        "r"(smem_u32(src)), "r"(bytes), "r"(bar)
        : "memory");
}
/* This thread's shared-memory writes seen by the copy engine's reads. */
__device__ __forceinline__ void fence_async_smem() {
    asm volatile("fence.proxy.async.shared::cta;" ::: "memory");
}
/* An arrival on another CTA's mbarrier at `remote` (cl_map), releasing
 * this thread's earlier distributed-shared-memory stores at cluster scope. */
__device__ __forceinline__ void mbar_arrive_remote(uint32_t remote) {
    asm volatile("mbarrier.arrive.release.cluster.shared::cluster.b64 _, [%0];" ::"r"(remote)
                 : "memory");
}
/* A 2-D box into the same place of every CTA of the cluster in `mask`,
 * each counting the bytes on its own barrier at bar's offset (the copy
 * engine's multicast: one read from L2 for all of them). */
__device__ __forceinline__ void tma_load_mc(void *dst, const CUtensorMap *map, uint64_t *bar,
                                            int c0, int c1, uint16_t mask) {
    asm volatile(
        "cp.async.bulk.tensor.2d.shared::cluster.global.mbarrier::complete_tx::bytes"
        ".multicast::cluster [%0], [%1, {%3, %4}], [%2], %5;" ::"r"(smem_u32(dst)),
        "l"(map), "r"(smem_u32(bar)), "r"(c0), "r"(c1), "h"(mask)
        : "memory");
}
/* A wait for a barrier other CTAs complete: acquire at cluster scope, so
 * their writes counted on it (or released before their arrivals) are seen
 * after it. */
__device__ __forceinline__ void mbar_wait_cluster(uint64_t *b, unsigned parity) {
    asm volatile(
        "{\n"
        ".reg .pred p;\n"
        "W: mbarrier.try_wait.parity.acquire.cluster.shared::cta.b64 p, [%0], %1;\n"
        "@!p bra W;\n"
        "}" ::"r"(smem_u32(b)),
        "r"(parity)
        : "memory");
}
#endif

} // namespace

#endif
