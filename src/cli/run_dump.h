/* `hrmt run --dump`: inputs, puzzle_identifiers and every step's tensors in
 * one safetensors file, under the golden files' names, written step by step
 * (memory does not grow with the number of steps). */
#ifndef HRMT_CLI_RUN_DUMP_H
#define HRMT_CLI_RUN_DUMP_H

#include <stddef.h>
#include <stdint.h>
#include <stdio.h>

#include "cli/st_stream.h"

typedef struct cli_run_dump {
    size_t B, S, V, T, H; /* batch, seq_len, vocab, seq_len + puzzle_len, hidden */
    int steps;
    cli_st_stream st;
} cli_run_dump;

/* Tensor i of the dump: inputs [B,S] I32, puzzle_identifiers [B] I32, then
 * for each step k: step{k}.logits [B,S,V], .q_halt_logits [B],
 * .q_continue_logits [B], .z_H [B,T,H], .z_L [B,T,H] (F32), .halted [B] I32. */
void cli_run_dump_describe(const void *dump, size_t i, cli_st_desc *d);

/* Sets the shapes; then -1 with a message when such a file could not be
 * written or read back (header too large: too many --steps). */
int cli_run_dump_init(cli_run_dump *d, int B, int S, int V, int T, int H, int steps, char *err,
                      size_t errlen);

/* Writes the header and the inputs. */
int cli_run_dump_start(cli_run_dump *d, FILE *fp, const int32_t *inputs, const int32_t *pids,
                       char *err, size_t errlen);

/* Writes the next step's tensors (the step number follows the calls). */
int cli_run_dump_step(cli_run_dump *d, const float *logits, const float *q_halt,
                      const float *q_cont, const float *z_H, const float *z_L,
                      const int32_t *halted, char *err, size_t errlen);

#endif
