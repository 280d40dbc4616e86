/* hrmt-expf-check: every f32 bit pattern (all 2^32, NaNs and Infs included)
 * through the inline exps of src/cpu/expf_avx512.h and src/cpu/expf_avx2.h
 * against SLEEF's Sleef_expf16_u10avx512f and Sleef_expf8_u10avx2, bit for
 * bit, and through the scalar table's portable hrmt_expf_fma
 * (src/cpu/expf_fma.h; NaN in, NaN out). The SIMD tables and PyTorch use
 * SLEEF's bits, so a change to any of these headers must keep this at zero.
 * The unit tests sample the same functions; this is the exhaustive check
 * (about 2 minutes on 2 cores). Built with -DHRMT_BUILD_TOOLS=ON on x86-64;
 * needs an AVX-512 CPU to run (exits 77 otherwise). */
#include <errno.h>
#include <math.h>
#include <sleef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "cpu/expf_avx2.h"
#include "cpu/expf_avx512.h"
#include "cpu/expf_fma.h"

static void usage(FILE *f) {
    fprintf(f,
            "usage: hrmt-expf-check [--sample N]\n"
            "Compares hrmt's inline AVX-512, AVX2 and scalar expf with SLEEF's, bit for bit, on\n"
            "every f32 input (exit 0: identical; 1: some differ; 2: bad arguments; 77: no\n"
            "AVX-512). --sample N checks one block of 2^16 inputs in N (a quick run).\n");
}

/* Counts of differing results in the 2^16 inputs whose upper half is `hi`. */
static void check_block(uint32_t hi, unsigned long bad[3]) {
    for (uint32_t lo = 0; lo < 65536; lo += 16) {
        const __m512i b = _mm512_add_epi32(
            _mm512_set1_epi32((int)(hi << 16 | lo)),
            _mm512_setr_epi32(0, 1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12, 13, 14, 15));
        const __m512 x = _mm512_castsi512_ps(b);
        const __m512i r = _mm512_castps_si512(Sleef_expf16_u10avx512f(x));
        const __m512i o = _mm512_castps_si512(hrmt_expf16_fma(x));
        bad[0] += (unsigned)__builtin_popcount(_mm512_cmpneq_epi32_mask(r, o));
        for (int h = 0; h < 2; h++) {
            const __m256 x8 = h ? _mm512_extractf32x8_ps(x, 1) : _mm512_castps512_ps256(x);
            const __m256i r8 = _mm256_castps_si256(Sleef_expf8_u10avx2(x8));
            const __m256i o8 = _mm256_castps_si256(hrmt_expf8_fma(x8));
            const __m256i ne = _mm256_xor_si256(_mm256_cmpeq_epi32(r8, o8), _mm256_set1_epi32(-1));
            bad[1] += (unsigned)__builtin_popcount(_mm256_movemask_ps(_mm256_castsi256_ps(ne)));
        }
        float xs[16], rs[16];
        _mm512_storeu_ps(xs, x);
        _mm512_storeu_ps(rs, _mm512_castsi512_ps(r));
        for (int l = 0; l < 16; l++) {
            const float e = hrmt_expf_fma(xs[l]);
            uint32_t eb, rb;
            memcpy(&eb, &e, sizeof eb);
            memcpy(&rb, &rs[l], sizeof rb);
            /* Any NaN matches a NaN: the scalar path does not promise SLEEF's payload. */
            bad[2] += isnan(e) ? !isnan(rs[l]) : eb != rb;
        }
    }
}

int main(int argc, char **argv) {
    unsigned long sample = 1;
    for (int i = 1; i < argc; i++) {
        if (!strcmp(argv[i], "--help") || !strcmp(argv[i], "-h")) {
            usage(stdout);
            return 0;
        }
        if (!strcmp(argv[i], "--sample") && i + 1 < argc) {
            const char *s = argv[++i];
            char *end = NULL;
            errno = 0;
            sample = strtoul(s, &end, 10);
            if (errno || end == s || *end || s[0] == '-' || sample == 0 || sample > 65536) {
                fprintf(stderr, "hrmt-expf-check: --sample wants 1..65536, got '%s'\n", s);
                return 2;
            }
            continue;
        }
        fprintf(stderr, "hrmt-expf-check: unknown argument '%s'\n", argv[i]);
        usage(stderr);
        return 2;
    }
    __builtin_cpu_init();
    if (!__builtin_cpu_supports("avx512f") || !__builtin_cpu_supports("avx512dq") ||
        !__builtin_cpu_supports("avx512bw") || !__builtin_cpu_supports("avx512vl")) {
        fprintf(stderr, "hrmt-expf-check: this CPU has no AVX-512 (F, DQ, BW, VL); skipped\n");
        return 77;
    }
    unsigned long bad512 = 0, bad2 = 0, bad1 = 0, blocks = 0;
    const long step = (long)sample;
#pragma omp parallel for reduction(+ : bad512, bad2, bad1, blocks) schedule(dynamic, 1)
    for (long hi = 0; hi < 65536; hi += step) {
        unsigned long bad[3] = {0, 0, 0};
        check_block((uint32_t)hi, bad);
        bad512 += bad[0];
        bad2 += bad[1];
        bad1 += bad[2];
        blocks++;
    }
    printf("%lu inputs (%s): avx512 %lu differ, avx2 %lu differ, scalar %lu differ\n",
           blocks * 65536, sample == 1 ? "all 2^32" : "sampled", bad512, bad2, bad1);
    return bad512 != 0 || bad2 != 0 || bad1 != 0;
}
