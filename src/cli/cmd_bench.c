/* `hrmt bench`: times ACT steps of the HRM model under the tiered and the
 * baseline schedule over batch sizes and sequence lengths (the seed's
 * run_benchmark.py), prints tables and optionally writes a JSON array. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "cli/args.h"
#include "cli/bench_opts.h"
#include "cli/bench_run.h"
#include "cli/commands.h"
#include "cli/json_out.h"
#include "cli/mpi_hooks.h"
#include "cli/progress.h"
#include "cli/user_files.h"
#include "core/text_escape.h"
#include "hrmt.h"

#define BENCH_SEED 20250101u /* weights of the built-in model */

static int has_arch_overrides(const cli_bench_opts *o) {
    return o->hidden_size || o->num_heads || o->expansion > 0 || o->H_cycles || o->L_cycles ||
           o->H_layers || o->L_layers || o->dtype >= 0;
}

static void apply_overrides(const cli_bench_opts *o, hrmt_model_config *c) {
    if (o->hidden_size) c->hidden_size = o->hidden_size;
    if (o->num_heads) c->num_heads = o->num_heads;
    if (o->expansion > 0) c->expansion = o->expansion;
    if (o->H_cycles) c->H_cycles = o->H_cycles;
    if (o->L_cycles) c->L_cycles = o->L_cycles;
    if (o->H_layers) c->H_layers = o->H_layers;
    if (o->L_layers) c->L_layers = o->L_layers;
    if (o->dtype >= 0) c->forward_dtype = (hrmt_dtype)o->dtype;
}

/* The run's state, so the phases below can share it and clean up in one place. */
typedef struct bench {
    cli_bench_opts o;
    hrmt_context *ctx;
    hrmt_model_config cfg;  /* final config (built-in: seq_len set per row group) */
    hrmt_model *file_model; /* --model, loaded once */
    int seqs[CLI_BENCH_MAX_LIST];
    size_t n_seq;
    cli_bench_row *rows;
    size_t n_rows;
    cli_bench_machine mach;
    cli_progress bar;
    int outputs_differ;
    const cli_ranks *ranks; /* NULL: one process (see mpi_hooks.h) */
    cli_output out;         /* --output (rank 0), opened before any work; path NULL when done */
} bench;

static int is_root(const bench *b) { return !b->ranks || b->ranks->rank == 0; }

/* Every rank's status -> the worst, on every rank. After each measured row
 * this also lines the ranks up, so every row is timed on all of them at once. */
static int agree(const bench *b, int rc) {
    return b->ranks ? b->ranks->agree(b->ranks->u, rc) : rc;
}

/* Resolves the config and the sequence lengths. Returns 0, or the exit code. */
static int prepare(bench *b) {
    const cli_bench_opts *o = &b->o;
    b->cfg = hrmt_model_config_default();
    if (o->config_path && hrmt_model_config_load_json(b->ctx, o->config_path, &b->cfg) != HRMT_OK) {
        char e[256];
        fprintf(stderr, "hrmt bench: --config %s: %s\n",
                hrmt_text_escape_str(e, sizeof e, o->config_path), hrmt_last_error(b->ctx));
        return 2;
    }
    if (o->model_path) {
        const hrmt_model_config *given = o->config_path ? &b->cfg : NULL;
        hrmt_status s = hrmt_model_load(b->ctx, o->model_path, given, &b->file_model);
        if (s == HRMT_OK && has_arch_overrides(o)) {
            /* Reload with the overridden config; shape-changing flags fail here. */
            b->cfg = *hrmt_model_get_config(b->file_model);
            apply_overrides(o, &b->cfg);
            hrmt_model_destroy(b->file_model);
            b->file_model = NULL;
            s = hrmt_model_load(b->ctx, o->model_path, &b->cfg, &b->file_model);
        }
        if (s != HRMT_OK) {
            char e[256];
            fprintf(stderr, "hrmt bench: --model %s: %s: %s\n",
                    hrmt_text_escape_str(e, sizeof e, o->model_path), hrmt_status_str(s),
                    hrmt_last_error(b->ctx));
            return 1;
        }
        b->cfg = *hrmt_model_get_config(b->file_model);
    } else {
        apply_overrides(o, &b->cfg);
    }
    char err[512];
    if (cli_bench_check_config(o, &b->cfg, o->model_path != NULL, err, sizeof err)) {
        fprintf(stderr, "hrmt bench: %s\n", err);
        return 2;
    }
    if (o->model_path && !o->seq_lens_given) {
        b->seqs[0] = b->cfg.seq_len;
        b->n_seq = 1;
    } else {
        memcpy(b->seqs, o->seq_lens, o->n_seq * sizeof *b->seqs);
        b->n_seq = o->n_seq;
    }
    /* Validate every built-in config up front, so a bad flag fails before minutes of work. */
    for (size_t i = 0; !o->model_path && i < b->n_seq; i++) {
        hrmt_model_config c = b->cfg;
        c.seq_len = b->seqs[i];
        if (hrmt_model_config_validate(b->ctx, &c) != HRMT_OK) {
            fprintf(stderr, "hrmt bench: invalid model configuration: %s\n",
                    hrmt_last_error(b->ctx));
            return 2;
        }
    }
    return 0;
}

