/* Fuzz target: the safetensors reader (hrmt_st_open on a file, as the model
 * loader opens --model), checked against the in-memory reader and against
 * the format's own invariants on every accepted input. */
#include <stdlib.h>
#include <string.h>

#include "core/safetensors.h"
#include "fuzz_common.h"

static int by_begin(const void *a, const void *b) {
    const hrmt_st_tensor *x = *(const hrmt_st_tensor *const *)a;
    const hrmt_st_tensor *y = *(const hrmt_st_tensor *const *)b;
    return (x->begin > y->begin) - (x->begin < y->begin);
}

/* Everything the header promises, recomputed from the tensors themselves. */
static void check_accepted(const hrmt_st_file *f, const uint8_t *data, size_t size) {
    uint64_t hlen = 0;
    for (int i = 7; i >= 0; i--) hlen = (hlen << 8) | data[i];
    if (size < 8 || hlen > size - 8) fuzz_fail("safetensors", "accepted a header past the file");
    size_t data_len = size - 8 - (size_t)hlen;
    size_t n = hrmt_st_count(f);
    const hrmt_st_tensor **order = malloc((n ? n : 1) * sizeof *order);
    float *vals = malloc(size * sizeof *vals + sizeof *vals);
    if (!order || !vals) abort();
    for (size_t i = 0; i < n; i++) {
        const hrmt_st_tensor *t = hrmt_st_at(f, i);
        if (!t || !t->name) fuzz_fail("safetensors", "hrmt_st_at gave no tensor");
        if (t->ndim < 0 || t->ndim > HRMT_ST_MAX_DIMS)
            fuzz_fail("safetensors", "ndim out of range");
        size_t numel = 1;
        for (int d = 0; d < t->ndim; d++) numel *= t->shape[d];
        if (numel != t->numel || t->numel * hrmt_dtype_size(t->dtype) != t->nbytes)
            fuzz_fail("safetensors", "numel or nbytes disagree with the shape");
        if (t->begin > t->end || t->end - t->begin != t->nbytes || t->end > data_len)
            fuzz_fail("safetensors", "accepted a range outside the data section");
        if (hrmt_st_find(f, t->name) != t) fuzz_fail("safetensors", "duplicate tensor name");
        /* Touches every byte of the tensor: a wrong pointer faults here. */
        hrmt_st_read_f32(NULL, NULL, t, vals);
        order[i] = t;
    }
    qsort(order, n, sizeof *order, by_begin);
    size_t max_end = 0;
    for (size_t i = 0; i < n; i++) {
        if (order[i]->nbytes > 0 && order[i]->begin < max_end)
            fuzz_fail("safetensors", "accepted overlapping tensors");
        if (order[i]->end > max_end) max_end = order[i]->end;
    }
    (void)hrmt_st_metadata(f, "arch");
    free(vals);
    free(order);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
    hrmt_context *ctx = fuzz_context();
    hrmt_st_file *f = NULL;
    hrmt_status s = hrmt_st_open(ctx, fuzz_input_path(data, size), &f);
    if (s == HRMT_OK) {
        check_accepted(f, data, size);
        hrmt_st_close(f);
    } else {
        if (f) fuzz_fail("safetensors", "a failed open returned a handle");
        fuzz_check_error("safetensors", ctx);
    }
    /* The in-memory reader validates the same image the same way. */
    hrmt_st_file *g = NULL;
    hrmt_status sm = hrmt_st_open_memory(ctx, size ? data : NULL, size, &g);
    if ((sm == HRMT_OK) != (s == HRMT_OK))
        fuzz_fail("safetensors", "hrmt_st_open and hrmt_st_open_memory disagree");
    hrmt_st_close(g);
    return 0;
}
