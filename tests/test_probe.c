/* Memory probes: dependent-load latency must order L1 < L2 < L3 < DRAM for
 * working sets chosen from the detected topology; bandwidth must be positive
 * and copy faster inside L1 than far beyond the last-level cache. */
#include <criterion/criterion.h>
#include <stdlib.h>

#include "support/test_common.h"

static hrmt_context *g_ctx;
static void setup(void) {
    hrmt_context_options o = hrmt_context_default_options();
    o.num_threads = 1;
    g_ctx = hrmt_test_context_opts(&o);
}
static void teardown(void) { hrmt_context_destroy(g_ctx); }
TestSuite(probe, .init = setup, .fini = teardown, .timeout = 120);

static size_t cache_size(int level) {
    const hrmt_topology *t = hrmt_context_topology(g_ctx);
    for (int i = 0; i < t->num_levels; i++)
        if (t->caches[i].level == level) return t->caches[i].size_bytes;
    return 0;
}

/* Best of a few runs: other processes can only make a run slower. */
static double latency(size_t bytes, int runs) {
    double best = 1e30;
    for (int r = 0; r < runs; r++) {
        double ns = 0;
        cr_assert_eq(hrmt_probe_latency(g_ctx, bytes, &ns), HRMT_OK, "%s", hrmt_last_error(g_ctx));
        cr_assert(ns > 0.0);
        if (ns < best) best = ns;
    }
    return best;
}

Test(probe, latency_orders_the_hierarchy) {
    const size_t l1 = cache_size(1), l2 = cache_size(2), l3 = cache_size(3);
    cr_assert(l1 && l2 && l3 && l1 < l2 && l2 < l3, "topology needs three cache levels");
    /* Half of L1 and of L2; 1.5 x L2 (capped at half of L3) sits in L3 but
     * outside L2 — not deeper: a VM may give the process only a few MiB of a
     * nominal 32 MiB L3 (measured here), and deeper points read as DRAM.
     * Four times L3 is DRAM. */
    const size_t s3 = l2 + l2 / 2 < l3 / 2 ? l2 + l2 / 2 : l3 / 2;
    const double a = latency(l1 / 2, 3), b = latency(l2 / 2, 3), c = latency(s3, 3),
                 d = latency(4 * l3, 2);
    cr_log_info("latency ns: L1 %.2f  L2 %.2f  L3 %.2f  DRAM %.2f", a, b, c, d);
    /* Under qemu-user each emulated load costs tens of ns, which hides the
     * steps between neighbouring levels (seen: L2 54.9 ns, L3 53.7 ns);
     * only the two ends stay apart there. */
    if (!getenv("HRMT_TEST_EMULATED")) {
        cr_expect(a < b, "L1 %.2f ns !< L2 %.2f ns", a, b);
        cr_expect(b < c, "L2 %.2f ns !< L3 %.2f ns", b, c);
        /* Not L3 against DRAM: a VM's L3 is shared with other tenants that
         * evict our lines at any time, so the L3 point reads as DRAM or
         * slower (seen on an Intel VM: 188.35 against 173.45 ns, and 359.00
         * against 177.52 under ASan with a parallel ctest). */
        cr_expect(b < d, "L2 %.2f ns !< DRAM %.2f ns", b, d);
    }
    cr_expect(a < d, "L1 %.2f ns !< DRAM %.2f ns", a, d);
}

Test(probe, bandwidth_inside_l1_beats_dram) {
    /* Under qemu-user (cross builds) every load is emulated: the emulator's
     * cost, not the cache, sets the bandwidth (measured: L1 2.8, DRAM 3.2 GB/s). */
    if (getenv("HRMT_TEST_EMULATED")) cr_skip_test("bandwidth is not measurable under emulation");
    const size_t l1 = cache_size(1), l3 = cache_size(3);
    hrmt_bandwidth in = {0}, out = {0};
    cr_assert_eq(hrmt_probe_bandwidth(g_ctx, l1 / 2, &in), HRMT_OK, "%s", hrmt_last_error(g_ctx));
    cr_assert_eq(hrmt_probe_bandwidth(g_ctx, 4 * l3, &out), HRMT_OK, "%s", hrmt_last_error(g_ctx));
    cr_log_info("GB/s L1: read %.1f write %.1f copy %.1f; DRAM: read %.1f write %.1f copy %.1f",
                in.read_gbps, in.write_gbps, in.copy_gbps, out.read_gbps, out.write_gbps,
                out.copy_gbps);
    cr_expect(out.read_gbps > 0 && out.write_gbps > 0 && out.copy_gbps > 0);
    /* copy alone is compared: under ASan the read/write loops are instrumented
     * (compute-bound), while the copy goes through the intercepted memcpy */
    cr_expect(in.copy_gbps > out.copy_gbps, "copy: L1 %.1f !> DRAM %.1f", in.copy_gbps,
              out.copy_gbps);
}

Test(probe, bad_arguments) {
    double ns;
    hrmt_bandwidth bw;
    cr_expect_eq(hrmt_probe_latency(g_ctx, 64, &ns), HRMT_ERR_INVALID_ARG);
    cr_expect_eq(hrmt_probe_latency(g_ctx, 1 << 20, NULL), HRMT_ERR_INVALID_ARG);
    cr_expect_eq(hrmt_probe_bandwidth(g_ctx, 64, &bw), HRMT_ERR_INVALID_ARG);
    cr_expect_eq(hrmt_probe_bandwidth(NULL, 1 << 20, &bw), HRMT_ERR_INVALID_ARG);
}