/* "hrmt bench: WHAT: status: detail", with a hint when memory ran out. */
static int fail_status(bench *b, const char *what, hrmt_status s) {
    cli_progress_finish(&b->bar);
    const char *detail = hrmt_last_error(b->ctx);
    fprintf(stderr, "hrmt bench: %s: %s: %s%s\n", what, hrmt_status_str(s),
            detail && *detail ? detail : "(no detail from the library)",
            s == HRMT_ERR_OUT_OF_MEMORY
                ? " (use smaller --batch-sizes, --seq-lens or --hidden-size, or free memory)"
                : "");
    return 1;
}

/* The rows of one batch: each schedule the mode asks for (tiered, then
 * baseline), o->rounds runs of each. With both, the runs alternate and each
 * round swaps which goes first (T B, B T, T B, ...), so that neither is
 * always the one timed after the other's heat or caches. */
static int time_schedules(bench *b, hrmt_model *m, int batch, int seq, int checked, int identical) {
    const cli_bench_opts *o = &b->o;
    const hrmt_schedule all[2] = {HRMT_SCHEDULE_TIERED, HRMT_SCHEDULE_BASELINE};
    const int lo = o->mode == CLI_MODE_BASELINE, hi = o->mode == CLI_MODE_TIERED ? 1 : 2;
    cli_bench_acc acc[2];
    memset(acc, 0, sizeof acc);
    hrmt_status s = HRMT_OK;
    const char *what = "timing";
    for (int k = lo; k < hi && s == HRMT_OK; k++)
        s = cli_bench_acc_init(b->ctx, &acc[k], all[k], (size_t)o->rounds * (size_t)o->iterations);
    for (int r = 0; r < o->rounds && s == HRMT_OK; r++)
        for (int j = lo; j < hi && s == HRMT_OK; j++) {
            const int k = hi - lo == 2 && r % 2 ? 1 - j : j; /* odd rounds: baseline first */
            what = k == 0 ? "timing tiered" : "timing baseline";
            s = cli_bench_run(b->ctx, m, batch, o->warmup, o->iterations, &b->bar, &acc[k]);
        }
    for (int k = lo; k < hi && s == HRMT_OK; k++) {
        cli_bench_row *row = &b->rows[b->n_rows + (size_t)(k - lo)];
        what = "timing";
        s = cli_bench_row_of(b->ctx, m, batch, &b->mach, &acc[k], row);
        row->outputs_checked = checked;
        row->outputs_identical = identical;
    }
    for (int k = 0; k < 2; k++) cli_bench_acc_free(&acc[k]);
    char msg[96];
    snprintf(msg, sizeof msg, "%s (batch %d, seq %d)", what, batch, seq);
    if (agree(b, s != HRMT_OK ? fail_status(b, msg, s) : 0)) return 1;
    b->n_rows += (size_t)(hi - lo);
    return 0;
}

/* Times every (batch, schedule) of one model. */
static int run_model(bench *b, hrmt_model *m) {
    const cli_bench_opts *o = &b->o;
    int seq = hrmt_model_get_config(m)->seq_len;
    for (size_t i = 0; i < o->n_batch; i++) {
        int batch = o->batch_sizes[i];
        int identical = 0, checked = o->mode == CLI_MODE_COMPARE;
        hrmt_status s;
        if (checked) {
            char detail[256];
            s = cli_bench_check_identical(b->ctx, m, batch, &identical, detail, sizeof detail);
            char what[96];
            snprintf(what, sizeof what, "tiered/baseline check (batch %d, seq %d)", batch, seq);
            if (agree(b, s != HRMT_OK ? fail_status(b, what, s) : 0)) return 1;
            cli_progress_advance(&b->bar, 1, "check tiered == baseline");
            if (!identical) {
                cli_progress_finish(&b->bar);
                fprintf(stderr,
                        "hrmt bench: ERROR: tiered and baseline outputs differ (batch %d, "
                        "seq %d): %s\n",
                        batch, seq, detail);
                b->outputs_differ = 1;
            }
        }
        cli_bench_row *first = &b->rows[b->n_rows];
        if (time_schedules(b, m, batch, seq, checked, identical)) return 1;
        if (o->mode == CLI_MODE_COMPARE) {
            first->has_speedup = 1;
            first->speedup_vs_baseline =
                first[1].total_inference_latency_ms.mean / first->total_inference_latency_ms.mean;
        }
    }
    return 0;
}

