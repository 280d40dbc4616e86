/* The W-resident gate_up loop's schedule (ring_wres.cuh), as plain C so
 * that tests/test_wres_protocol.c drives the same decisions through a model
 * of the kernel's barriers on the host. Tiles are ordered column by column
 * (tile j: row tile j % mt of W slice j / mt); a CTA takes a contiguous run
 * of them; a "generation" is the run's j / mt minus its first. */
#ifndef HRMT_CUDA_SM90A_WRES_PLAN_H
#define HRMT_CUDA_SM90A_WRES_PLAN_H

#ifdef __CUDACC__
#define WRES_HD static inline __host__ __device__
#else
#define WRES_HD static inline
#endif

/* CTA b of G's run [lo, hi) of `tiles` tiles: as even as whole tiles go. */
WRES_HD void wres_range(long long tiles, unsigned b, unsigned G, int *lo, int *hi) {
    *lo = (int)(tiles * b / G);
    *hi = (int)(tiles * (b + 1) / G);
}

/* Tile j is its warpgroup's last of its generation: the warpgroup's next
 * tile (j + wgs) is past the run or in the next slice. */
WRES_HD int wres_last(int j, int hi, int mt, int wgs) {
    return j + wgs >= hi || (j + wgs) / mt != j / mt;
}

/* What tile j's warps each add to wempty once its products are done: 1
 * when j is its warpgroup's last tile of its generation, 0 when not; the
 * generation's last tile in the run adds one more for each of the wgs
 * warpgroups that have no tile of it there (a generation of n < wgs tiles
 * in the run: wgs - n of them), so that wempty's 4 wgs arrivals always
 * come. */
WRES_HD unsigned wres_arrivals(int j, int lo, int hi, int mt, int wgs) {
    if (!wres_last(j, hi, mt, wgs)) return 0;
    const int g0 = j / mt * mt, start = lo > g0 ? lo : g0, end = hi < g0 + mt ? hi : g0 + mt;
    const int n = end - start;
    return j + 1 == end && n < wgs ? 1u + (unsigned)(wgs - n) : 1u;
}

#undef WRES_HD

#endif
