/* `hrmt run`: loads (or builds) a model, reads a batch of puzzles or token
 * rows, runs the ACT loop for --steps calls on that batch, and prints each
 * sample's prediction (argmax of the last step's logits) and q logits; --dump
 * writes every step's tensors under the golden files' names. */
#include <cjson/cJSON.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "cli/args.h"
#include "cli/commands.h"
#include "cli/json_out.h"
#include "cli/mpi_hooks.h"
#include "cli/progress.h"
#include "cli/run_dump.h"
#include "cli/run_input.h"
#include "cli/run_opts.h"
#include "cli/user_files.h"
#include "core/text_escape.h"
#include "hrmt.h"

#define RUN_SEED 20250101u /* weights of the built-in model (the same as `hrmt bench`) */

typedef struct run {
    cli_run_opts o;
    hrmt_context *ctx;
    hrmt_model *m;
    hrmt_model_config cfg;
    cli_run_batch in;
    int32_t *pids;
    int B, S, T, steps;
    float *logits, *qh, *qc, *zh, *zl;
    int32_t *halted;
    double step_ms_total;
    /* --dump (rank 0 only): opened before any work, streamed step by step. */
    cli_output dump_out;
    FILE *dump_fp;
    cli_run_dump dump;
    /* With ranks (hrmt-mpi): this process runs samples [b0, b0 + nb) of B;
     * rank 0's output arrays hold all B rows, the others' only their nb. */
    const cli_ranks *ranks;
    int b0, nb, rows;
} run;

static int is_root(const run *r) { return !r->ranks || r->ranks->rank == 0; }

/* Every rank's status -> the worst, on every rank (see mpi_hooks.h). */
static int agree(const run *r, int rc) { return r->ranks ? r->ranks->agree(r->ranks->u, rc) : rc; }

static int usage_error(const char *flag, const char *file, const char *msg) {
    char e[256];
    if (file)
        fprintf(stderr, "hrmt run: %s %s: %s\n", flag, hrmt_text_escape_str(e, sizeof e, file),
                msg);
    else
        fprintf(stderr, "hrmt run: %s: %s\n", flag, msg);
    return 2;
}

/* Model and config, honouring --model, --config and --dtype. 0 or an exit code. */
static int load_model(run *r) {
    const cli_run_opts *o = &r->o;
    int have_cfg = 0;
    if (o->config_path) {
        if (hrmt_model_config_load_json(r->ctx, o->config_path, &r->cfg) != HRMT_OK)
            return usage_error("--config", o->config_path, hrmt_last_error(r->ctx));
        have_cfg = 1;
    }
    if (!o->model_path) {
        if (!have_cfg) r->cfg = hrmt_model_config_default();
        if (o->dtype >= 0) r->cfg.forward_dtype = (hrmt_dtype)o->dtype;
        hrmt_status s = hrmt_model_create_random(r->ctx, &r->cfg, RUN_SEED, &r->m);
        if (s == HRMT_ERR_OUT_OF_MEMORY) {
            fprintf(stderr,
                    "hrmt run: building the model with random weights (hidden %d, %d H + %d L "
                    "layers): %s; give a smaller --config or --model, or free memory\n",
                    r->cfg.hidden_size, r->cfg.H_layers, r->cfg.L_layers, hrmt_last_error(r->ctx));
            return 1;
        }
        if (s != HRMT_OK)
            return usage_error("--config", o->config_path ? o->config_path : "(built-in)",
                               hrmt_last_error(r->ctx));
        return 0;
    }
    if (!have_cfg && o->dtype >= 0) {
        /* The config lives in the file's metadata: read it, then load with the dtype. */
        if (hrmt_model_load_ex(r->ctx, o->model_path, NULL, o->load_flags, &r->m) != HRMT_OK)
            return usage_error("--model", o->model_path, hrmt_last_error(r->ctx));
        r->cfg = *hrmt_model_get_config(r->m);
        hrmt_model_destroy(r->m);
        r->m = NULL;
        have_cfg = 1;
    }
    if (have_cfg && o->dtype >= 0) r->cfg.forward_dtype = (hrmt_dtype)o->dtype;
    if (hrmt_model_load_ex(r->ctx, o->model_path, have_cfg ? &r->cfg : NULL, o->load_flags,
                           &r->m) != HRMT_OK)
        return usage_error("--model", o->model_path, hrmt_last_error(r->ctx));
    r->cfg = *hrmt_model_get_config(r->m);
    return 0;
}

