/* `hrmt probe` option parsing (see probe_opts.h). */
#define _GNU_SOURCE /* getopt_long */
#include "cli/probe_opts.h"

#include <getopt.h>
#include <string.h>

#include "cli/args.h"
#include "cli/opt_error.h"
#include "core/text_escape.h"

#define KIB ((size_t)1 << 10)
#define GIB ((size_t)1 << 30)
#define MAX_PROBE_BYTES (64 * GIB)

void cli_probe_opts_default(cli_probe_opts *o) {
    memset(o, 0, sizeof *o);
    o->min_bytes = 4 * KIB;
    o->max_bytes = GIB;
    o->backend = HRMT_BACKEND_CPU;
}

void cli_probe_usage(FILE *f) {
    fprintf(f,
            "usage: hrmt probe [options]\n"
            "Maps the memory tiers: pointer-chase latency and read/write/copy bandwidth over\n"
            "working sets from 4 KiB to 1 GiB, with the detected cache levels marked.\n"
            "\n"
            "  --min-bytes SIZE        smallest working set (default 4K; K/M/G suffixes)\n"
            "  --max-bytes SIZE        largest working set (default 1G, or main memory's point\n"
            "                          when larger; with --quick main memory's point)\n"
            "  --quick                 every second power of two, up to main memory's point\n"
            "  --json                  print JSON instead of the table\n"
            "  --plot FILE.svg|.png    draw latency and bandwidth with gnuplot\n"
            "  --compare               CPU tiers beside GPU tiers (SMEM, L1, L2, HBM): latency,\n"
            "                          read bandwidth, capacity; with --plot both devices' curves\n"
            "  --backend cpu|cuda      device to probe (default cpu); cuda: tiers SMEM, L1, L2,\n"
            "                          HBM, the sweep up to HBM's point (16x L2, >= 256M)\n"
            "  --threads N             OpenMP threads for the bandwidth probe\n"
            "  --input FILE.json       print / --plot a saved --json output (plain or --compare)\n"
            "                          instead of measuring (e.g. a GPU machine's run)\n"
            "  --quiet                 no progress bar\n"
            "  --help                  this text\n");
}

enum {
    OPT_MIN = 256,
    OPT_MAX,
    OPT_QUICK,
    OPT_JSON,
    OPT_PLOT,
    OPT_COMPARE,
    OPT_BACKEND,
    OPT_THREADS,
    OPT_INPUT
};

static const struct option g_long_opts[] = {{"min-bytes", required_argument, NULL, OPT_MIN},
                                            {"max-bytes", required_argument, NULL, OPT_MAX},
                                            {"quick", no_argument, NULL, OPT_QUICK},
                                            {"json", no_argument, NULL, OPT_JSON},
                                            {"plot", required_argument, NULL, OPT_PLOT},
                                            {"compare", no_argument, NULL, OPT_COMPARE},
                                            {"backend", required_argument, NULL, OPT_BACKEND},
                                            {"threads", required_argument, NULL, OPT_THREADS},
                                            {"input", required_argument, NULL, OPT_INPUT},
                                            {"quiet", no_argument, NULL, 'q'},
                                            {"help", no_argument, NULL, 'h'},
                                            {NULL, 0, NULL, 0}};

static int ends_with(const char *s, const char *suffix) {
    size_t n = strlen(s), m = strlen(suffix);
    return n > m && !strcmp(s + n - m, suffix);
}

int cli_probe_opts_parse(int argc, char **argv, cli_probe_opts *o, char *err, size_t errlen) {
    static const char *const backends[] = {"cpu", "cuda"};
    cli_probe_opts_default(o);
    int min_given = 0;
    cli_getopt_reset();
    char fb[64], e[HRMT_ESCAPED_MAX];
    for (;;) {
        int c = getopt_long(argc, argv, ":qh", g_long_opts, NULL);
        if (c == -1) break;
        const char *fl = cli_flag_name(g_long_opts, c, fb, sizeof fb);
        int r = 0, v = 0;
        switch (c) {
        case OPT_MIN:
            r = cli_parse_bytes(fl, optarg, 64, MAX_PROBE_BYTES, &o->min_bytes, err, errlen);
            min_given = 1;
            break;
        case OPT_MAX:
            r = cli_parse_bytes(fl, optarg, 64, MAX_PROBE_BYTES, &o->max_bytes, err, errlen);
            o->max_given = 1;
            break;
        case OPT_QUICK: o->quick = 1; break;
        case OPT_JSON: o->json = 1; break;
        case OPT_COMPARE: o->compare = 1; break;
        case OPT_PLOT:
            o->plot_path = optarg;
            if (ends_with(optarg, ".svg"))
                o->plot_format = CLI_PLOT_SVG;
            else if (ends_with(optarg, ".png"))
                o->plot_format = CLI_PLOT_PNG;
            else
                return cli_arg_error(err, errlen, fl, "'%s' must end in .svg or .png",
                                     hrmt_text_escape_str(e, sizeof e, optarg));
            break;
        case OPT_BACKEND:
            r = cli_parse_choice(fl, optarg, backends, 2, &v, err, errlen);
            o->backend = v ? HRMT_BACKEND_CUDA : HRMT_BACKEND_CPU;
            break;
        case OPT_THREADS: r = cli_parse_int(fl, optarg, 1, 4096, &o->threads, err, errlen); break;
        case OPT_INPUT: o->input = optarg; break;
        case 'q': o->quiet = 1; break;
        case 'h': o->help = 1; break;
        default: return cli_getopt_error(c, argc, argv, g_long_opts, err, errlen);
        }
        if (r) return -1;
    }
    if (cli_getopt_leftover(argc, argv, err, errlen)) return -1;
    if (o->quick && !o->max_given) o->max_bytes = GIB / 4;
    if (o->min_bytes > o->max_bytes)
        return cli_arg_error(err, errlen, min_given ? "--min-bytes" : "--max-bytes",
                             "minimum %zu exceeds maximum %zu bytes", o->min_bytes, o->max_bytes);
    return 0;
}
