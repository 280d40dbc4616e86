/* `hrmt bench` option parsing (see bench_opts.h). */
#define _GNU_SOURCE /* getopt_long */
#include "cli/bench_opts.h"

#include <getopt.h>
#include <string.h>

#include "cli/args.h"
#include "cli/opt_error.h"

/* Bounds: far beyond any sensible run, small enough that size products
 * (batch * seq * hidden * 4 bytes) stay well inside size_t. */
#define MAX_BATCH 65536
#define MAX_SEQ 65536
#define MAX_HIDDEN 65536
#define MAX_DEPTH 1024
#define MAX_ITER 1000000
#define MAX_ROUNDS 1000

static const char *const g_mode_names[] = {"tiered", "baseline", "compare"};
static const char *const g_dtype_names[] = {"f32", "bf16"};

const char *cli_bench_mode_name(cli_bench_mode m) {
    return (unsigned)m < 3 ? g_mode_names[m] : "?";
}

void cli_bench_opts_default(cli_bench_opts *o) {
    memset(o, 0, sizeof *o);
    o->mode = CLI_MODE_COMPARE;
    o->batch_sizes[0] = 1;
    o->batch_sizes[1] = 8;
    o->batch_sizes[2] = 32;
    o->n_batch = 3;
    o->seq_lens[0] = 81; /* Sudoku */
    o->n_seq = 1;
    o->dtype = -1;
    o->warmup = 2;
    o->iterations = 10;
    o->rounds = 1;
    o->backend = HRMT_BACKEND_CPU;
}

void cli_bench_usage(FILE *f) {
    fprintf(f,
            "usage: hrmt bench [options]\n"
            "Times one ACT step of the HRM model with the tiered (SRAM/DRAM) schedule and the\n"
            "baseline schedule, over batch sizes and sequence lengths.\n"
            "\n"
            "  --mode tiered|baseline|compare   schedules to run (default compare)\n"
            "  --batch-sizes LIST               comma-separated (default 1,8,32)\n"
            "  --seq-lens LIST                  e.g. 64,128 (default 81, or the model's)\n"
            "  --hidden-size N                  built-in model width (default 512)\n"
            "  --num-heads N                    attention heads; must divide the width (8)\n"
            "  --expansion X                    MLP expansion factor (4)\n"
            "  --H-cycles N  --L-cycles N       reasoning cycles (2, 2)\n"
            "  --H-layers N  --L-layers N       transformer layers per level (4, 4)\n"
            "  --dtype bf16|f32                 forward dtype (bf16)\n"
            "  --warmup N                       untimed steps first; 0 allowed (2)\n"
            "  --iterations N                   timed steps (10)\n"
            "  --rounds N                       runs of each schedule, each with its own warm-up\n"
            "                                   and --iterations steps, one row over all (1);\n"
            "                                   compare mode alternates which goes first\n"
            "  --threads N                      OpenMP threads (default: all)\n"
            "  --backend cpu|cuda               compute backend (HRMT_BACKEND, else cpu)\n"
            "  --model FILE                     safetensors model instead of the built-in one\n"
            "  --config FILE                    architecture JSON (arch of case.json/all_config)\n"
            "  --output FILE                    write results as a JSON array\n"
            "  --profile                        also print where the step goes (ms per part; CPU)\n"
            "  --quiet                          no progress bar\n"
            "  --help                           this text\n");
}

enum {
    OPT_MODE = 256,
    OPT_BATCH,
    OPT_SEQ,
    OPT_HIDDEN,
    OPT_HEADS,
    OPT_EXPANSION,
    OPT_HCYC,
    OPT_LCYC,
    OPT_HLAY,
    OPT_LLAY,
    OPT_DTYPE,
    OPT_WARMUP,
    OPT_ITER,
    OPT_ROUNDS,
    OPT_THREADS,
    OPT_BACKEND,
    OPT_MODEL,
    OPT_CONFIG,
    OPT_PROFILE
};

static const struct option g_long_opts[] = {{"mode", required_argument, NULL, OPT_MODE},
                                            {"batch-sizes", required_argument, NULL, OPT_BATCH},
                                            {"seq-lens", required_argument, NULL, OPT_SEQ},
                                            {"hidden-size", required_argument, NULL, OPT_HIDDEN},
                                            {"num-heads", required_argument, NULL, OPT_HEADS},
                                            {"expansion", required_argument, NULL, OPT_EXPANSION},
                                            {"H-cycles", required_argument, NULL, OPT_HCYC},
                                            {"L-cycles", required_argument, NULL, OPT_LCYC},
                                            {"H-layers", required_argument, NULL, OPT_HLAY},
                                            {"L-layers", required_argument, NULL, OPT_LLAY},
                                            {"dtype", required_argument, NULL, OPT_DTYPE},
                                            {"warmup", required_argument, NULL, OPT_WARMUP},
                                            {"iterations", required_argument, NULL, OPT_ITER},
                                            {"rounds", required_argument, NULL, OPT_ROUNDS},
                                            {"threads", required_argument, NULL, OPT_THREADS},
                                            {"backend", required_argument, NULL, OPT_BACKEND},
                                            {"model", required_argument, NULL, OPT_MODEL},
                                            {"config", required_argument, NULL, OPT_CONFIG},
                                            {"output", required_argument, NULL, 'o'},
                                            {"quiet", no_argument, NULL, 'q'},
                                            {"profile", no_argument, NULL, OPT_PROFILE},
                                            {"help", no_argument, NULL, 'h'},
                                            {NULL, 0, NULL, 0}};

