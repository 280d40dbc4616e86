/* CPU feature detection (cpuid + OS support), computed once. */
#ifndef HRMT_CORE_CPU_FEATURES_H
#define HRMT_CORE_CPU_FEATURES_H

typedef struct hrmt_cpu_features {
    int avx2_fma;    /* AVX2 + FMA + F16C, OS saves YMM */
    int avx512;      /* AVX-512 F/BW/DQ/VL, OS saves ZMM */
    int avx512_bf16; /* AVX512_BF16 (vdpbf16ps, vcvtne2ps2bf16) */
    /* AMX-TILE + AMX-BF16 usable: cpuid reports both, XCR0 enables the tile
     * state (XTILECFG, XTILEDATA) and, on Linux, the kernel granted this
     * process the tile data (arch_prctl ARCH_REQ_XCOMP_PERM, asked once). */
    int amx_bf16;
    int neon;
} hrmt_cpu_features;

/* Immutable after the first call (thread-safe once-initialisation). */
const hrmt_cpu_features *hrmt_cpu_features_get(void);

#endif