static int read_input(run *r) {
    const cli_run_opts *o = &r->o;
    char err[512];
    if (o->puzzles_path) {
        if (r->cfg.seq_len != 81 || r->cfg.vocab_size < 11) {
            snprintf(err, sizeof err,
                     "puzzles need a Sudoku model (seq_len 81, vocab >= 11); this one has "
                     "seq_len %d, vocab %d: use --tokens",
                     r->cfg.seq_len, r->cfg.vocab_size);
            return usage_error("--puzzles", o->puzzles_path, err);
        }
        if (cli_run_read(o->puzzles_path, CLI_RUN_PUZZLES, r->cfg.seq_len, 0, o->max_line, &r->in,
                         err, sizeof err) != 0)
            return usage_error("--puzzles", NULL, err);
    } else if (cli_run_read(o->tokens_path, CLI_RUN_TOKENS, r->cfg.seq_len, r->cfg.vocab_size,
                            o->max_line, &r->in, err, sizeof err) != 0) {
        return usage_error("--tokens", NULL, err);
    }
    if (r->cfg.puzzle_emb_ndim > 0 && o->puzzle_id >= r->cfg.num_puzzle_identifiers) {
        snprintf(err, sizeof err, "%d is outside the model's puzzle identifiers 0..%d",
                 o->puzzle_id, r->cfg.num_puzzle_identifiers - 1);
        return usage_error("--puzzle-id", NULL, err);
    }
    return 0;
}

static int alloc_io(run *r) {
    size_t B = (size_t)r->rows, S = (size_t)r->S,
           zn = B * (size_t)r->T * (size_t)r->cfg.hidden_size;
    r->pids = calloc(B, sizeof *r->pids);
    r->logits = calloc(B * S * (size_t)r->cfg.vocab_size, sizeof(float));
    r->qh = calloc(B, sizeof(float));
    r->qc = calloc(B, sizeof(float));
    r->halted = calloc(B, sizeof(int32_t));
    r->zh = r->o.dump_path ? calloc(zn, sizeof(float)) : NULL;
    r->zl = r->o.dump_path ? calloc(zn, sizeof(float)) : NULL;
    if (!r->pids || !r->logits || !r->qh || !r->qc || !r->halted ||
        (r->o.dump_path && (!r->zh || !r->zl)))
        return -1;
    for (size_t i = 0; i < B; i++) r->pids[i] = r->o.puzzle_id;
    return 0;
}

/* Rank 0: checks that the dump can be written and read back, truncates the
 * file and writes the header and the inputs. 0 or 1. */
static int start_dump(run *r) {
    char err[512];
    if (cli_run_dump_init(&r->dump, r->B, r->S, r->cfg.vocab_size, r->T, r->cfg.hidden_size,
                          r->steps, err, sizeof err) == 0 &&
        (r->dump_fp = cli_output_begin(&r->dump_out, err, sizeof err)) != NULL &&
        cli_run_dump_start(&r->dump, r->dump_fp, r->in.tokens, r->pids, err, sizeof err) == 0)
        return 0;
    char e[256];
    fprintf(stderr, "hrmt run: --dump %s: %s\n", hrmt_text_escape_str(e, sizeof e, r->o.dump_path),
            err);
    return 1;
}

/* Rank 0: closes the dump; a failed run (rc != 0) removes the partial file. */
static int end_dump(run *r, int rc) {
    if (!r->o.dump_path || !is_root(r) || r->dump_out.path == NULL) return rc;
    char err[512], e[256];
    int bad = cli_output_end(&r->dump_out, r->dump_fp, rc == 0, err, sizeof err);
    r->dump_fp = NULL;
    r->dump_out.path = NULL;
    if (bad) {
        fprintf(stderr, "hrmt run: --dump %s: %s\n",
                hrmt_text_escape_str(e, sizeof e, r->o.dump_path), err);
        return 1;
    }
    return rc;
}

/* With ranks: the other ranks' rows of this step's outputs into rank 0's
 * arrays (z_H, z_L only for --dump). Every rank makes every call. 0 or -1. */
static int gather_outputs(const run *r) {
    const cli_ranks *k = r->ranks;
    if (!k) return 0;
    size_t z_row = (size_t)r->T * (size_t)r->cfg.hidden_size * sizeof(float);
    int bad = k->gather_rows(k->u, r->logits,
                             (size_t)r->S * (size_t)r->cfg.vocab_size * sizeof(float), r->B);
    bad |= k->gather_rows(k->u, r->qh, sizeof(float), r->B);
    bad |= k->gather_rows(k->u, r->qc, sizeof(float), r->B);
    bad |= k->gather_rows(k->u, r->halted, sizeof(int32_t), r->B);
    if (r->o.dump_path) {
        bad |= k->gather_rows(k->u, r->zh, z_row, r->B);
        bad |= k->gather_rows(k->u, r->zl, z_row, r->B);
    }
    return bad ? -1 : 0;
}

