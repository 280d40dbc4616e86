/* `hrmt probe`: the memory-tier map (latency and bandwidth against working-set
 * size, with the detected cache levels), as a table, JSON or a chart. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "cli/commands.h"
#include "cli/json_out.h"
#include "cli/probe_opts.h"
#include "cli/probe_report.h"
#include "cli/probe_sweep.h"
#include "cli/progress.h"
#include "cli/user_files.h"
#include "core/text_escape.h"
#include "hrmt.h"

/* Why the GPU column of --compare is empty. */
static const char *gpu_unavailable_reason(void) {
    hrmt_cuda_info ci;
    memset(&ci, 0, sizeof ci);
    if (hrmt_cuda_query(&ci) != HRMT_OK || !ci.built)
        return "hrmt was built without the CUDA backend";
    if (ci.device_count == 0) return "no CUDA device is present";
    return NULL;
}

/* Creates a context for `backend`; messages say which backend failed and why. */
static hrmt_context *open_context(hrmt_backend_kind backend, int threads) {
    hrmt_context_options co = hrmt_context_default_options();
    co.backend = backend;
    co.num_threads = threads;
    hrmt_context *ctx = NULL;
    char err[512] = "";
    hrmt_status s = hrmt_context_create(&co, &ctx, err, sizeof err);
    if (s != HRMT_OK) {
        fprintf(stderr, "hrmt probe: %s backend unavailable: %s (%s)\n",
                backend == HRMT_BACKEND_CUDA ? "CUDA" : "CPU", err, hrmt_status_str(s));
        return NULL;
    }
    return ctx;
}

/* Runs the sweep with a progress bar; 0 ok. The sweep ends at the device's
 * main-memory point unless --max-bytes was given (--quick stops there, the
 * last size that matters). */
static int sweep(hrmt_context *ctx, const cli_probe_opts *opts, cli_probe_result *r) {
    cli_probe_opts o = *opts;
    if (!o.max_given) {
        size_t main_point = cli_probe_main_point(ctx);
        if (main_point >= o.min_bytes && (o.quick || main_point > o.max_bytes))
            o.max_bytes = main_point;
    }
    size_t sizes[CLI_PROBE_MAX_POINTS];
    size_t n = cli_probe_sizes(o.min_bytes, o.max_bytes, o.quick, sizes, CLI_PROBE_MAX_POINTS);
    cli_progress bar;
    cli_progress_init(&bar, cli_progress_wanted(o.quiet) ? stderr : NULL,
                      n + 2 * (size_t)CLI_PROBE_MAX_TIERS);
    /* Two trials per size smooth the full sweep; --quick takes one. */
    hrmt_status s = cli_probe_run(ctx, sizes, n, o.quick ? 1 : 2, o.max_bytes, &bar, r);
    cli_progress_finish(&bar);
    if (s != HRMT_OK) {
        const char *detail = hrmt_last_error(ctx);
        fprintf(stderr, "hrmt probe: %ssweep up to %zu bytes: %s: %s%s\n",
                hrmt_context_backend(ctx) == HRMT_BACKEND_CUDA ? "CUDA probe: " : "", o.max_bytes,
                hrmt_status_str(s), detail && *detail ? detail : "(no detail from the library)",
                s == HRMT_ERR_OUT_OF_MEMORY ? "; try a smaller --max-bytes" : "");
        return -1;
    }
    return 0;
}

static int write_json(cJSON *j) {
    char err[512];
    int rc = 0;
    if (!j || cli_json_write(j, stdout, err, sizeof err)) {
        fprintf(stderr, "hrmt probe: JSON output: %s\n", j ? err : "out of memory");
        rc = 1;
    }
    cJSON_Delete(j);
    return rc;
}

/* --compare: the CPU sweep, then the GPU's when there is one; the GPU side
 * failing leaves its column empty with the reason (exit 0: the CPU half is
 * the command's guaranteed output). */
static int run_compare(const cli_probe_opts *o, hrmt_context *ctx, cli_probe_result *cpu,
                       cli_output *plot_out) {
    const char *why = gpu_unavailable_reason();
    static cli_probe_result gpu; /* large; one per process */
    int have_gpu = 0;
    if (!why) {
        hrmt_context *gctx = open_context(HRMT_BACKEND_CUDA, o->threads);
        have_gpu = gctx && sweep(gctx, o, &gpu) == 0;
        if (!have_gpu) why = "the CUDA probe failed (see the message above)";
        hrmt_context_destroy(gctx);
    }
    const cli_probe_result *g = have_gpu ? &gpu : NULL;
    if (o->json) {
        int rc = write_json(cli_probe_compare_json(cpu, hrmt_context_topology(ctx), g, why));
        if (rc) return rc;
    } else {
        cli_probe_print_compare(cpu, g, why, stdout);
    }
    if (!o->plot_path) return 0;
    char err[512], e[256];
    if (cli_probe_plot_compare(cpu, g, why, plot_out, o->plot_format, err, sizeof err)) {
        fprintf(stderr, "hrmt probe: --plot %s: %s\n",
                hrmt_text_escape_str(e, sizeof e, o->plot_path), err);
        return 1;
    }
    if (!o->json) /* stdout holds nothing but the JSON */
        fprintf(stdout, "plot written to %s\n",
                hrmt_text_escape_str(err, sizeof err, o->plot_path));
    return 0;
}

