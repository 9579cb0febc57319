/* gpu_trace_step on CUPTI's two passes (cupti_trace.cu, cupti_metrics.cu), or
 * on none where the library was built without CUPTI: the step is then traced
 * per operation on the host (step_trace.c), with one line saying why. */
#include "gpu_trace.h"

#ifdef HAVE_CUPTI
#include "cupti_metrics.h"
#include "cupti_trace.h"

/* The state of one traced step: the open metric pass, if any. */
typedef struct {
    cupti_metrics *m;
} cupti_state;

static int timing_start(void *ctx, int device, char *err, size_t err_len)
{
    (void)ctx;
    return cupti_trace_start(device, err, err_len);
}

static int push(void *ctx, uint64_t op, char *err, size_t err_len)
{
    (void)ctx;
    return cupti_trace_push(op, err, err_len);
}

static int pop(void *ctx, char *err, size_t err_len)
{
    (void)ctx;
    return cupti_trace_pop(err, err_len);
}

static int timing_discard(void *ctx, char *err, size_t err_len)
{
    (void)ctx;
    return cupti_trace_discard(err, err_len);
}

static int timing_stop(void *ctx, gpu_kernel_list *out, char *err, size_t err_len)
{
    (void)ctx;
    return cupti_trace_stop(out, err, err_len);
}

static int metrics_open(void *ctx, int device, precision prec, const gpu_metric_options *mo,
                        int max_ranges, gpu_metric_info *info, char *err, size_t err_len)
{
    cupti_state *s = ctx;
    return cupti_metrics_open(device, prec, mo, max_ranges, &s->m, info, err, err_len);
}

static int metrics_start(void *ctx, char *err, size_t err_len)
{
    cupti_state *s = ctx;
    return cupti_metrics_start(s->m, err, err_len);
}

static void metrics_op(void *ctx, uint64_t op)
{
    cupti_state *s = ctx;
    cupti_metrics_set_op(s->m, op);
}

static int metrics_stop(void *ctx, gpu_metric_pass *out, char *err, size_t err_len)
{
    cupti_state *s = ctx;
    return cupti_metrics_stop(s->m, out, err, err_len);
}

static void metrics_close(void *ctx)
{
    cupti_state *s = ctx;
    cupti_metrics_close(s->m);
    s->m = NULL;
}
#endif

int gpu_trace_step(step_driver *d, int batch, precision prec, const gpu_trace_options *opt,
                   const char *path, gpu_trace_result *result, char *err, size_t err_len)
{
#ifdef HAVE_CUPTI
    cupti_state state = {NULL};
    const gpu_passes passes = {
        .ctx = &state,
        .timing_start = timing_start,
        .push = push,
        .pop = pop,
        .timing_discard = timing_discard,
        .timing_stop = timing_stop,
        .metrics_open = metrics_open,
        .metrics_start = metrics_start,
        .metrics_op = metrics_op,
        .metrics_stop = metrics_stop,
        .metrics_close = metrics_close,
        .demangle = cupti_demangle,
    };
    return gpu_trace_step_with(&passes, d, batch, prec, opt, path, result, err, err_len);
#else
    return gpu_trace_step_with(NULL, d, batch, prec, opt, path, result, err, err_len);
#endif
}