/* Runs the ACT calls on this process's samples. 0 or an exit code, agreed. */
static int run_steps(run *r) {
    hrmt_carry *carry = NULL;
    int rc = 0;
    if (r->nb > 0 && hrmt_carry_create(r->m, r->nb, &carry) != HRMT_OK) {
        fprintf(stderr,
                "hrmt run: ACT state for %d samples: %s (fewer samples per file need less)\n",
                r->nb, hrmt_last_error(r->ctx));
        rc = 1;
    }
    if (rc == 0 && r->o.dump_path && is_root(r)) rc = start_dump(r);
    rc = agree(r, rc);
    cli_progress bar;
    cli_progress_init(&bar, is_root(r) && cli_progress_wanted(r->o.quiet) ? stderr : NULL,
                      (size_t)r->steps);
    hrmt_step_options so = {r->o.schedule, r->o.early_halt};
    hrmt_step_outputs out = {r->logits, r->qh, r->qc, r->zh, r->zl, r->halted};
    const int32_t *tokens = r->in.tokens + (size_t)r->b0 * (size_t)r->S;
    for (int k = 0; k < r->steps && rc == 0; k++) {
        hrmt_step_timing t;
        if (carry && hrmt_act_step(r->m, carry, tokens, r->pids, &so, &out, &t) != HRMT_OK) {
            cli_progress_finish(&bar);
            const char *detail = hrmt_last_error(r->ctx);
            fprintf(stderr, "hrmt run: ACT step %d of %d: %s\n", k + 1, r->steps,
                    detail && *detail ? detail : "failed (no detail from the library)");
            rc = 1;
        } else if (carry) {
            r->step_ms_total += t.step_us / 1000.0;
        }
        char label[64];
        snprintf(label, sizeof label, "ACT step %d of %d, %d samples", k + 1, r->steps, r->B);
        cli_progress_advance(&bar, 1, label);
        rc = agree(r, rc);
        if (rc || !r->o.dump_path) continue;
        char err[512];
        if (gather_outputs(r) != 0) {
            fprintf(stderr, "hrmt run: gathering step %d from the ranks failed\n", k);
            rc = 1;
        } else if (is_root(r) && cli_run_dump_step(&r->dump, r->logits, r->qh, r->qc, r->zh, r->zl,
                                                   r->halted, err, sizeof err) != 0) {
            char e[256];
            cli_progress_finish(&bar);
            fprintf(stderr, "hrmt run: --dump %s: step %d: %s\n",
                    hrmt_text_escape_str(e, sizeof e, r->o.dump_path), k, err);
            rc = 1;
        }
        rc = agree(r, rc);
    }
    cli_progress_finish(&bar);
    hrmt_carry_destroy(carry);
    if (rc == 0 && r->ranks) {
        /* The batch's step takes as long as its slowest shard. */
        r->step_ms_total = r->ranks->max(r->ranks->u, r->step_ms_total);
        if (!r->o.dump_path && gather_outputs(r) != 0) {
            fprintf(stderr, "hrmt run: gathering the outputs from the ranks failed\n");
            rc = 1;
        }
        rc = agree(r, rc);
    }
    return agree(r, end_dump(r, rc));
}

/* argmax over the vocabulary of sample b, position i (first maximum wins). */
static int32_t argmax(const run *r, int b, int i) {
    const float *l = r->logits + ((size_t)b * (size_t)r->S + (size_t)i) * (size_t)r->cfg.vocab_size;
    int32_t best = 0;
    for (int v = 1; v < r->cfg.vocab_size; v++)
        if (l[v] > l[best]) best = v;
    return best;
}

static const char *dtype_label(hrmt_dtype dt) { return dt == HRMT_BF16 ? "bf16" : "f32"; }

