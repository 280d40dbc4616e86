/* Fuzz target: the safetensors reader, in its three forms: hrmt_st_open_lazy
 * (the header, tensors read on demand with pread: what the model loader
 * uses), hrmt_st_open (the whole file) and hrmt_st_open_memory. They must
 * agree, every accepted header must keep the format's invariants, and every
 * tensor read must equal its bytes decoded here independently. */
#include <stdlib.h>
#include <string.h>

#include "core/safetensors.h"
#include "fuzz_common.h"

static int by_begin(const void *a, const void *b) {
    const hrmt_st_tensor *x = *(const hrmt_st_tensor *const *)a;
    const hrmt_st_tensor *y = *(const hrmt_st_tensor *const *)b;
    return (x->begin > y->begin) - (x->begin < y->begin);
}

/* Element i of a tensor whose bytes start at p, as the format defines it. */
static float decode(hrmt_dtype dt, const uint8_t *p, size_t i) {
    float v;
    if (dt == HRMT_BF16) {
        uint32_t u = (uint32_t)p[2 * i] << 16 | (uint32_t)p[2 * i + 1] << 24;
        memcpy(&v, &u, 4);
    } else if (dt == HRMT_F32) {
        uint32_t u = (uint32_t)p[4 * i] | (uint32_t)p[4 * i + 1] << 8 |
                     (uint32_t)p[4 * i + 2] << 16 | (uint32_t)p[4 * i + 3] << 24;
        memcpy(&v, &u, 4);
    } else {
        uint32_t u = (uint32_t)p[4 * i] | (uint32_t)p[4 * i + 1] << 8 |
                     (uint32_t)p[4 * i + 2] << 16 | (uint32_t)p[4 * i + 3] << 24;
        int32_t s;
        memcpy(&s, &u, 4);
        v = (float)s;
    }
    return v;
}

/* Everything the header promises, recomputed from the tensors and the bytes. */
static void check_accepted(hrmt_context *ctx, const hrmt_st_file *f, const uint8_t *data,
                           size_t size) {
    uint64_t hlen = 0;
    for (int i = 7; i >= 0; i--) hlen = (hlen << 8) | data[i];
    if (size < 8 || hlen > size - 8) fuzz_fail("safetensors", "accepted a header past the file");
    const uint8_t *section = data + 8 + hlen;
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
        if (hrmt_st_read_f32(ctx, f, t, vals) != HRMT_OK)
            fuzz_fail("safetensors", "reading an accepted tensor of an unchanged file failed");
        for (size_t k = 0; k < t->numel; k++) {
            float want = decode(t->dtype, section + t->begin, k);
            if (memcmp(&want, &vals[k], sizeof want) != 0)
                fuzz_fail("safetensors", "a value read differs from the file's bytes");
        }
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
    const char *path = fuzz_input_path(data, size);
    hrmt_st_file *f = NULL;
    hrmt_status s = hrmt_st_open_lazy(ctx, path, &f);
    if (s == HRMT_OK) {
        check_accepted(ctx, f, data, size);
        hrmt_st_close(f);
    } else {
        if (f) fuzz_fail("safetensors", "a failed open returned a handle");
        fuzz_check_error("safetensors", ctx);
    }
    /* The whole-file and in-memory readers validate the same bytes alike. */
    hrmt_st_file *g = NULL;
    hrmt_status sf = hrmt_st_open(ctx, path, &g);
    if (sf != s) fuzz_fail("safetensors", "hrmt_st_open_lazy and hrmt_st_open disagree");
    if (sf == HRMT_OK) check_accepted(ctx, g, data, size);
    hrmt_st_close(g);
    g = NULL;
    hrmt_status sm = hrmt_st_open_memory(ctx, size ? data : NULL, size, &g);
    if (sm != s) fuzz_fail("safetensors", "hrmt_st_open_lazy and hrmt_st_open_memory disagree");
    hrmt_st_close(g);
    return 0;
}
