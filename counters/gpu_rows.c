#include "gpu_rows.h"

#include <errno.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "step_trace.h"

void gpu_row_set_op(gpu_row *r, uint64_t op, const char *mangled_name)
{
    if (!gpu_op_decode(op, &r->layer, &r->phase)) {
        r->layer = GPU_ROW_NO_LAYER;
        r->phase = GPU_PHASE_FWD;
    }
    if (gpu_kernel_name_is_nccl(mangled_name)) {
        if (r->layer == GPU_ROW_NO_LAYER)
            r->layer = STEP_ALL_LAYERS;
        r->phase = GPU_PHASE_COMM;
    }
}

static bool tensor_precision(precision prec)
{
    return prec != PREC_FP32;
}

gpu_counts gpu_op_analytic(const step_driver *d, int batch, precision prec, int layer,
                           gpu_phase phase)
{
    gpu_counts c = {.dram_read = NAN, .dram_write = NAN, .l2 = NAN, .l1 = NAN};
    if (layer == GPU_ROW_NO_LAYER || phase == GPU_PHASE_COMM)
        return c;
    int op_layer = phase == GPU_PHASE_LOSS ? STEP_LOSS : layer;
    pass op_pass = phase == GPU_PHASE_LOSS ? PASS_FWD : (pass)phase;
    op_cost oc = trace_op_cost(d, op_layer, op_pass, batch, prec);
    int64_t flops = oc.other_flops, gemm_flops = oc.gemm_flops;
    if (tensor_precision(prec))
        c.flops_tensor = (double)gemm_flops;
    else
        flops += gemm_flops;
    c.flops_fp32 = (double)flops;
    /* the backend's own account of what its kernels move, fusions included */
    int64_t read = 0, written = 0;
    if (d->ops->op_bytes && d->ops->op_bytes(d->b, op_layer, op_pass, &read, &written) == 0) {
        c.dram_read = (double)read;
        c.dram_write = (double)written;
    } else {
        c.dram_read = (double)(oc.bytes - oc.written);
        c.dram_write = (double)oc.written;
    }
    return c;
}

/* Share k of n (cumulative weights cum_before .. cum_after of total) of an
 * integral quantity: differences of rounded cumulative shares, so the shares
 * add up exactly. */
static double share(double amount, double cum_before, double cum_after, double total)
{
    if (!isfinite(amount))
        return amount;
    return round(amount * cum_after / total) - round(amount * cum_before / total);
}

static void spread(gpu_row *rows, const int *idx, int m, gpu_counts cost)
{
    double total = 0;
    for (int k = 0; k < m; k++)
        total += (double)rows[idx[k]].duration_ns;
    bool by_time = total > 0;
    if (!by_time)
        total = m;
    double cum = 0;
    for (int k = 0; k < m; k++) {
        double w = by_time ? (double)rows[idx[k]].duration_ns : 1.0;
        double after = k == m - 1 ? total : cum + w;
        gpu_counts *c = &rows[idx[k]].c;
        c->flops_fp64 = share(cost.flops_fp64, cum, after, total);
        c->flops_fp32 = share(cost.flops_fp32, cum, after, total);
        c->flops_fp16 = share(cost.flops_fp16, cum, after, total);
        c->flops_tensor = share(cost.flops_tensor, cum, after, total);
        c->dram_read = share(cost.dram_read, cum, after, total);
        c->dram_write = share(cost.dram_write, cum, after, total);
        c->l2 = c->l1 = NAN;
        cum = after;
    }
}

static bool same_op(const gpu_row *a, const gpu_row *b)
{
    return a->layer == b->layer && (a->layer == GPU_ROW_NO_LAYER || a->phase == b->phase);
}

