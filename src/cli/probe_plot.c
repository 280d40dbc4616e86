/* Chart of a probe sweep through gnuplot (see probe_report.h). The data goes
 * inline as a gnuplot datablock, so no temporary files are needed. */
#define _POSIX_C_SOURCE 200809L /* popen, access */
#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

#include "cli/probe_report.h"
#include "cli/table.h"

/* 1 when an executable `name` is on PATH (popen alone cannot tell: the shell
 * starts either way and only its exit status says "not found"). */
static int on_path(const char *name) {
    const char *path = getenv("PATH");
    if (!path || !*path) return 0;
    char buf[4096];
    for (const char *p = path;;) {
        const char *colon = strchr(p, ':');
        size_t len = colon ? (size_t)(colon - p) : strlen(p);
        int k = len ? snprintf(buf, sizeof buf, "%.*s/%s", (int)len, p, name)
                    : snprintf(buf, sizeof buf, "./%s", name); /* empty entry = cwd */
        if (k > 0 && (size_t)k < sizeof buf && access(buf, X_OK) == 0) return 1;
        if (!colon) return 0;
        p = colon + 1;
    }
}

/* Writes `s` as a gnuplot single-quoted string ('' stands for one quote). */
static void put_quoted(FILE *g, const char *s) {
    fputc('\'', g);
    for (; *s; s++) {
        if (*s == '\'') fputc('\'', g);
        fputc(*s, g);
    }
    fputc('\'', g);
}

/* Tick labels "4 KiB", "1 MiB" ... at powers of two (every second or fourth
 * one over wide ranges) instead of gnuplot's "4ki". */
static void set_xtics(FILE *g, size_t lo, size_t hi) {
    int n = 0;
    for (size_t p = 1; p && p <= hi; p <<= 1) n += p >= lo;
    int every = n > 20 ? 4 : n > 10 ? 2 : 1;
    fputs("set xtics (", g);
    int k = 0, first = 1;
    for (size_t p = 1; p && p <= hi; p <<= 1) {
        if (p < lo) continue;
        if (k++ % every) continue;
        char b[32];
        fprintf(g, "%s\"%s\" %zu", first ? "" : ", ", cli_format_bytes(p, b, sizeof b), p);
        first = 0;
    }
    fputs(")\n", g);
}

static void mark_levels(FILE *g, const hrmt_topology *topo, const cli_probe_result *r) {
    if (r->n_points == 0) return;
    size_t lo = r->points[0].bytes, hi = r->points[r->n_points - 1].bytes;
    for (int i = 0; i < topo->num_levels; i++) {
        size_t sz = topo->caches[i].size_bytes;
        if (sz < lo || sz > hi) continue;
        char b[32];
        cli_format_bytes(sz, b, sizeof b);
        fprintf(g,
                "set arrow from %zu, graph 0 to %zu, graph 1 nohead dashtype 2 lc rgb 'gray50'\n"
                "set label 'L%d %s' at %zu, graph 0.95 right offset -0.5,0 font ',10' "
                "textcolor rgb 'gray30'\n",
                sz, sz, topo->caches[i].level, b, sz);
    }
}

int cli_probe_plot(const cli_probe_result *r, const hrmt_topology *topo, const char *path,
                   cli_plot_format fmt, char *err, size_t errlen) {
    if (!on_path("gnuplot")) {
        snprintf(err, errlen,
                 "gnuplot is not installed (not found on PATH); install it (Debian/Ubuntu: "
                 "apt-get install gnuplot-nox) or use --json and plot the data yourself");
        return -1;
    }
    if (r->n_points == 0) {
        snprintf(err, errlen, "nothing to plot: the sweep has no points");
        return -1;
    }
    unlink(path); /* so the existence check below sees gnuplot's file, not an old one */
    /* A fixed command line; the user's path travels inside the script, quoted. */
    FILE *g = popen("gnuplot", "w"); /* NOLINT(cert-env33-c) */
    if (!g) {
        snprintf(err, errlen, "cannot start gnuplot: %s", strerror(errno));
        return -1;
    }
    fputs("$data << EOD\n", g);
    for (size_t i = 0; i < r->n_points; i++) {
        const cli_probe_point *p = &r->points[i];
        fprintf(g, "%zu %.6g %.6g %.6g %.6g\n", p->bytes, p->ns, p->bw.read_gbps, p->bw.write_gbps,
                p->bw.copy_gbps);
    }
    fputs("EOD\n", g);
    if (fmt == CLI_PLOT_PNG)
        fputs("set terminal pngcairo size 1000,900 font 'sans,11'\n", g);
    else
        fputs("set terminal svg size 1000,900 dynamic background rgb 'white' font 'sans,12'\n", g);
    fputs("set output ", g);
    put_quoted(g, path);
    fprintf(g,
            "\nset multiplot layout 2,1 title 'hrmt probe: memory tiers (%s)'\n"
            "set logscale x 2\nset grid\nset key bottom right opaque box\n"
            "set xlabel 'working set (bytes)'\n",
            r->device);
    /* A margin on both sides keeps the end points and their tick labels inside. */
    size_t lo = r->points[0].bytes, hi = r->points[r->n_points - 1].bytes;
    fprintf(g, "set xrange [%.17g:%.17g]\n", (double)lo / 1.2, (double)hi * 1.2);
    set_xtics(g, lo, hi);
    mark_levels(g, topo, r);
    fputs(
        "set logscale y\nset ylabel 'latency (ns per dependent load)'\n"
        "plot $data using 1:2 with linespoints pt 7 ps 0.6 lw 2 title 'latency'\n"
        "unset logscale y\nset yrange [0:*]\nset ylabel 'bandwidth (GB/s)'\n"
        "set key top right opaque box\n"
        "plot $data using 1:3 with linespoints pt 7 ps 0.6 lw 2 title 'read', \\\n"
        "     $data using 1:4 with linespoints pt 5 ps 0.6 lw 2 title 'write', \\\n"
        "     $data using 1:5 with linespoints pt 9 ps 0.6 lw 2 title 'copy'\n"
        "unset multiplot\nset output\n",
        g);
    int st = pclose(g);
    if (st == -1 || !WIFEXITED(st) || WEXITSTATUS(st) != 0) {
        snprintf(err, errlen, "gnuplot failed (exit status %d) writing '%s'",
                 st == -1        ? -1
                 : WIFEXITED(st) ? WEXITSTATUS(st)
                                 : 128,
                 path);
        return -1;
    }
    if (access(path, F_OK) != 0) {
        snprintf(err, errlen, "gnuplot did not create '%s'", path);
        return -1;
    }
    return 0;
}
