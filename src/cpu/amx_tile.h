/* AMX tile instructions as inline asm, for the *_amx.c files (built with
 * -mamx-tile -mamx-bf16). Loads and stores carry a memory clobber: gcc 12's
 * tileloadd builtins have none. Tiles follow the configuration the amx
 * table's tile_begin loads (src/cpu/gemm_amx.c): palette 1, tiles 0..7 each
 * 16 rows x 64 bytes. */
#ifndef HRMT_CPU_AMX_TILE_H
#define HRMT_CPU_AMX_TILE_H

#define TILE_LOAD(t, base, stride)                                                \
    __asm__ volatile("tileloadd (%0,%1,1), %%tmm" #t ::"r"((const void *)(base)), \
                     "r"((long)(stride))                                          \
                     : "memory")
#define TILE_STORE(t, base, stride)                                             \
    __asm__ volatile("tilestored %%tmm" #t ", (%0,%1,1)" ::"r"((void *)(base)), \
                     "r"((long)(stride))                                        \
                     : "memory")
#define TILE_ZERO(t) __asm__ volatile("tilezero %%tmm" #t ::)
#define TILE_DP(c, a, b) __asm__ volatile("tdpbf16ps %%tmm" #b ", %%tmm" #a ", %%tmm" #c ::)

#endif