static int run_all(bench *b) {
    const cli_bench_opts *o = &b->o;
    size_t modes = o->mode == CLI_MODE_COMPARE ? 2 : 1;
    size_t groups = b->n_seq * o->n_batch;
    b->rows = calloc(groups * modes, sizeof *b->rows);
    int no_rows = b->rows == NULL;
    if (no_rows)
        fprintf(stderr, "hrmt bench: out of memory for %zu result rows; list fewer sizes\n",
                groups * modes);
    if (agree(b, no_rows)) return 1;
    size_t units = 1 + groups * modes * (size_t)o->rounds * (size_t)(o->warmup + o->iterations) +
                   (o->mode == CLI_MODE_COMPARE ? groups : 0);
    cli_progress_init(&b->bar, cli_progress_wanted(o->quiet) ? stderr : NULL, units);
    cli_progress_advance(&b->bar, 0, "probing memory and GEMM peak");
    hrmt_dtype dt = b->cfg.forward_dtype;
    hrmt_status s = cli_bench_measure_machine(b->ctx, dt, &b->mach);
    if (agree(b,
              s != HRMT_OK ? fail_status(b, "machine probes (memory latency, GEMM peak)", s) : 0))
        return 1;
    cli_progress_advance(&b->bar, 1, "probing memory and GEMM peak");
    for (size_t i = 0; i < b->n_seq; i++) {
        if (b->file_model) {
            if (run_model(b, b->file_model)) return 1;
            continue;
        }
        hrmt_model_config c = b->cfg;
        c.seq_len = b->seqs[i];
        hrmt_model *m = NULL;
        s = hrmt_model_create_random(b->ctx, &c, BENCH_SEED, &m);
        char what[96];
        snprintf(what, sizeof what, "building the built-in model (hidden %d, seq %d)",
                 c.hidden_size, c.seq_len);
        if (agree(b, s != HRMT_OK ? fail_status(b, what, s) : 0)) return 1;
        int rc = run_model(b, m);
        hrmt_model_destroy(m);
        if (rc) return rc;
    }
    cli_progress_finish(&b->bar);
    return 0;
}

static int report(bench *b) {
    const char *dtype = b->cfg.forward_dtype == HRMT_F32 ? "f32" : "bf16";
    const char *isa = hrmt_isa_name(hrmt_context_isa(b->ctx));
    int threads = hrmt_context_threads(b->ctx);
    char gpu[1024]; /* the device name (up to 256) and the settings */
    const char *g = NULL;
    if (hrmt_context_backend(b->ctx) == HRMT_BACKEND_CUDA) {
        hrmt_cuda_info ci;
        memset(&ci, 0, sizeof ci);
        (void)hrmt_cuda_query(&ci);
        const char *tune = getenv("HRMT_CUDA_GEMM_TUNE");
        const char *persist = getenv("HRMT_CUDA_L_PERSIST"), *grid = getenv("HRMT_CUDA_GRID");
        const char *branches = getenv("HRMT_CUDA_BRANCHES");
        snprintf(gpu, sizeof gpu,
                 "CUDA device %d (%s), ACT steps %s, GEMM algorithms %s, baseline levels %s "
                 "(graph branches: %s), tiered L level %s",
                 ci.device, ci.name[0] ? ci.name : "unnamed",
                 hrmt_context_cuda_graphs(b->ctx) ? "replayed as CUDA graphs"
                                                  : "launched kernel by kernel",
                 tune && !strcmp(tune, "0") ? "pinned (HRMT_CUDA_GEMM_TUNE=0)" : "tuned per M",
                 grid && !strcmp(grid, "1")
                     ? "as one grid-wide kernel each where it applies (HRMT_CUDA_GRID=1)"
                     : "op by op",
                 branches && *branches ? branches : "1",
                 persist && !strcmp(persist, "1")
                     ? "as one persistent kernel where it applies (HRMT_CUDA_L_PERSIST=1)"
                     : "tile by tile");
        g = gpu;
    }
    cli_bench_print(b->rows, b->n_rows, &b->mach, dtype, isa, threads, g, stdout);
    if (b->o.profile) cli_bench_print_parts(b->rows, b->n_rows, stdout);
    cli_bench_print_gemm_trace(b->rows, b->n_rows, stdout);
    fflush(stdout);
    if (!b->o.output_path) return 0;
    cJSON *j = cli_bench_json(b->rows, b->n_rows, dtype, isa, threads);
    char err[512] = "out of memory formatting the results", e[256];
    hrmt_text_escape_str(e, sizeof e, b->o.output_path);
    FILE *f = j ? cli_output_begin(&b->out, err, sizeof err) : NULL;
    int bad = !f || cli_json_write(j, f, err, sizeof err);
    cJSON_Delete(j);
    int closed = cli_output_end(&b->out, f, !bad, err, sizeof err);
    b->out.path = NULL;
    if (bad || closed) {
        fprintf(stderr, "hrmt bench: --output %s: %s\n", e, err);
        return 1;
    }
    printf("\n%zu results written to %s\n", b->n_rows, e);
    return 0;
}

