/* `hrmt run` option parsing (see run_opts.h). */
#define _GNU_SOURCE /* getopt_long */
#include "cli/run_opts.h"

#include <getopt.h>
#include <string.h>

#include "cli/args.h"
#include "cli/opt_error.h"
#include "cli/run_input.h"

enum {
    OPT_MODEL = 256,
    OPT_CONFIG,
    OPT_PUZZLES,
    OPT_TOKENS,
    OPT_PUZZLE_ID,
    OPT_STEPS,
    OPT_DTYPE,
    OPT_SCHEDULE,
    OPT_THREADS,
    OPT_JSON,
    OPT_DUMP,
    OPT_EARLY_HALT,
    OPT_BACKEND,
    OPT_MAX_LINE,
    OPT_NAN_OK,
};

static const struct option g_opts[] = {{"model", required_argument, NULL, OPT_MODEL},
                                       {"config", required_argument, NULL, OPT_CONFIG},
                                       {"puzzles", required_argument, NULL, OPT_PUZZLES},
                                       {"tokens", required_argument, NULL, OPT_TOKENS},
                                       {"puzzle-id", required_argument, NULL, OPT_PUZZLE_ID},
                                       {"steps", required_argument, NULL, OPT_STEPS},
                                       {"dtype", required_argument, NULL, OPT_DTYPE},
                                       {"schedule", required_argument, NULL, OPT_SCHEDULE},
                                       {"threads", required_argument, NULL, OPT_THREADS},
                                       {"json", no_argument, NULL, OPT_JSON},
                                       {"dump", required_argument, NULL, OPT_DUMP},
                                       {"early-halt", no_argument, NULL, OPT_EARLY_HALT},
                                       {"backend", required_argument, NULL, OPT_BACKEND},
                                       {"max-line-bytes", required_argument, NULL, OPT_MAX_LINE},
                                       {"allow-nonfinite-weights", no_argument, NULL, OPT_NAN_OK},
                                       {"quiet", no_argument, NULL, 'q'},
                                       {"help", no_argument, NULL, 'h'},
                                       {NULL, 0, NULL, 0}};

void cli_run_usage(FILE *f) {
    fprintf(f,
            "usage: hrmt run (--puzzles FILE | --tokens FILE) [options]\n"
            "Runs the HRM ACT loop on a batch read from FILE and prints each sample's\n"
            "prediction (argmax of the logits after the last step) and q logits.\n"
            "  --puzzles FILE      Sudoku puzzles, one per line: 81 characters, '.' or '0' for a\n"
            "                      blank, '1'..'9' (tokens 1 and 2..10)\n"
            "  --tokens FILE       raw token ids, seq_len integers per line (maze, ARC, ...)\n"
            "  --model FILE        model.safetensors (default: the built-in Sudoku-sized model\n"
            "                      with deterministic random weights)\n"
            "  --config FILE       architecture JSON (an `arch` object); default: the model\n"
            "                      file's __metadata__\n"
            "  --puzzle-id N       puzzle identifier of every sample (default 0)\n"
            "  --steps N           ACT calls to run (default: halt_max_steps)\n"
            "  --dtype bf16|f32    forward dtype (default: the config's)\n"
            "  --schedule tiered|baseline   (default tiered; both give identical outputs)\n"
            "  --threads N         OpenMP threads (default: all)\n"
            "  --backend cpu|cuda  compute backend (default: HRMT_BACKEND, else cpu)\n"
            "  --early-halt        opt-in training-time rule: also halt when q_halt > q_continue\n"
            "                      (the reference's eval mode runs every sample halt_max_steps)\n"
            "  --max-line-bytes SIZE  longest input line accepted (default 1M, at most 1G;\n"
            "                      K/M/G suffixes)\n"
            "  --allow-nonfinite-weights  load a --model whose weights hold NaN or Inf\n"
            "                      (refused by default: the outputs would be NaN)\n"
            "  --json              machine-readable output\n"
            "  --dump FILE         write inputs, puzzle_identifiers and step{k}.{logits,\n"
            "                      q_halt_logits,q_continue_logits,z_H,z_L,halted} (safetensors)\n"
            "  --quiet             no progress bar (it is drawn only when stderr is a terminal)\n"
            "  -h, --help          this text\n");
}

int cli_run_opts_parse(int argc, char **argv, cli_run_opts *o, char *err, size_t errlen) {
    memset(o, 0, sizeof *o);
    o->dtype = -1;
    o->schedule = HRMT_SCHEDULE_TIERED;
    if (cli_backend_default(&o->backend, err, errlen)) return -1;
    cli_getopt_reset();
    static const char *const dtypes[] = {"bf16", "f32"};
    static const char *const scheds[] = {"tiered", "baseline"};
    char fb[64];
    for (;;) {
        int c = getopt_long(argc, argv, ":qh", g_opts, NULL);
        if (c == -1) break;
        const char *fl = cli_flag_name(g_opts, c, fb, sizeof fb);
        int r = 0, v = 0;
        switch (c) {
        case OPT_MODEL: r = cli_parse_path(fl, optarg, &o->model_path, err, errlen); break;
        case OPT_CONFIG: r = cli_parse_path(fl, optarg, &o->config_path, err, errlen); break;
        case OPT_PUZZLES: r = cli_parse_path(fl, optarg, &o->puzzles_path, err, errlen); break;
        case OPT_TOKENS: r = cli_parse_path(fl, optarg, &o->tokens_path, err, errlen); break;
        case OPT_DUMP: r = cli_parse_path(fl, optarg, &o->dump_path, err, errlen); break;
        case OPT_PUZZLE_ID:
            r = cli_parse_int(fl, optarg, 0, 2147483647L, &o->puzzle_id, err, errlen);
            break;
        case OPT_STEPS: r = cli_parse_int(fl, optarg, 1, 1000000, &o->steps, err, errlen); break;
        case OPT_THREADS: r = cli_parse_int(fl, optarg, 1, 4096, &o->threads, err, errlen); break;
        case OPT_BACKEND: r = cli_parse_backend(fl, optarg, &o->backend, err, errlen); break;
        case OPT_DTYPE:
            r = cli_parse_choice(fl, optarg, dtypes, 2, &v, err, errlen);
            o->dtype = v == 0 ? HRMT_BF16 : HRMT_F32;
            break;
        case OPT_SCHEDULE:
            r = cli_parse_choice(fl, optarg, scheds, 2, &v, err, errlen);
            o->schedule = v == 0 ? HRMT_SCHEDULE_TIERED : HRMT_SCHEDULE_BASELINE;
            break;
        case OPT_MAX_LINE:
            r = cli_parse_bytes(fl, optarg, 128, CLI_RUN_MAX_LINE_LIMIT, &o->max_line, err, errlen);
            break;
        case OPT_JSON: o->json = 1; break;
        case 'q': o->quiet = 1; break;
        case OPT_EARLY_HALT: o->early_halt = 1; break;
        case OPT_NAN_OK: o->load_flags |= HRMT_LOAD_ALLOW_NONFINITE; break;
        case 'h': o->help = 1; break;
        default: return cli_getopt_error(c, argc, argv, g_opts, err, errlen);
        }
        if (r) return -1;
    }
    if (cli_getopt_leftover(argc, argv, err, errlen)) return -1;
    if (o->help) return 0;
    if (o->puzzles_path && o->tokens_path)
        return cli_arg_error(err, errlen, "--tokens",
                             "give either --puzzles or --tokens, not both");
    if (!o->puzzles_path && !o->tokens_path)
        return cli_arg_error(err, errlen, "--puzzles",
                             "an input file is required (--puzzles or --tokens)");
    return 0;
}