/* Reads a whole file; NULL with a message in err. */
static char *slurp(const char *path, char *err, size_t errlen) {
    FILE *f = cli_fopen_regular(path, err, errlen);
    if (!f) return NULL;
    size_t cap = 1 << 16, n = 0, k;
    char *buf = malloc(cap);
    while (buf && (k = fread(buf + n, 1, cap - n - 1, f)) > 0) {
        n += k;
        if (n + 1 == cap) {
            char *nb = cap < ((size_t)64 << 20) ? realloc(buf, cap * 2) : NULL;
            if (!nb) {
                free(buf);
                buf = NULL;
                break;
            }
            buf = nb;
            cap *= 2;
        }
    }
    fclose(f);
    if (!buf) {
        char e[256];
        snprintf(err, errlen, "'%s' is too large (the limit is 64 MiB) or memory ran out",
                 hrmt_text_escape_str(e, sizeof e, path));
        return NULL;
    }
    buf[n] = 0;
    return buf;
}

/* --input: a saved --json output (plain or --compare), printed or plotted
 * without measuring; so a GPU machine's run can be charted elsewhere. */
static int run_input(const cli_probe_opts *o, cli_output *plot_out) {
    char err[512], e[256];
    hrmt_text_escape_str(e, sizeof e, o->input);
    static cli_probe_result a, b; /* large; one per process */
    char *text = slurp(o->input, err, sizeof err);
    if (!text) {
        fprintf(stderr, "hrmt probe: --input: %s\n", err);
        return 1;
    }
    cJSON *j = cJSON_Parse(text);
    free(text);
    if (!j) {
        fprintf(stderr, "hrmt probe: --input: '%s' is not JSON\n", e);
        return 1;
    }
    const cJSON *cpu = cJSON_GetObjectItemCaseSensitive(j, "cpu");
    const cJSON *gpu = cJSON_GetObjectItemCaseSensitive(j, "gpu");
    const cJSON *why = cJSON_GetObjectItemCaseSensitive(j, "gpu_unavailable");
    const int compare = cJSON_IsObject(cpu);
    int rc = 0, have_gpu = compare && cJSON_IsObject(gpu);
    if (cli_probe_from_json(compare ? cpu : j, &a, err, sizeof err) ||
        (have_gpu && cli_probe_from_json(gpu, &b, err, sizeof err))) {
        fprintf(stderr, "hrmt probe: --input '%s': %s\n", e, err);
        cJSON_Delete(j);
        return 1;
    }
    char note[256]; /* printed and plotted: only printable bytes */
    hrmt_text_escape_str(note, sizeof note,
                         cJSON_IsString(why) ? why->valuestring : "not in the saved run");
    if (compare)
        cli_probe_print_compare(&a, have_gpu ? &b : NULL, note, stdout);
    else
        cli_probe_print(&a, NULL, stdout);
    if (o->plot_path) {
        int bad = compare ? cli_probe_plot_compare(&a, have_gpu ? &b : NULL, note, plot_out,
                                                   o->plot_format, err, sizeof err)
                          : cli_probe_plot(&a, NULL, plot_out, o->plot_format, err, sizeof err);
        if (bad) {
            fprintf(stderr, "hrmt probe: --plot %s: %s\n",
                    hrmt_text_escape_str(e, sizeof e, o->plot_path), err);
            rc = 1;
        } else {
            fprintf(stdout, "plot written to %s\n",
                    hrmt_text_escape_str(e, sizeof e, o->plot_path));
        }
    }
    cJSON_Delete(j);
    return rc;
}

static int run_measured(const cli_probe_opts *opts, cli_output *plot_out) {
    const cli_probe_opts o = *opts;
    char err[512];
    /* --compare always puts the CPU first and the GPU beside it. */
    hrmt_context *ctx = open_context(o.compare ? HRMT_BACKEND_CPU : o.backend, o.threads);
    if (!ctx) return 1;
    static cli_probe_result r; /* large; one per process */
    const hrmt_topology *topo = hrmt_context_topology(ctx);
    int rc = 0;
    if (sweep(ctx, &o, &r)) {
        rc = 1;
    } else if (o.compare) {
        rc = run_compare(&o, ctx, &r, plot_out);
    } else {
        if (o.json)
            rc = write_json(cli_probe_json(&r, topo));
        else
            cli_probe_print(&r, topo, stdout);
        if (rc == 0 && o.plot_path) {
            char e[256];
            if (cli_probe_plot(&r, topo, plot_out, o.plot_format, err, sizeof err)) {
                fprintf(stderr, "hrmt probe: --plot %s: %s\n",
                        hrmt_text_escape_str(e, sizeof e, o.plot_path), err);
                rc = 1;
            } else if (!o.json) {
                fprintf(stdout, "plot written to %s\n",
                        hrmt_text_escape_str(e, sizeof e, o.plot_path));
            }
        }
    }
    hrmt_context_destroy(ctx);
    return rc;
}

int hrmt_cmd_probe(int argc, char **argv) {
    cli_probe_opts o;
    char err[512];
    if (cli_probe_opts_parse(argc, argv, &o, err, sizeof err)) {
        fprintf(stderr, "hrmt probe: %s\n", err);
        return 2;
    }
    if (o.help) {
        cli_probe_usage(stdout);
        return 0;
    }
    /* --plot fails here, before the sweep, when it cannot be drawn or written. */
    cli_output plot_out;
    memset(&plot_out, 0, sizeof plot_out);
    plot_out.fd = -1;
    if (o.plot_path) {
        if (cli_probe_plot_available(err, sizeof err)) {
            fprintf(stderr, "hrmt probe: --plot: %s\n", err);
            return 1;
        }
        const cli_named_file inputs[] = {{"--input", o.input}};
        if (cli_output_open(&plot_out, "--plot", o.plot_path, inputs, 1, err, sizeof err)) {
            fprintf(stderr, "hrmt probe: %s\n", err);
            return 2;
        }
    }
    int rc = o.input ? run_input(&o, &plot_out) : run_measured(&o, &plot_out);
    cli_output_end(&plot_out, NULL, rc == 0, NULL, 0); /* removes an unwritten new file */
    return rc;
}
