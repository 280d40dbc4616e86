/* Rank hooks over MPI, and stderr forwarding to rank 0 (see mpi_ranks.h). */
#define _POSIX_C_SOURCE 200809L /* dup, fdopen, pread */
#include "cli/mpi_ranks.h"

#include <limits.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

/* Bytes of one rank's stderr forwarded per agreement point: messages are
 * lines; the cap keeps rank 0's buffer at size x 8 KiB. */
#define TEXT_MAX 8192

/* Captured bytes not forwarded yet. */
static long pending(const mpi_ranks *m) {
    struct stat st;
    if (!m->cap || fstat(fileno(m->cap), &st) != 0) return 0;
    return (long)st.st_size - m->cap_done;
}

/* Moves up to TEXT_MAX new captured bytes into m->text; returns the count. */
static int take_text(mpi_ranks *m) {
    long n = pending(m);
    if (n <= 0 || !m->text) return 0;
    size_t want = n > TEXT_MAX ? TEXT_MAX : (size_t)n;
    ssize_t got = pread(fileno(m->cap), m->text, want, (off_t)m->cap_done);
    m->cap_done += n; /* beyond TEXT_MAX is dropped, said below */
    if (got <= 0) return 0;
    if (n > TEXT_MAX) {
        static const char cut[] = "\n[... cut]\n";
        memcpy(m->text + TEXT_MAX - (sizeof cut - 1), cut, sizeof cut - 1);
    }
    return (int)got;
}

const char *mpi_ranks_host(const mpi_ranks *m, int rank) {
    if (!m->hosts) return "?";
    if (m->rank != 0) rank = 0;
    return m->hosts + (size_t)rank * MPI_RANKS_HOST_LEN;
}

/* Each line of text, prefixed with the rank and host; rank 0's as it is. */
static void print_text(const mpi_ranks *m, int rank, const char *text, int len) {
    while (len > 0) {
        const char *nl = memchr(text, '\n', (size_t)len);
        int n = nl ? (int)(nl - text) + 1 : len;
        if (rank != 0) fprintf(m->err, "hrmt-mpi: rank %d (%s): ", rank, mpi_ranks_host(m, rank));
        fwrite(text, 1, (size_t)n, m->err);
        if (!nl) fputc('\n', m->err);
        text += n;
        len -= n;
    }
}

/* Collective: every rank's new text to rank 0, printed once per distinct
 * text in rank order. */
static void forward(mpi_ranks *m) {
    int len = take_text(m);
    MPI_Gather(&len, 1, MPI_INT, m->counts, 1, MPI_INT, 0, m->comm);
    char *all = NULL;
    if (m->rank == 0) {
        size_t total = 0;
        for (int k = 0; k < m->size; k++) {
            m->displs[k] = (int)total;
            total += (size_t)m->counts[k];
        }
        all = malloc(total ? total : 1);
        if (!all) {
            fprintf(m->err, "hrmt-mpi: out of memory collecting the ranks' messages\n");
            fflush(m->err);
            MPI_Abort(m->comm, 1);
            return;
        }
    }
    MPI_Gatherv(m->text, len, MPI_CHAR, all, m->counts, m->displs, MPI_CHAR, 0, m->comm);
    if (m->rank != 0) return;
    for (int k = 0; k < m->size; k++) {
        const char *t = all + m->displs[k];
        int n = m->counts[k], seen = 0;
        for (int j = 0; j < k && !seen && n > 0; j++)
            seen = m->counts[j] == n && memcmp(all + m->displs[j], t, (size_t)n) == 0;
        if (!seen) print_text(m, k, t, n);
    }
    fflush(m->err);
    free(all);
}

int mpi_ranks_agree(mpi_ranks *m, int rc) {
    int in[2] = {rc, pending(m) > 0}, out[2] = {0, 0};
    MPI_Allreduce(in, out, 2, MPI_INT, MPI_MAX, m->comm);
    if (out[1]) forward(m);
    m->last_agreed = out[0];
    return out[0];
}

static int agree_hook(void *u, int rc) { return mpi_ranks_agree(u, rc); }

static int bcast_hook(void *u, void *buf, size_t bytes) {
    const mpi_ranks *m = u;
    char *p = buf;
    while (bytes > 0) { /* MPI counts are int */
        int n = bytes > (size_t)INT_MAX ? INT_MAX : (int)bytes;
        MPI_Bcast(p, n, MPI_BYTE, 0, m->comm);
        p += n;
        bytes -= (size_t)n;
    }
    return 0;
}

