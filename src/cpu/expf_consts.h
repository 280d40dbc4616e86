/* The constants of SLEEF's 1-ulp expf (FMA builds), shared by the portable
 * scalar version (cpu/expf_fma.h) and the inline SIMD ones (expf_avx2.h,
 * expf_avx512.h): q = rint(x * LOG2E), s = x + q * NLN2_HI + q * NLN2_LO,
 * u = ((((C5 s + C4) s + C3) s + C2) s + C1) s + C0, exp = (1 + s + s^2 u) 2^q. */
#ifndef HRMT_CPU_EXPF_CONSTS_H
#define HRMT_CPU_EXPF_CONSTS_H

#define HRMT_EXPF_LOG2E 1.442695040888963407359924681001892137426645954152985934f
#define HRMT_EXPF_NLN2_HI (-0.693145751953125f)
#define HRMT_EXPF_NLN2_LO (-1.428606765330187045e-06f)
#define HRMT_EXPF_C5 0.000198527617612853646278381f
#define HRMT_EXPF_C4 0.00139304355252534151077271f
#define HRMT_EXPF_C3 0.00833336077630519866943359f
#define HRMT_EXPF_C2 0.0416664853692054748535156f
#define HRMT_EXPF_C1 0.166666671633720397949219f
#define HRMT_EXPF_C0 0.5f

#endif
