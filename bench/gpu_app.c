/* An outside program for bench/gpu.sh: built from the INSTALLED static
 * libhrmt.a with only `pkg-config --static --cflags --libs hrmt`, it creates a
 * CUDA context, runs one op on device memory and checks it against a CPU
 * context, then one ACT step of a small random model on the CUDA context
 * (reported as skipped when the model does not run on CUDA in this build).
 * Exit 0 when everything that ran was right. */
#include <hrmt.h>
#include <math.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static int fail(const char *what, hrmt_status s, hrmt_context *ctx) {
    fprintf(stderr, "%s: %s (%s)\n", what, hrmt_status_str(s), ctx ? hrmt_last_error(ctx) : "");
    return 1;
}

static int run_op(hrmt_context *gpu, hrmt_context *cpu) {
    enum { R = 37, C = 515 };
    static float x[R * C], want[R * C], got[R * C];
    for (int i = 0; i < R * C; i++) x[i] = (float)((i * 7919) % 1000) / 250.0f - 2.0f;
    const size_t shape[2] = {R, C};
    hrmt_tensor hx, hw, dx, dout;
    hrmt_tensor_init(&hx, x, HRMT_F32, 2, shape);
    hrmt_tensor_init(&hw, want, HRMT_F32, 2, shape);
    hrmt_status s = hrmt_rmsnorm(cpu, &hx, NULL, 1e-5f, &hw);
    if (s != HRMT_OK) return fail("cpu rmsnorm", s, cpu);
    void *px = NULL, *po = NULL;
    if ((s = hrmt_device_alloc(gpu, sizeof x, &px)) != HRMT_OK ||
        (s = hrmt_device_alloc(gpu, sizeof x, &po)) != HRMT_OK)
        return fail("hrmt_device_alloc", s, gpu);
    hrmt_tensor_init_device(&dx, px, HRMT_F32, 2, shape);
    hrmt_tensor_init_device(&dout, po, HRMT_F32, 2, shape);
    if ((s = hrmt_upload(gpu, px, x, sizeof x)) != HRMT_OK) return fail("hrmt_upload", s, gpu);
    if ((s = hrmt_rmsnorm(gpu, &dx, NULL, 1e-5f, &dout)) != HRMT_OK)
        return fail("cuda rmsnorm", s, gpu);
    if ((s = hrmt_download(gpu, got, po, sizeof got)) != HRMT_OK)
        return fail("hrmt_download", s, gpu);
    hrmt_device_free(gpu, px);
    hrmt_device_free(gpu, po);
    int same = 1;
    for (size_t i = 0; i < (size_t)R * C; i++) { /* bit patterns: NaN == NaN, -0 != +0 */
        uint32_t g, w;
        memcpy(&g, &got[i], sizeof g);
        memcpy(&w, &want[i], sizeof w);
        same &= g == w;
    }
    printf("op rmsnorm %dx%d on CUDA: %s the CPU's bits\n", R, C,
           same ? "same as" : "DIFFERS from");
    return same ? 0 : 1;
}

static int run_model(hrmt_context *gpu) {
    hrmt_model_config cfg = hrmt_model_config_default();
    cfg.hidden_size = 128;
    cfg.num_heads = 4;
    cfg.H_layers = cfg.L_layers = 1;
    cfg.puzzle_emb_ndim = 128;
    hrmt_model *m = NULL;
    hrmt_status s = hrmt_model_create_random(gpu, &cfg, 42, &m);
    if (s == HRMT_ERR_UNSUPPORTED) {
        printf("model step on CUDA: skipped (%s)\n", hrmt_last_error(gpu));
        return 0;
    }
    if (s != HRMT_OK) return fail("hrmt_model_create_random", s, gpu);
    hrmt_carry *carry = NULL;
    if ((s = hrmt_carry_create(m, 2, &carry)) != HRMT_OK) {
        hrmt_model_destroy(m);
        return fail("hrmt_carry_create", s, gpu);
    }
    static int32_t inputs[2 * 81], pid[2];
    for (int i = 0; i < 2 * 81; i++) inputs[i] = (i * 5) % 11;
    static float logits[2 * 81 * 11], qh[2], qc[2];
    hrmt_step_outputs o = {.logits = logits, .q_halt_logits = qh, .q_continue_logits = qc};
    s = hrmt_act_step(m, carry, inputs, pid, NULL, &o, NULL);
    int finite = 1;
    for (size_t i = 0; i < sizeof logits / sizeof logits[0]; i++) finite &= isfinite(logits[i]);
    hrmt_carry_destroy(carry);
    hrmt_model_destroy(m);
    if (s != HRMT_OK) return fail("hrmt_act_step", s, gpu);
    printf("model step on CUDA: ok, logits %s, q_halt %g\n", finite ? "finite" : "NOT FINITE",
           (double)qh[0]);
    return finite ? 0 : 1;
}

int main(void) {
    hrmt_cuda_info ci;
    hrmt_cuda_query(&ci);
    printf("cuda: built %d, %d device(s), %s, cc %d.%d, %d SMs, driver %d, runtime %d\n", ci.built,
           ci.device_count, ci.name, ci.cc_major, ci.cc_minor, ci.sm_count, ci.driver_version,
           ci.runtime_version);
    hrmt_context_options o = hrmt_context_default_options();
    o.backend = HRMT_BACKEND_CUDA;
    hrmt_context *gpu = NULL, *cpu = NULL;
    char err[256];
    hrmt_status s = hrmt_context_create(&o, &gpu, err, sizeof err);
    if (s != HRMT_OK) {
        fprintf(stderr, "CUDA context: %s: %s\n", hrmt_status_str(s), err);
        return 1;
    }
    o = hrmt_context_default_options();
    o.isa = "scalar";
    if ((s = hrmt_context_create(&o, &cpu, err, sizeof err)) != HRMT_OK) {
        fprintf(stderr, "CPU context: %s: %s\n", hrmt_status_str(s), err);
        hrmt_context_destroy(gpu);
        return 1;
    }
    int rc = run_op(gpu, cpu);
    rc |= run_model(gpu);
    hrmt_context_destroy(cpu);
    hrmt_context_destroy(gpu);
    return rc;
}
