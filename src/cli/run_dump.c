/* `hrmt run --dump` (see run_dump.h). */
#include "cli/run_dump.h"

#include <string.h>

enum { PER_STEP = 6 };

void cli_run_dump_describe(const void *dump, size_t i, cli_st_desc *d) {
    static const char *const fields[PER_STEP] = {"logits", "q_halt_logits", "q_continue_logits",
                                                 "z_H",    "z_L",           "halted"};
    const cli_run_dump *r = dump;
    memset(d, 0, sizeof *d);
    d->dtype = HRMT_F32;
    d->ndim = 1;
    d->shape[0] = r->B;
    if (i < 2) {
        snprintf(d->name, sizeof d->name, "%s", i == 0 ? "inputs" : "puzzle_identifiers");
        d->dtype = HRMT_I32;
        if (i == 0) {
            d->ndim = 2;
            d->shape[1] = r->S;
        }
        return;
    }
    size_t k = (i - 2) / PER_STEP, f = (i - 2) % PER_STEP;
    snprintf(d->name, sizeof d->name, "step%zu.%s", k, fields[f]);
    if (f == 0 || f == 3 || f == 4) {
        d->ndim = 3;
        d->shape[1] = f == 0 ? r->S : r->T;
        d->shape[2] = f == 0 ? r->V : r->H;
    }
    if (f == 5) d->dtype = HRMT_I32;
}

static size_t count(const cli_run_dump *d) { return 2 + (size_t)d->steps * PER_STEP; }

int cli_run_dump_init(cli_run_dump *d, int B, int S, int V, int T, int H, int steps, char *err,
                      size_t errlen) {
    memset(d, 0, sizeof *d);
    d->B = (size_t)B;
    d->S = (size_t)S;
    d->V = (size_t)V;
    d->T = (size_t)T;
    d->H = (size_t)H;
    d->steps = steps;
    /* Each step adds six entries of at least 40 header bytes: far too many
     * steps are refused without formatting the header. */
    uint64_t hdr = (uint64_t)steps * PER_STEP * 40 > HRMT_ST_MAX_HEADER
                       ? HRMT_ST_MAX_HEADER + 1
                       : cli_st_header_bytes(count(d), cli_run_dump_describe, d);
    if (hdr == 0) {
        snprintf(err, errlen, "%d steps of batch %d would exceed the largest file it can write",
                 steps, B);
        return -1;
    }
    if (hdr > HRMT_ST_MAX_HEADER) {
        /* The header grows by about the same bytes per step. */
        cli_run_dump one = *d;
        one.steps = 1;
        uint64_t per_step = cli_st_header_bytes(count(&one), cli_run_dump_describe, &one);
        snprintf(err, errlen,
                 "%d steps need a safetensors header above the %llu bytes readers accept; dump "
                 "fewer --steps (about %llu at most)",
                 steps, (unsigned long long)HRMT_ST_MAX_HEADER,
                 (unsigned long long)(HRMT_ST_MAX_HEADER / (per_step + 16)));
        return -1;
    }
    return 0;
}

int cli_run_dump_start(cli_run_dump *d, FILE *fp, const int32_t *inputs, const int32_t *pids,
                       char *err, size_t errlen) {
    if (cli_st_stream_start(&d->st, fp, count(d), cli_run_dump_describe, d, err, errlen)) return -1;
    if (cli_st_stream_put(&d->st, inputs, d->B * d->S * sizeof *inputs, err, errlen) ||
        cli_st_stream_put(&d->st, pids, d->B * sizeof *pids, err, errlen))
        return -1;
    return 0;
}

int cli_run_dump_step(cli_run_dump *d, const float *logits, const float *q_halt,
                      const float *q_cont, const float *z_H, const float *z_L,
                      const int32_t *halted, char *err, size_t errlen) {
    const size_t z = d->B * d->T * d->H * sizeof(float);
    if (cli_st_stream_put(&d->st, logits, d->B * d->S * d->V * sizeof(float), err, errlen) ||
        cli_st_stream_put(&d->st, q_halt, d->B * sizeof(float), err, errlen) ||
        cli_st_stream_put(&d->st, q_cont, d->B * sizeof(float), err, errlen) ||
        cli_st_stream_put(&d->st, z_H, z, err, errlen) ||
        cli_st_stream_put(&d->st, z_L, z, err, errlen) ||
        cli_st_stream_put(&d->st, halted, d->B * sizeof *halted, err, errlen))
        return -1;
    return 0;
}
