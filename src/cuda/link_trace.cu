/* Host side of the link trace (link_trace.cuh; a development aid, compiled
 * only with -DHRMT_CUDA_LINK_TRACE=ON): the translation units' setters, the
 * device buffer, and each step's records written to
 * HRMT_CUDA_LINK_TRACE_OUT (overwritten each step, so the file holds the
 * last one). Without the variable nothing is recorded. One buffer for the
 * process, on the device current at the first traced step, kept until the
 * process ends: a development aid for one model on one GPU. */
#ifdef HRMT_CUDA_LINK_TRACE
#include <stdio.h>
#include <stdlib.h>

#include "cuda/link_trace.cuh"
#include "cuda/model_internal.cuh"

namespace {
constexpr int MAX_UNITS = 128;
constexpr unsigned long long CAP = 1ull << 20;
lt_setter setters[MAX_UNITS];
int units;
lt_buf *buf; /* device */
} // namespace

int hrmt_cuda_link_trace_register(lt_setter f) {
    if (units < MAX_UNITS) setters[units++] = f;
    return units;
}

hrmt_status cu_link_trace_begin(hrmt_model *m) {
    if (!getenv("HRMT_CUDA_LINK_TRACE_OUT")) return HRMT_OK;
    cudaError_t e = cudaSuccess;
    if (!buf) {
        e = cudaMalloc(&buf, sizeof(lt_buf) + CAP * sizeof(lt_rec));
        for (int i = 0; i < units && e == cudaSuccess; i++) e = setters[i](buf);
        const unsigned long long cap = CAP;
        if (e == cudaSuccess) e = cudaMemcpy(&buf->cap, &cap, sizeof cap, cudaMemcpyHostToDevice);
        if (e != cudaSuccess) return cu_fail(m->ctx, e, "link trace: set-up");
    }
    e = cudaMemsetAsync(&buf->n, 0, sizeof buf->n, cu_stream(m));
    return e == cudaSuccess ? HRMT_OK : cu_fail(m->ctx, e, "link trace: reset");
}

/* After the step has finished (the caller synchronised). */
hrmt_status cu_link_trace_end(hrmt_model *m, size_t batch) {
    const char *path = getenv("HRMT_CUDA_LINK_TRACE_OUT");
    if (!path || !buf) return HRMT_OK;
    unsigned long long n = 0, seen = 0;
    cudaError_t e = cudaMemcpy(&seen, &buf->n, sizeof seen, cudaMemcpyDeviceToHost);
    n = seen > CAP ? CAP : seen;
    lt_rec *r = (lt_rec *)malloc((n ? n : 1) * sizeof *r);
    if (!r) return hrmt_fail(m->ctx, HRMT_ERR_OUT_OF_MEMORY, "link trace: %llu records", n);
    if (e == cudaSuccess) e = cudaMemcpy(r, buf->rec, n * sizeof *r, cudaMemcpyDeviceToHost);
    if (e != cudaSuccess) {
        free(r);
        return cu_fail(m->ctx, e, "link trace: download");
    }
    FILE *f = fopen(path, "w");
    if (f) {
        fprintf(f, "# batch %zu, %llu records (units %d)%s\n", batch, n, units,
                seen > n ? ", DROPPED past the buffer" : "");
        if (seen > n) fprintf(f, "# dropped %llu of %llu records\n", seen - n, seen);
        fprintf(f, "slot,t_call,t_pass,grid,block,smem,cta,thread");
        for (int p = 1; p <= LT_PHASES; p++) fprintf(f, ",ph%d", p);
        fputc('\n', f);
        for (unsigned long long i = 0; i < n; i++) {
            fprintf(f, "%llu,%llu,%llu,%u,%u,%u,%u,%u", i, r[i].t_call, r[i].t_pass, r[i].grid,
                    r[i].block, r[i].smem, r[i].cta_thread >> 10, r[i].cta_thread & 1023u);
            for (int p = 0; p < LT_PHASES; p++) fprintf(f, ",%llu", r[i].ph[p]);
            fputc('\n', f);
        }
        fclose(f);
    }
    free(r);
    return f ? HRMT_OK : hrmt_fail(m->ctx, HRMT_ERR_IO, "link trace: cannot write %s", path);
}
#endif