static int gather_rows_hook(void *u, void *data, size_t row_bytes, int n) {
    mpi_ranks *m = u;
    if (row_bytes == 0 || row_bytes > (size_t)INT_MAX) return -1; /* the same on every rank */
    MPI_Datatype row;
    MPI_Type_contiguous((int)row_bytes, MPI_BYTE, &row);
    MPI_Type_commit(&row);
    for (int k = 0; k < m->size; k++) {
        int b = 0, e = 0;
        cli_ranks_shard(n, k, m->size, &b, &e);
        m->displs[k] = b;
        m->counts[k] = e - b;
    }
    if (m->rank == 0)
        MPI_Gatherv(MPI_IN_PLACE, 0, row, data, m->counts, m->displs, row, 0, m->comm);
    else
        MPI_Gatherv(data, m->counts[m->rank], row, NULL, NULL, NULL, row, 0, m->comm);
    MPI_Type_free(&row);
    return 0;
}

static double max_hook(void *u, double v) {
    const mpi_ranks *m = u;
    double out = v;
    MPI_Allreduce(&v, &out, 1, MPI_DOUBLE, MPI_MAX, m->comm);
    return out;
}

/* fd 2 into a temporary file; m->err keeps the real stderr. Without a
 * temporary file the ranks write to stderr directly, as plain programs do. */
static void capture_stderr(mpi_ranks *m) {
    m->err = stderr;
    FILE *cap = tmpfile();
    int real = cap ? dup(2) : -1;
    FILE *err = real >= 0 ? fdopen(real, "w") : NULL;
    if (!err || dup2(fileno(cap), 2) < 0) {
        if (err)
            fclose(err);
        else if (real >= 0)
            close(real);
        if (cap) fclose(cap);
        return;
    }
    m->err = err;
    m->cap = cap;
}

int mpi_ranks_init(mpi_ranks *m, MPI_Comm comm) {
    memset(m, 0, sizeof *m);
    m->comm = comm;
    MPI_Comm_rank(comm, &m->rank);
    MPI_Comm_size(comm, &m->size);
    m->hooks =
        (cli_ranks){m, m->rank, m->size, agree_hook, bcast_hook, gather_rows_hook, max_hook, NULL};
    m->err = stderr;
    char name[MPI_MAX_PROCESSOR_NAME] = "";
    int len = 0;
    MPI_Get_processor_name(name, &len);
    char host[MPI_RANKS_HOST_LEN] = "";
    memcpy(host, name, strnlen(name, sizeof host - 1)); /* cut, NUL-terminated */
    size_t hosts = m->rank == 0 ? (size_t)m->size : 1;
    m->hosts = calloc(hosts, MPI_RANKS_HOST_LEN);
    m->counts = calloc((size_t)m->size, sizeof *m->counts);
    m->displs = calloc((size_t)m->size, sizeof *m->displs);
    m->text = malloc(TEXT_MAX);
    int bad = !m->hosts || !m->counts || !m->displs || !m->text, any = 0;
    MPI_Allreduce(&bad, &any, 1, MPI_INT, MPI_MAX, comm);
    if (any || bad) { /* any >= bad: `|| bad` only informs the analyzer */
        if (bad) fprintf(stderr, "hrmt-mpi: rank %d: out of memory at start\n", m->rank);
        mpi_ranks_finish(m);
        return -1;
    }
    const int root = m->rank == 0; /* a local: the analyzer cannot see MPI leave m alone */
    if (root)
        MPI_Gather(host, MPI_RANKS_HOST_LEN, MPI_CHAR, m->hosts, MPI_RANKS_HOST_LEN, MPI_CHAR, 0,
                   comm);
    else
        MPI_Gather(host, MPI_RANKS_HOST_LEN, MPI_CHAR, NULL, 0, MPI_CHAR, 0, comm);
    if (!root && m->hosts) memcpy(m->hosts, host, sizeof host);
    capture_stderr(m);
    return 0;
}

void mpi_ranks_flush_own(mpi_ranks *m) {
    int n = take_text(m);
    if (n > 0) print_text(m, m->rank, m->text, n);
    fflush(m->err);
}

void mpi_ranks_finish(mpi_ranks *m) {
    if (m->cap) {
        mpi_ranks_flush_own(m); /* whatever came after the last agreement */
        fflush(stderr);
        dup2(fileno(m->err), 2);
        fclose(m->err);
        fclose(m->cap);
    }
    free(m->hosts);
    free(m->counts);
    free(m->displs);
    free(m->text);
    memset(m, 0, sizeof *m);
}
