/* An outside program built against the INSTALLED hrmt (see tests/test_install.c):
 * creates a context, uses the tier manager and one op, and prints one line
 * that the test compares with what the library reports in-process. */
#include <hrmt.h>
#include <stdio.h>
#include <string.h>

int main(void) {
    hrmt_context *ctx = NULL;
    char err[256] = "";
    hrmt_status s = hrmt_context_create(NULL, &ctx, err, sizeof err);
    if (s != HRMT_OK) {
        fprintf(stderr, "consumer: context: %s: %s\n", hrmt_status_str(s), err);
        return 1;
    }
    char *json = NULL;
    s = hrmt_tiers_stats_json(hrmt_context_tiers(ctx), &json);
    int json_ok = s == HRMT_OK && json && json[0] == '{';
    hrmt_free(json);

    float src[8] = {1, 2, 3, 4, 5, 6, 7, 8}, dst[8] = {0};
    size_t shape[2] = {2, 4};
    hrmt_tensor x, y;
    int copy_ok = hrmt_tensor_init(&x, src, HRMT_F32, 2, shape) == HRMT_OK &&
                  hrmt_tensor_init(&y, dst, HRMT_F32, 2, shape) == HRMT_OK &&
                  hrmt_copy(ctx, &x, &y) == HRMT_OK && memcmp(src, dst, sizeof src) == 0;

    printf("isa=%s l1d=%zu version=%d.%d.%d json=%s copy=%s\n",
           hrmt_isa_name(hrmt_context_isa(ctx)), hrmt_context_topology(ctx)->caches[0].size_bytes,
           HRMT_VERSION_MAJOR, HRMT_VERSION_MINOR, HRMT_VERSION_PATCH, json_ok ? "ok" : "bad",
           copy_ok ? "ok" : "bad");
    hrmt_context_destroy(ctx);
    return json_ok && copy_ok ? 0 : 1;
}