int cli_bench_opts_parse(int argc, char **argv, cli_bench_opts *o, char *err, size_t errlen) {
    cli_bench_opts_default(o);
    if (cli_backend_default(&o->backend, err, errlen)) return -1;
    cli_getopt_reset();
    char fb[64];
    for (;;) {
        int c = getopt_long(argc, argv, ":o:qh", g_long_opts, NULL);
        if (c == -1) break;
        const char *fl = cli_flag_name(g_long_opts, c, fb, sizeof fb);
        int r = 0, v = 0;
        switch (c) {
        case OPT_MODE:
            r = cli_parse_choice(fl, optarg, g_mode_names, 3, &v, err, errlen);
            o->mode = (cli_bench_mode)v;
            break;
        case OPT_BATCH:
            r = cli_parse_int_list(fl, optarg, 1, MAX_BATCH, o->batch_sizes, CLI_BENCH_MAX_LIST,
                                   &o->n_batch, err, errlen);
            break;
        case OPT_SEQ:
            r = cli_parse_int_list(fl, optarg, 1, MAX_SEQ, o->seq_lens, CLI_BENCH_MAX_LIST,
                                   &o->n_seq, err, errlen);
            o->seq_lens_given = 1;
            break;
        case OPT_HIDDEN:
            r = cli_parse_int(fl, optarg, 1, MAX_HIDDEN, &o->hidden_size, err, errlen);
            break;
        case OPT_HEADS:
            r = cli_parse_int(fl, optarg, 1, MAX_HIDDEN, &o->num_heads, err, errlen);
            break;
        case OPT_HCYC:
            r = cli_parse_int(fl, optarg, 1, MAX_DEPTH, &o->H_cycles, err, errlen);
            break;
        case OPT_LCYC:
            r = cli_parse_int(fl, optarg, 1, MAX_DEPTH, &o->L_cycles, err, errlen);
            break;
        case OPT_HLAY:
            r = cli_parse_int(fl, optarg, 1, MAX_DEPTH, &o->H_layers, err, errlen);
            break;
        case OPT_LLAY:
            r = cli_parse_int(fl, optarg, 1, MAX_DEPTH, &o->L_layers, err, errlen);
            break;
        case OPT_EXPANSION:
            r = cli_parse_double(fl, optarg, 0.0, 64.0, &o->expansion, err, errlen);
            break;
        case OPT_DTYPE:
            r = cli_parse_choice(fl, optarg, g_dtype_names, 2, &v, err, errlen);
            o->dtype = v == 0 ? HRMT_F32 : HRMT_BF16;
            break;
        case OPT_WARMUP: r = cli_parse_int(fl, optarg, 0, MAX_ITER, &o->warmup, err, errlen); break;
        case OPT_ITER:
            r = cli_parse_int(fl, optarg, 1, MAX_ITER, &o->iterations, err, errlen);
            break;
        case OPT_ROUNDS:
            r = cli_parse_int(fl, optarg, 1, MAX_ROUNDS, &o->rounds, err, errlen);
            break;
        case OPT_THREADS: r = cli_parse_int(fl, optarg, 1, 4096, &o->threads, err, errlen); break;
        case OPT_BACKEND: r = cli_parse_backend(fl, optarg, &o->backend, err, errlen); break;
        case OPT_MODEL: r = cli_parse_path(fl, optarg, &o->model_path, err, errlen); break;
        case OPT_CONFIG: r = cli_parse_path(fl, optarg, &o->config_path, err, errlen); break;
        case 'o': r = cli_parse_path(fl, optarg, &o->output_path, err, errlen); break;
        case 'q': o->quiet = 1; break;
        case OPT_PROFILE: o->profile = 1; break;
        case 'h': o->help = 1; break;
        default: return cli_getopt_error(c, argc, argv, g_long_opts, err, errlen);
        }
        if (r) return -1;
    }
    if (cli_getopt_leftover(argc, argv, err, errlen)) return -1;
    /* Every timed step's times are kept: bound the samples, not each flag. */
    if ((long long)o->rounds * o->iterations > MAX_ITER)
        return cli_arg_error(err, errlen, "--rounds",
                             "%d rounds of %d --iterations exceed %d timed steps", o->rounds,
                             o->iterations, MAX_ITER);
    if (o->hidden_size && o->num_heads && o->hidden_size % o->num_heads)
        return cli_arg_error(err, errlen, "--hidden-size", "%d is not divisible by --num-heads %d",
                             o->hidden_size, o->num_heads);
    return 0;
}

int cli_bench_check_config(const cli_bench_opts *o, const hrmt_model_config *cfg, int from_file,
                           char *err, size_t errlen) {
    if (cfg->num_heads <= 0 || cfg->hidden_size % cfg->num_heads) {
        const char *fl = o->num_heads && !o->hidden_size ? "--num-heads" : "--hidden-size";
        return cli_arg_error(err, errlen, fl, "hidden size %d is not divisible by %d heads",
                             cfg->hidden_size, cfg->num_heads);
    }
    if (from_file && o->seq_lens_given)
        for (size_t i = 0; i < o->n_seq; i++)
            if (o->seq_lens[i] != cfg->seq_len)
                return cli_arg_error(err, errlen, "--seq-lens",
                                     "%d differs from the model's seq_len %d (a model file "
                                     "fixes its sequence length; omit --seq-lens or pass %d)",
                                     o->seq_lens[i], cfg->seq_len, cfg->seq_len);
    return 0;
}