static int print_text(const run *r) {
    const int puzzles = r->o.puzzles_path != NULL;
    char e[256];
    printf("hrmt run: %d %s, model %s, %s, %s schedule, %d ACT steps%s, %.2f ms/step\n", r->B,
           puzzles ? "puzzles" : "samples",
           r->o.model_path ? hrmt_text_escape_str(e, sizeof e, r->o.model_path)
                           : "built-in (random weights)",
           dtype_label(r->cfg.forward_dtype),
           r->o.schedule == HRMT_SCHEDULE_TIERED ? "tiered" : "baseline", r->steps,
           r->o.early_halt ? " (early halt on)" : "", r->step_ms_total / r->steps);
    char *text = malloc((size_t)r->S + 1);
    int32_t *pred = malloc((size_t)r->S * sizeof *pred);
    if (!text || !pred) {
        free(text);
        free(pred);
        return 1;
    }
    for (int b = 0; b < r->B; b++) {
        for (int i = 0; i < r->S; i++) pred[i] = argmax(r, b, i);
        printf("%s %d (line %d): q_halt %.4f, q_continue %.4f, halted %s\n",
               puzzles ? "puzzle" : "sample", b + 1, r->in.line[b], (double)r->qh[b],
               (double)r->qc[b], r->halted[b] ? "yes" : "no");
        if (puzzles) {
            cli_run_tokens_to_text(r->in.tokens + (size_t)b * (size_t)r->S, r->S, text);
            printf("  input      %s\n", text);
            cli_run_tokens_to_text(pred, r->S, text);
            printf("  prediction %s\n", text);
        } else {
            printf("  prediction");
            for (int i = 0; i < r->S; i++) printf(" %d", (int)pred[i]);
            printf("\n");
        }
    }
    free(text);
    free(pred);
    return 0;
}

static int print_json(const run *r) {
    const int puzzles = r->o.puzzles_path != NULL;
    cJSON *root = cJSON_CreateObject(), *res = NULL;
    char *text = malloc((size_t)r->S + 1);
    int32_t *pred = calloc((size_t)r->S, sizeof *pred);
    int ok = root && text && pred;
    if (ok) {
        cJSON_AddStringToObject(root, "model", r->o.model_path ? r->o.model_path : "built-in");
        cJSON_AddStringToObject(root, "input_kind", puzzles ? "puzzles" : "tokens");
        cJSON_AddStringToObject(root, "dtype", dtype_label(r->cfg.forward_dtype));
        cJSON_AddStringToObject(root, "schedule",
                                r->o.schedule == HRMT_SCHEDULE_TIERED ? "tiered" : "baseline");
        cJSON_AddBoolToObject(root, "early_halt", r->o.early_halt);
        cli_json_add_num(root, "steps", r->steps);
        cli_json_add_num(root, "puzzle_id", r->o.puzzle_id);
        cli_json_add_num(root, "mean_step_ms", r->step_ms_total / r->steps);
        res = cJSON_AddArrayToObject(root, "results");
        ok = res != NULL;
    }
    for (int b = 0; ok && b < r->B; b++) {
        for (int i = 0; i < r->S; i++) pred[i] = argmax(r, b, i);
        cJSON *e = cJSON_CreateObject();
        ok = e && cJSON_AddItemToArray(res, e);
        if (!ok) break;
        cli_json_add_num(e, "index", b);
        cli_json_add_num(e, "line", r->in.line[b]);
        if (puzzles) {
            cli_run_tokens_to_text(r->in.tokens + (size_t)b * (size_t)r->S, r->S, text);
            cJSON_AddStringToObject(e, "input", text);
            cli_run_tokens_to_text(pred, r->S, text);
            cJSON_AddStringToObject(e, "prediction", text);
        }
        cJSON_AddItemToObject(e, "prediction_tokens", cJSON_CreateIntArray(pred, r->S));
        cli_json_add_num(e, "q_halt_logits", r->qh[b]);
        cli_json_add_num(e, "q_continue_logits", r->qc[b]);
        cJSON_AddBoolToObject(e, "halted", r->halted[b] != 0);
    }
    char err[256];
    int rc = 1;
    if (ok && cli_json_write(root, stdout, err, sizeof err) == 0)
        rc = 0;
    else
        fprintf(stderr, "hrmt run: writing JSON failed%s%s\n", ok ? ": " : "", ok ? err : "");
    cJSON_Delete(root);
    free(text);
    free(pred);
    return rc;
}

static void cleanup(run *r) {
    end_dump(r, 1); /* still open only after a failure */
    free(r->pids);
    free(r->logits);
    free(r->qh);
    free(r->qc);
    free(r->zh);
    free(r->zl);
    free(r->halted);
    cli_run_batch_free(&r->in);
    hrmt_model_destroy(r->m);
    hrmt_context_destroy(r->ctx);
}

/* Rank 0, before any work: opens (creates) the --dump file, which must not
 * be an input. 0 or 2. */