int gpu_rows_spread_analytic(const step_driver *d, int batch, precision prec, gpu_row *rows,
                             int n)
{
    int *idx = malloc((size_t)(n > 0 ? n : 1) * sizeof *idx);
    bool *done = calloc((size_t)(n > 0 ? n : 1), sizeof *done);
    if (!idx || !done) {
        free(idx);
        free(done);
        return -1;
    }
    for (int i = 0; i < n; i++) {
        if (done[i] || rows[i].counted)
            continue;
        int m = 0;
        for (int j = i; j < n; j++)
            if (!done[j] && !rows[j].counted && same_op(&rows[i], &rows[j])) {
                idx[m++] = j;
                done[j] = true;
            }
        spread(rows, idx, m, gpu_op_analytic(d, batch, prec, rows[i].layer, rows[i].phase));
    }
    free(idx);
    free(done);

    /* operations with analytic work and no kernel at all */
    int missing = 0;
    const network *net = d->net;
    for (int l = STEP_LOSS; l < net->n_layers; l++)
        for (int p = 0; p < PASS_COUNT; p++) {
            gpu_phase ph = gpu_phase_of(l, (pass)p);
            if ((l == STEP_LOSS && p != PASS_FWD) || (l >= 0 && d->ops->fused_into &&
                                                       d->ops->fused_into(d->b, l, (pass)p) >= 0))
                continue;
            gpu_counts c = gpu_op_analytic(d, batch, prec, l, ph);
            if (c.flops_fp32 + c.flops_tensor <= 0)
                continue;
            bool found = false;
            for (int i = 0; i < n && !found; i++)
                found = rows[i].layer == l && rows[i].phase == ph;
            /* a fused update books every layer's update on STEP_ALL_LAYERS */
            if (!found && p == PASS_UPDATE)
                for (int i = 0; i < n && !found; i++)
                    found = rows[i].layer == STEP_ALL_LAYERS && rows[i].phase == GPU_PHASE_UPDATE;
            missing += !found;
        }
    return missing;
}

void gpu_kernel_field(const char *name, char *out, size_t len)
{
    if (len == 0)
        return;
    size_t i = 0;
    for (; name[i] && i + 1 < len; i++) {
        char c = name[i];
        out[i] = c == ',' ? ';' : c == '"' ? '\'' : (c == '\n' || c == '\r') ? ' ' : c;
    }
    out[i] = '\0';
}

static void put_number(FILE *f, double v)
{
    if (isfinite(v))
        fprintf(f, ",%.0f", v);
    else
        fputc(',', f);
}

static void row_names(const network *net, const gpu_row *r, const char **layer_name,
                      const char **type, const char **phase)
{
    *phase = gpu_phase_name(r->phase);
    if (r->layer == GPU_ROW_NO_LAYER) {
        *layer_name = *type = *phase = "none";
        return;
    }
    if (r->layer == STEP_LOSS) {
        *layer_name = *type = "loss";
        return;
    }
    *layer_name = r->layer == STEP_ALL_LAYERS ? "all" : net->layers[r->layer].name;
    if (r->phase == GPU_PHASE_COMM)
        *type = "comm";
    else if (r->phase == GPU_PHASE_UPDATE || r->layer == STEP_ALL_LAYERS)
        *type = "sgd";
    else
        *type = layer_type_name(net->layers[r->layer].type);
}

int gpu_rows_write(const char *path, const network *net, const gpu_csv_labels *labels,
                   const gpu_row *rows, int n, char *err, size_t err_len)
{
    FILE *f = fopen(path, "a");
    if (!f) {
        snprintf(err, err_len, "cannot open %s for appending: %s", path, strerror(errno));
        return -1;
    }
    if (ftell(f) == 0)
        fprintf(f, "%s\n", KERNELS_CSV_HEADER);
    for (int i = 0; i < n; i++) {
        const gpu_row *r = &rows[i];
        const char *layer_name, *type, *phase;
        row_names(net, r, &layer_name, &type, &phase);
        char kernel[1024];
        gpu_kernel_field(r->kernel ? r->kernel : "", kernel, sizeof kernel);
        fprintf(f, "%s,%s,%d,%d,%s,%d,%d,%s,%s,%s,%s,%lld", labels->env, net->model, net->res,
                labels->batch, precision_name(labels->prec), labels->repeat, r->seq, kernel,
                layer_name, type, phase, (long long)r->duration_ns);
        put_number(f, r->c.flops_fp64);
        put_number(f, r->c.flops_fp32);
        put_number(f, r->c.flops_fp16);
        put_number(f, r->c.flops_tensor);
        put_number(f, r->c.dram_read);
        put_number(f, r->c.dram_write);
        put_number(f, r->c.l2);
        put_number(f, r->c.l1);
        fprintf(f, ",%s\n", r->counted ? "cupti" : "analytic");
    }
    if (ferror(f)) {
        fclose(f);
        snprintf(err, err_len, "writing %s failed", path);
        return -1;
    }
    if (fclose(f)) {
        snprintf(err, err_len, "writing %s failed: %s", path, strerror(errno));
        return -1;
    }
    return 0;
}

void gpu_rows_free(gpu_row *rows, int n)
{
    if (!rows)
        return;
    for (int i = 0; i < n; i++)
        free(rows[i].kernel);
    free(rows);
}