/* Rank 0, before any work: opens (creates) --output, which must not be an
 * input, so a bad path fails now and not after the benchmark. 0 or 2. */
static int open_output(bench *b) {
    const cli_bench_opts *o = &b->o;
    if (!o->output_path || !is_root(b)) return 0;
    const cli_named_file inputs[] = {{"--model", o->model_path}, {"--config", o->config_path}};
    char err[1024];
    if (cli_output_open(&b->out, "--output", o->output_path, inputs, 2, err, sizeof err)) {
        b->out.path = NULL;
        fprintf(stderr, "hrmt bench: %s\n", err);
        return 2;
    }
    return 0;
}

/* Removes an --output file this run created but never wrote. */
static void drop_output(bench *b) {
    if (b->out.path) cli_output_end(&b->out, NULL, 0, NULL, 0);
    b->out.path = NULL;
}

int hrmt_cmd_bench(int argc, char **argv) { return hrmt_cmd_bench_ranks(argc, argv, NULL); }

/* With ranks every rank measures the same rows at the same time; rank 0
 * prints its own tables, then (bench_report) every rank's figures. */
int hrmt_cmd_bench_ranks(int argc, char **argv, const cli_ranks *ranks) {
    bench b;
    memset(&b, 0, sizeof b);
    b.ranks = ranks;
    char err[512];
    int rc = 0;
    if (cli_bench_opts_parse(argc, argv, &b.o, err, sizeof err)) {
        fprintf(stderr, "hrmt bench: %s\n", err);
        rc = 2;
    } else if (!b.o.help) {
        rc = open_output(&b);
    }
    if ((rc = agree(&b, rc)) != 0) {
        drop_output(&b);
        return rc;
    }
    if (b.o.help) {
        if (is_root(&b)) cli_bench_usage(stdout);
        return 0;
    }
    hrmt_context_options co = hrmt_context_default_options();
    co.backend = b.o.backend;
    cli_backend_pin(b.o.backend);
    co.num_threads = b.o.threads;
    hrmt_status s = hrmt_context_create(&co, &b.ctx, err, sizeof err);
    if (s != HRMT_OK) {
        fprintf(stderr, "hrmt bench: --backend %s: %s (%s)\n",
                b.o.backend == HRMT_BACKEND_CUDA ? "cuda" : "cpu", err, hrmt_status_str(s));
        rc = 1;
    }
    rc = agree(&b, rc);
    if (rc == 0) rc = agree(&b, prepare(&b));
    if (rc == 0) rc = run_all(&b);
    if (rc == 0 && is_root(&b)) rc = report(&b);
    rc = agree(&b, rc);
    if (rc == 0 && ranks) rc = ranks->bench_report(ranks->u, b.rows, b.n_rows, &b.cfg, b.ctx);
    if (rc == 0 && b.outputs_differ) {
        fprintf(stderr,
                "hrmt bench: FAILED: tiered and baseline schedules gave different "
                "outputs (see above)\n");
        rc = 1;
    }
    rc = agree(&b, rc);
    drop_output(&b);
    free(b.rows);
    hrmt_model_destroy(b.file_model);
    hrmt_context_destroy(b.ctx);
    return rc;
}
