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

/* Tile j is its generation's only tile in the run [lo, hi) (then the other
 * warpgroup has none of it and j's warpgroup arrives for both). */
WRES_HD int wres_alone(int j, int lo, int hi, int mt) {
    return (j == lo || (j - 1) / mt != j / mt) && (j + 1 >= hi || (j + 1) / mt != j / mt);
}

#undef WRES_HD

#endif
