/* Every float d in [-105, 0]: exp_fma of src/model/attention.c (fmaf emulated
 * in double) against SLEEF's Sleef_expf1_u10purecfma (= Sleef_expf8_u10avx2,
 * PyTorch 1.13's exp) and against the same code with real fmaf.
 *   cc -O2 exp_exhaustive.c -lsleef -lm && ./a.out   (needs an FMA CPU) */
#include <math.h>
#include <stdint.h>
#include <stdio.h>
#include <string.h>

float Sleef_expf1_u10purecfma(float);

#define EXP_BODY(FMA)                                                                              \
    const float qf = (d * 1.442695040888963407359924681001892137426645954152985934f + 12582912.0f) - \
                     12582912.0f;                                                                \
    const int32_t q = (int32_t)qf;                                                                 \
    float s = FMA(qf, -0.693145751953125f, d);                                                     \
    s = FMA(qf, -1.428606765330187045e-06f, s);                                                    \
    float u = 0.000198527617612853646278381f;                                                      \
    u = FMA(u, s, 0.00139304355252534151077271f);                                                  \
    u = FMA(u, s, 0.00833336077630519866943359f);                                                  \
    u = FMA(u, s, 0.0416664853692054748535156f);                                                   \
    u = FMA(u, s, 0.166666671633720397949219f);                                                    \
    u = FMA(u, s, 0.5f);                                                                           \
    const float ss = s * s;                                                                        \
    u = 1.0f + FMA(ss, u, s);                                                                      \
    const int32_t q1 = q / 2 - (q % 2 != 0);                                                       \
    u = u * pow2i(q1) * pow2i(q - q1);                                                             \
    return d < -104.0f ? 0.0f : u;

static inline float fma_d(float a, float b, float c) { return (float)((double)a * b + c); }
static inline float pow2i(int32_t q) {
    const uint32_t bits = (uint32_t)(q + 0x7f) << 23;
    float f;
    memcpy(&f, &bits, sizeof f);
    return f;
}
static float exp_d(float d) { EXP_BODY(fma_d) }
static float exp_f(float d) { EXP_BODY(fmaf) }

int main(void) {
    unsigned long n = 0, bad_d = 0, bad_f = 0;
    for (uint32_t b = 0x80000000u;; b++) { /* -0 .. -105 */
        float d;
        memcpy(&d, &b, 4);
        if (d < -105.0f) break;
        float ref = Sleef_expf1_u10purecfma(d), a = exp_d(d), c = exp_f(d);
        bad_d += memcmp(&a, &ref, 4) != 0;
        bad_f += memcmp(&c, &ref, 4) != 0;
        n++;
    }
    printf("%lu inputs in [-105, 0]: double-emulated fma differs in %lu, fmaf in %lu\n", n, bad_d,
           bad_f);
    return bad_d != 0;
}
