/* Chart of a probe sweep through gnuplot (see probe_report.h). The data goes
 * inline as a gnuplot datablock, so no temporary files are needed. The
 * output file never appears in the script: hrmt opens it and gnuplot writes
 * the picture to its standard output, which is that file, so no path can be
 * read as gnuplot commands (or as `set output '|command'`). */
#define _POSIX_C_SOURCE 200809L /* posix_spawnp, sigaction, access */
#include <errno.h>
#include <fcntl.h>
#include <signal.h>
#include <spawn.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
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

/* Writes `s` as a gnuplot single-quoted label: quotes doubled, control
 * characters (a device name is the driver's text) turned into spaces. */
static void put_label(FILE *g, const char *s) {
    fputc('\'', g);
    for (; *s; s++) {
        const unsigned char ch = (unsigned char)*s;
        if (ch == '\'') fputc('\'', g);
        fputc(ch < 0x20 || ch == 0x7f ? ' ' : ch, g);
    }
    fputc('\'', g);
}

/* Dashed lines at the capacities of a result's caches inside [lo, hi]; labels
 * start with `prefix` ("" or "GPU "), at height `y` (graph fraction). */
static void mark_levels(FILE *g, const cli_probe_result *r, size_t lo, size_t hi,
                        const char *prefix, const char *color, double y) {
    for (size_t i = 0; i < r->n_tiers; i++) {
        const cli_probe_tier *t = &r->tiers[i];
        const size_t sz = t->size_bytes;
        if (t->level == 0 || t->shared || sz < lo || sz > hi) continue;
        char b[32], label[128];
        cli_format_bytes(sz, b, sizeof b);
        /* The tier name may come from an --input file: quoted like any label. */
        snprintf(label, sizeof label, "%s%s %s", prefix, t->name, b);
        fprintf(g, "set arrow from %zu, graph 0 to %zu, graph 1 nohead dashtype 2 lc rgb '%s'\n",
                sz, sz, color);
        fputs("set label ", g);
        put_label(g, label);
        fprintf(g, " at %zu, graph %.2f right offset -0.5,0 font ',10' textcolor rgb '%s'\n", sz, y,
                color);
    }
}

static void put_data(FILE *g, const char *name, const cli_probe_result *r) {
    fprintf(g, "$%s << EOD\n", name);
    for (size_t i = 0; i < r->n_points; i++) {
        const cli_probe_point *p = &r->points[i];
        fprintf(g, "%zu %.6g %.6g %.6g %.6g\n", p->bytes, p->ns, p->bw.read_gbps, p->bw.write_gbps,
                p->bw.copy_gbps);
    }
    fputs("EOD\n", g);
}

/* The GPU's shared-memory tier as one point at one block's shared memory
 * (it is outside the global-memory sweep); NULL when not measured. */
static const cli_probe_tier *smem_tier(const cli_probe_result *r) {
    for (size_t i = 0; r && i < r->n_tiers; i++)
        if (r->tiers[i].shared && r->tiers[i].measured) return &r->tiers[i];
    return NULL;
}

int cli_probe_plot_available(char *err, size_t errlen) {
    if (on_path("gnuplot")) return 0;
    snprintf(err, errlen,
             "gnuplot is not installed (not found on PATH); install it (Debian/Ubuntu: "
             "apt-get install gnuplot-nox) or use --json and plot the data yourself");
    return -1;
}

/* gnuplot with its standard input from a pipe (returned in *to) and its
 * standard output on out_fd. 0, or -1 with errno. */
static int spawn_gnuplot(int out_fd, pid_t *pid, FILE **to) {
    int p[2];
    if (pipe(p) != 0) return -1;
    /* Only the child's copies (fd 0 and 1) survive its exec. */
    (void)fcntl(p[1], F_SETFD, FD_CLOEXEC);
    (void)fcntl(p[0], F_SETFD, FD_CLOEXEC);
    posix_spawn_file_actions_t fa;
    int e = posix_spawn_file_actions_init(&fa);
    if (e == 0) {
        e = posix_spawn_file_actions_adddup2(&fa, p[0], STDIN_FILENO);
        if (e == 0) e = posix_spawn_file_actions_adddup2(&fa, out_fd, STDOUT_FILENO);
        char *argv[] = {"gnuplot", NULL};
        extern char **environ;
        if (e == 0) e = posix_spawnp(pid, "gnuplot", &fa, NULL, argv, environ);
        posix_spawn_file_actions_destroy(&fa);
    }
    close(p[0]);
    if (e != 0 || !(*to = fdopen(p[1], "w"))) {
        if (e == 0) {
            e = errno;
            close(p[1]);
            waitpid(*pid, NULL, 0);
        } else {
            close(p[1]);
        }
        errno = e;
        return -1;
    }
    return 0;
}