static int open_dump(run *r) {
    const cli_run_opts *o = &r->o;
    if (!o->dump_path || !is_root(r)) return 0;
    const cli_named_file inputs[] = {{"--model", o->model_path},
                                     {"--config", o->config_path},
                                     {"--puzzles", o->puzzles_path},
                                     {"--tokens", o->tokens_path}};
    char err[1024];
    if (cli_output_open(&r->dump_out, "--dump", o->dump_path, inputs,
                        sizeof inputs / sizeof inputs[0], err, sizeof err) != 0) {
        r->dump_out.path = NULL;
        fprintf(stderr, "hrmt run: %s\n", err);
        return 2;
    }
    return 0;
}

/* With ranks: the sample count from rank 0, and room for its samples. */
static int receive_count(run *r) {
    const cli_ranks *k = r->ranks;
    int n = r->in.n;
    if (k->bcast(k->u, &n, sizeof n) != 0) return 1;
    if (k->rank == 0) return 0;
    r->in.n = n;
    r->in.seq_len = r->cfg.seq_len;
    r->in.tokens = calloc((size_t)n * (size_t)r->cfg.seq_len, sizeof *r->in.tokens);
    if (!r->in.tokens) {
        fprintf(stderr, "hrmt run: out of memory for the tokens of %d samples of %d\n", n,
                r->cfg.seq_len);
        return 1;
    }
    return 0;
}

/* Sizes, this process's shard and the output arrays. 0 or an exit code. */
static int size_run(run *r) {
    r->B = r->in.n;
    r->S = r->cfg.seq_len;
    r->T = r->S + hrmt_model_puzzle_len(r->m);
    r->steps = r->o.steps ? r->o.steps : r->cfg.halt_max_steps;
    r->b0 = 0;
    r->nb = r->rows = r->B;
    if (r->ranks) {
        int end = 0;
        cli_ranks_shard(r->B, r->ranks->rank, r->ranks->size, &r->b0, &end);
        r->nb = end - r->b0;
        if (r->ranks->rank != 0) r->rows = r->nb;
    }
    if (alloc_io(r) != 0) {
        fprintf(stderr,
                "hrmt run: out of memory for the outputs of %d samples (logits%s); use fewer "
                "samples per file%s\n",
                r->rows, r->o.dump_path ? ", z_H and z_L for --dump" : "",
                r->o.dump_path ? " or drop --dump" : "");
        return 1;
    }
    return 0;
}

int hrmt_cmd_run(int argc, char **argv) { return hrmt_cmd_run_ranks(argc, argv, NULL); }

/* With ranks every phase ends in agree(), so a failure on one rank stops all
 * at the same point; rank 0 alone reads the input and prints. */
int hrmt_cmd_run_ranks(int argc, char **argv, const cli_ranks *ranks) {
    run r;
    memset(&r, 0, sizeof r);
    r.ranks = ranks;
    char err[512];
    int rc = 0;
    if (cli_run_opts_parse(argc, argv, &r.o, err, sizeof err) != 0) {
        fprintf(stderr, "hrmt run: %s\n", err);
        rc = 2;
    } else if (!r.o.help) {
        rc = open_dump(&r);
    }
    if ((rc = agree(&r, rc)) != 0) return end_dump(&r, rc);
    if (r.o.help) {
        if (is_root(&r)) cli_run_usage(stdout);
        return 0;
    }
    hrmt_context_options co = hrmt_context_default_options();
    co.num_threads = r.o.threads;
    co.backend = r.o.backend;
    cli_backend_pin(r.o.backend);
    if (hrmt_context_create(&co, &r.ctx, err, sizeof err) != HRMT_OK) {
        fprintf(stderr, "hrmt run: %s\n", err);
        rc = 1;
    }
    rc = agree(&r, rc);
    if (rc == 0) rc = agree(&r, load_model(&r));
    if (rc == 0) rc = agree(&r, is_root(&r) ? read_input(&r) : 0);
    if (rc == 0 && ranks) rc = agree(&r, receive_count(&r));
    if (rc == 0 && ranks) {
        size_t bytes = (size_t)r.in.n * (size_t)r.cfg.seq_len * sizeof *r.in.tokens;
        rc = agree(&r, ranks->bcast(ranks->u, r.in.tokens, bytes) != 0);
    }
    if (rc == 0) rc = agree(&r, size_run(&r));
    if (rc == 0) rc = run_steps(&r);
    if (rc == 0 && is_root(&r)) rc = r.o.json ? print_json(&r) : print_text(&r);
    rc = agree(&r, rc);
    cleanup(&r);
    return rc;
}