/* One chart for one result (cpu NULL) or for both devices side by side. */
static int plot(const cli_probe_result *one, const cli_probe_result *cpu,
                const cli_probe_result *gpu, const char *note, cli_output *out, cli_plot_format fmt,
                char *err, size_t errlen) {
    if (cli_probe_plot_available(err, errlen)) return -1;
    const cli_probe_result *first = one ? one : cpu;
    if (!first) {
        snprintf(err, errlen, "nothing to plot: no result");
        return -1;
    }
    if (first->n_points == 0 || (gpu && gpu->n_points == 0)) {
        snprintf(err, errlen, "nothing to plot: the sweep has no points");
        return -1;
    }
    size_t lo = first->points[0].bytes, hi = first->points[first->n_points - 1].bytes;
    if (gpu) {
        if (gpu->points[0].bytes < lo) lo = gpu->points[0].bytes;
        if (gpu->points[gpu->n_points - 1].bytes > hi) hi = gpu->points[gpu->n_points - 1].bytes;
    }
    const cli_probe_tier *sm = smem_tier(one ? one : gpu);
    FILE *picture = cli_output_begin(out, err, errlen);
    if (!picture) return -1;
    /* gnuplot quitting early must fail the plot, not kill hrmt with SIGPIPE. */
    struct sigaction ign, old;
    memset(&ign, 0, sizeof ign);
    ign.sa_handler = SIG_IGN;
    sigemptyset(&ign.sa_mask);
    sigaction(SIGPIPE, &ign, &old);
    pid_t pid = 0;
    FILE *g = NULL;
    if (spawn_gnuplot(fileno(picture), &pid, &g) != 0) {
        snprintf(err, errlen, "cannot start gnuplot: %s", strerror(errno));
        sigaction(SIGPIPE, &old, NULL);
        cli_output_end(out, picture, 0, NULL, 0);
        return -1;
    }
    put_data(g, "data", first);
    if (gpu) put_data(g, "gpu", gpu);
    if (sm)
        fprintf(g, "$smem << EOD\n%zu %.6g %.6g %.6g %.6g\nEOD\n", sm->probe_bytes, sm->ns,
                sm->bw.read_gbps, sm->bw.write_gbps, sm->bw.copy_gbps);
    if (fmt == CLI_PLOT_PNG)
        fputs("set terminal pngcairo size 1000,900 font 'sans,11'\n", g);
    else
        fputs("set terminal svg size 1000,900 dynamic background rgb 'white' font 'sans,12'\n", g);
    fputs("set output\n", g); /* standard output: the file hrmt opened */
    char title[320];
    if (gpu)
        snprintf(title, sizeof title, "hrmt probe: CPU vs GPU memory tiers (%s)",
                 gpu->device_name[0] ? gpu->device_name : "cuda");
    else if (one->device_name[0])
        snprintf(title, sizeof title, "hrmt probe: memory tiers (%s: %s)", one->device,
                 one->device_name);
    else if (note)
        snprintf(title, sizeof title, "hrmt probe: memory tiers (%s; GPU unavailable: %s)",
                 first->device, note);
    else
        snprintf(title, sizeof title, "hrmt probe: memory tiers (%s)", first->device);
    fputs("set multiplot layout 2,1 title ", g);
    put_label(g, title);
    fputs(
        "\nset logscale x 2\nset grid\nset key bottom right opaque box\n"
        "set xlabel 'working set (bytes)'\n",
        g);
    /* A margin on both sides keeps the end points and their tick labels inside. */
    fprintf(g, "set xrange [%.17g:%.17g]\n", (double)lo / 1.2, (double)hi * 1.2);
    set_xtics(g, lo, hi);
    if (gpu) {
        mark_levels(g, first, lo, hi, "CPU ", "gray40", 0.95);
        mark_levels(g, gpu, lo, hi, "GPU ", "web-green", 0.86);
    } else {
        mark_levels(g, first, lo, hi, "", "gray50", 0.95);
    }
    const char *pt = "with linespoints pt 7 ps 0.6 lw 2";
    fputs("set logscale y\nset ylabel 'latency (ns per dependent load)'\n", g);
    if (gpu) {
        fprintf(g,
                "set key top left opaque box\nplot $data using 1:2 %s title 'CPU latency', "
                "$gpu using 1:2 %s title 'GPU latency'",
                pt, pt);
    } else {
        fprintf(g, "plot $data using 1:2 %s title 'latency'", pt);
    }
    if (sm) fputs(", $smem using 1:2 with points pt 13 ps 1.6 title 'GPU shared memory'", g);
    fputs("\n", g);
    if (gpu) {
        /* Both devices on one axis: the GPU's rates are an order of magnitude
         * above the CPU's, so the bandwidth axis is logarithmic here. */
        fprintf(g,
                "set ylabel 'bandwidth (GB/s)'\nset key bottom left opaque box\n"
                "plot $data using 1:3 %s title 'CPU read', \\\n"
                "     $data using 1:5 with linespoints pt 9 ps 0.6 lw 2 dt 2 title 'CPU copy', \\\n"
                "     $gpu using 1:3 %s title 'GPU read', \\\n"
                "     $gpu using 1:5 with linespoints pt 9 ps 0.6 lw 2 dt 2 title 'GPU copy'",
                pt, pt);
    } else {
        fputs(
            "unset logscale y\nset yrange [0:*]\nset ylabel 'bandwidth (GB/s)'\n"
            "set key top right opaque box\n"
            "plot $data using 1:3 with linespoints pt 7 ps 0.6 lw 2 title 'read', \\\n"
            "     $data using 1:4 with linespoints pt 5 ps 0.6 lw 2 title 'write', \\\n"
            "     $data using 1:5 with linespoints pt 9 ps 0.6 lw 2 title 'copy'",
            g);
    }
    if (sm) fputs(", $smem using 1:3 with points pt 13 ps 1.6 title 'GPU shared memory read'", g);
    fputs("\nunset multiplot\nset output\n", g);
    int sent = fflush(g) == 0 && !ferror(g);
    fclose(g);
    int st = 0;
    while (waitpid(pid, &st, 0) < 0 && errno == EINTR) {
    }
    sigaction(SIGPIPE, &old, NULL);
    struct stat ps;
    int wrote = fstat(fileno(picture), &ps) == 0 && (!S_ISREG(ps.st_mode) || ps.st_size > 0);
    int ok = WIFEXITED(st) && WEXITSTATUS(st) == 0 && sent && wrote;
    if (!ok) {
        if (!WIFEXITED(st) || WEXITSTATUS(st) != 0)
            snprintf(err, errlen, "gnuplot failed (%s %d; its messages are above)",
                     WIFEXITED(st) ? "exit status" : "signal",
                     WIFEXITED(st) ? WEXITSTATUS(st) : WTERMSIG(st));
        else if (!sent)
            snprintf(err, errlen, "gnuplot stopped reading its script");
        else
            snprintf(err, errlen, "gnuplot wrote an empty picture");
    }
    if (cli_output_end(out, picture, ok, ok ? err : NULL, errlen) != 0) ok = 0;
    return ok ? 0 : -1;
}

int cli_probe_plot(const cli_probe_result *r, const hrmt_topology *topo, cli_output *out,
                   cli_plot_format fmt, char *err, size_t errlen) {
    (void)topo; /* the result carries its own tiers (either device) */
    return plot(r, NULL, NULL, NULL, out, fmt, err, errlen);
}

int cli_probe_plot_compare(const cli_probe_result *cpu, const cli_probe_result *gpu,
                           const char *gpu_note, cli_output *out, cli_plot_format fmt, char *err,
                           size_t errlen) {
    return plot(gpu ? NULL : cpu, gpu ? cpu : NULL, gpu, gpu_note, out, fmt, err, errlen);
}
