/* The run model's loader (analysis/run_load.c, run_read_*.c): every file of a
 * run folder read into typed structs, and each way a file can be wrong
 * reported as one line naming the file, the line and the column. */
#include <criterion/criterion.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "../analysis/run_env.h"
#include "../analysis/run_load.h"
#include "helpers.h"

/* One valid row of each file, a column it requires, and a numeric column
 * (with the row's text up to that cell, so the cell can be replaced). */
typedef struct {
    const char *name;
    unsigned bit;
    const char *header, *row;
    const char *required;  /* a column the file must have */
    const char *numeric;   /* a number column of the row */
    const char *before;    /* the row's text up to the numeric cell */
    int fields;            /* of the header */
} file_case;

static const file_case files[] = {
    {"peaks.csv", RUN_PEAKS, "env,device,ceiling,value,unit,method,spec_value,threads_or_sms,notes\n",
     "t,cpu,fp32_fma,100,GFLOP/s,fma,125,4,\n", "unit", "value", "t,cpu,fp32_fma,", 9},
    {"steps.csv", RUN_STEPS,
     "env,backend,model,res,batch,precision,world_size,rank,repeat,iter,step_ms,images_per_s,loss,"
     "peak_mem_bytes\n",
     "t,cpu,m,32,8,fp32,1,0,1,0,10,800,2.3,1000\n", "iter", "step_ms", "t,cpu,m,32,8,fp32,1,0,1,0,",
     14},
    {"kernels.csv", RUN_KERNELS,
     "env,model,res,batch,precision,repeat,seq,kernel,layer,layer_type,phase,duration_ns,flops_fp64,"
     "flops_fp32,flops_fp16,flops_tensor,dram_read_bytes,dram_write_bytes,l2_bytes,l1_bytes,source\n",
     "t,m,32,8,fp32,0,0,k,conv1,conv,fwd,1000,0,2000,0,0,100,200,300,400,cupti\n", "source",
     "duration_ns", "t,m,32,8,fp32,0,0,k,conv1,conv,fwd,", 21},
    {"configs.csv", RUN_CONFIGS, "config,model,res,batch,precision,repeat,status,seconds,log\n",
     "1/1,m,32,8,fp32,1,ok,3.5,logs/a.log\n", "status", "batch", "1/1,m,32,", 9},
    {"scaling.csv", RUN_SCALING,
     "env,model,res,mode,world_size,nodes,per_rank_batch,global_batch,step_ms,images_per_s,comm_ms,"
     "exposed_comm_ms,efficiency\n",
     "t,m,32,strong,2,1,8,16,120,133,10,4,0.95\n", "world_size", "images_per_s",
     "t,m,32,strong,2,1,8,16,120,", 13},
    {"scaling_model.csv", RUN_SCALING_MODEL,
     "env,model,res,mode,backend,link,world_size,nodes,ranks_per_node,per_rank_batch,global_batch,"
     "compute_ms,allreduce_ms,overlap_ms,exposed_ms,step_ms,images_per_s,efficiency,"
     "measured_step_ms,measured_efficiency,intra_alpha_us,intra_busbw_gbs,inter_alpha_us,"
     "inter_busbw_gbs,overlap_efficiency,backward_share,host_copy_ms,last_bucket_ms,fit_ranks,"
     "fit_points,fit_worst_pct,fit_min_mb\n",
     "t,m,32,weak,cpu,fit,2,1,2,64,128,1000,15,0,35,1035,123.7,0.97,1040,0.965,1.2,3.1,5,50,0,"
     "0.66,20,6,2,19,12.5,8\n",
     "link", "step_ms", "t,m,32,weak,cpu,fit,2,1,2,64,128,1000,15,0,35,", 32},
    {"roofline.csv", RUN_ROOFLINE,
     "env,model,res,batch,precision,level,name,layer,layer_type,phase,count,duration_ns,time_share,"
     "flops,dram_bytes,l2_bytes,ai_dram,ai_l2,achieved_gflops,peak_ceiling,peak_gflops,dram_gbs,"
     "l2_gbs,ridge_ai,attainable_gflops,pct_of_attainable,bound,source\n",
     "t,m,32,8,fp32,step,step,,,,3,1000,1,2000,300,,6.67,,2,fp32_fma,100,25,,4,100,2,compute,"
     "analytic\n",
     "level", "ai_dram", "t,m,32,8,fp32,step,step,,,,3,1000,1,2000,300,,", 28},
    {"summary.csv", RUN_SUMMARY,
     "env,backend,model,res,batch,precision,world_size,repeats,iters,images_per_s_median,"
     "images_per_s_q1,images_per_s_q3,step_ms_median,analytic_gflop_per_step,achieved_tflops,"
     "peak_ceiling,peak_gflops,pct_of_peak,mfu,mem_bound_time_share,status\n",
     "t,cpu,m,32,8,fp32,1,2,5,40,39,41,200,8,0.04,fp32_fma,100,40,40,0.1,ok\n", "status",
     "step_ms_median", "t,cpu,m,32,8,fp32,1,2,5,40,39,41,", 21},
    {"variability.csv", RUN_VARIABILITY,
     "env,model,res,batch,precision,scope,n,mean,median,stddev,cv,min,max,ci95_lo,ci95_hi,"
     "drift_pct,outliers\n",
     "t,m,32,8,fp32,iterations,10,20,20,1,0.05,19,22,19.5,20.5,1,0\n", "scope", "median",
     "t,m,32,8,fp32,iterations,10,20,", 17},
};
enum { FILES = sizeof files / sizeof files[0] };

static void write_joined(const char *dir, const char *name, const char *a, const char *b)
{
    char text[4096];
    format_or_fail(text, sizeof text, "%s%s", a, b);
    write_text(dir, name, text);
}

/* run_load of dir for one file; the error it gives, "" when it loads. */
static void load(const char *dir, const file_case *f, bool need, char *err, size_t len)
{
    run_model m;
    err[0] = '\0';
    if (run_load(&m, dir, f->bit, need ? f->bit : 0, err, len) == RUN_LOAD_OK) {
        err[0] = '\0';
        run_free(&m);
    }
}

static void expect_error(const char *err, const char *want, const file_case *f, const char *what)
{
    cr_expect(strstr(err, want) != NULL, "%s, %s: got '%s', wanted '%s'", f->name, what, err, want);
    cr_expect(strchr(err, '\n') == NULL, "%s, %s: one line: '%s'", f->name, what, err);
}

Test(run_load, every_file_loads_and_names_each_error)
{
    for (int i = 0; i < FILES; i++) {
        const file_case *f = &files[i];
        char *dir = temp_dir(), err[1024], want[512];
        write_text(dir, "env.json", "{}"); /* the folder is a run folder without f */

        load(dir, f, false, err, sizeof err);
        cr_expect_str_eq(err, "", "%s absent and not needed: %s", f->name, err);
        load(dir, f, true, err, sizeof err);
        format_or_fail(want, sizeof want, "%s: cannot open", f->name);
        expect_error(err, want, f, "missing file");

        write_joined(dir, f->name, f->header, f->row);
        load(dir, f, true, err, sizeof err);
        cr_expect_str_eq(err, "", "%s: the valid row: %s", f->name, err);

        /* the required column renamed away */
        char header[1024];
        format_or_fail(header, sizeof header, "%s", f->header);
        char *col = strstr(header, f->required);
        cr_assert_not_null(col);
        col[0] = 'X';
        write_joined(dir, f->name, header, f->row);
        load(dir, f, true, err, sizeof err);
        format_or_fail(want, sizeof want, "%s:1: no column '%s' in the header", f->name, f->required);
        expect_error(err, want, f, "missing column");

        /* the numeric cell malformed */
        const char *rest = strchr(f->row + strlen(f->before), ',');
        char row[1024];
        format_or_fail(row, sizeof row, "%sabc%s", f->before, rest ? rest : "\n");
        write_joined(dir, f->name, f->header, row);
        load(dir, f, true, err, sizeof err);
        format_or_fail(want, sizeof want, "%s:2: column '%s': 'abc' is not a number", f->name,
                       f->numeric);
        expect_error(err, want, f, "malformed number");

        /* the row cut off after the numeric cell's predecessor */
        format_or_fail(row, sizeof row, "%.*s\n", (int)strlen(f->before) - 1, f->before);
        write_joined(dir, f->name, f->header, row);
        load(dir, f, true, err, sizeof err);
        int fields = 1;
        for (const char *p = row; *p; p++)
            fields += *p == ',';
        format_or_fail(want, sizeof want, "%s:2: %d fields, header has %d", f->name, fields,
                       f->fields);
        expect_error(err, want, f, "truncated line");
        remove_temp_dir(dir);
    }
}

Test(run_load, env_json_missing_or_broken_off_is_not_an_error)
{
    char *dir = temp_dir(), err[512];
    write_text(dir, "peaks.csv", files[0].header);
    run_model m;
    cr_assert_eq(run_load(&m, dir, RUN_ENV_JSON | RUN_PEAKS, 0, err, sizeof err), RUN_LOAD_OK, "%s", err);
    cr_expect_not(m.env.present);
    run_free(&m);
    cr_expect_eq(run_load(&m, dir, RUN_ENV_JSON, RUN_ENV_JSON, err, sizeof err), RUN_LOAD_BAD_INPUT);
    cr_expect(strstr(err, "env.json: cannot open"), "%s", err);
    write_text(dir, "env.json", "{\"env\": \"t\", \"cpu\": {\"model\": ");
    cr_assert_eq(run_load(&m, dir, RUN_ENV_JSON, 0, err, sizeof err), RUN_LOAD_OK, "%s", err);
    cr_expect(m.env.present && !m.env.complete);
    cr_expect_str_eq(run_env_get(&m.env, "env"), "t");
    run_free(&m);
    remove_temp_dir(dir);
}

Test(run_load, a_hand_made_scaling_file)
{
    char *dir = temp_dir(), err[512];
    write_text(dir, "scaling.csv",
               "env,model,res,mode,world_size,nodes,per_rank_batch,global_batch,step_ms,"
               "images_per_s,comm_ms,exposed_comm_ms,efficiency\n"
               "t,resnet50,224,strong,1,1,64,64,200,320,0,0,1\n"
               "t,resnet50,224,strong,8,2,8,64,30,2133.3,12,3.5,0.833\n"
               "t,resnet50,224,weak,8,2,64,512,,2400,,,\n");
    run_model m;
    cr_assert_eq(run_load(&m, dir, RUN_SCALING, RUN_SCALING, err, sizeof err), RUN_LOAD_OK, "%s", err);
    cr_assert_eq(m.n_scaling, 3);
    const run_scaling *s = &m.scaling[1];
    cr_expect_str_eq(s->model, "resnet50");
    cr_expect_str_eq(s->mode, "strong");
    cr_expect_eq(s->res, 224);
    cr_expect_eq(s->world_size, 8);
    cr_expect_eq(s->nodes, 2);
    cr_expect_eq(s->per_rank_batch, 8);
    cr_expect_eq(s->global_batch, 64);
    cr_expect_float_eq(s->images_per_s, 2133.3, 1e-9);
    cr_expect_float_eq(s->exposed_comm_ms, 3.5, 1e-12);
    cr_expect_float_eq(s->efficiency, 0.833, 1e-12);
    cr_expect(isnan(m.scaling[2].step_ms) && isnan(m.scaling[2].efficiency), "empty: not measured");
    run_free(&m);
    /* a world size that is no whole number */
    write_text(dir, "scaling.csv", "model,res,mode,world_size,images_per_s\nm,32,weak,1.5,10\n");
    cr_expect_eq(run_load(&m, dir, RUN_SCALING, 0, err, sizeof err), RUN_LOAD_BAD_INPUT);
    cr_expect(strstr(err, "scaling.csv:2: column 'world_size': '1.5' is out of range"), "%s", err);
    remove_temp_dir(dir);
}

Test(run_load, a_hand_made_scaling_model_file)
{
    char *dir = temp_dir(), err[512];
    /* the columns the loader needs, a projection row without a measurement */
    write_text(dir, "scaling_model.csv",
               "model,res,mode,link,world_size,step_ms,efficiency,fit_ranks,measured_step_ms\n"
               "resnet50,224,strong,links,64,40.5,0.81,,\n"
               "resnet50,224,weak,fit,2,70,0.93,2,71.5\n");
    run_model m;
    cr_assert_eq(run_load(&m, dir, RUN_SCALING_MODEL, RUN_SCALING_MODEL, err, sizeof err),
                 RUN_LOAD_OK, "%s", err);
    cr_assert_eq(m.n_predictions, 2);
    const run_prediction *p = &m.predictions[0];
    cr_expect_str_eq(p->link, "links");
    cr_expect_str_eq(p->mode, "strong");
    cr_expect_eq(p->world_size, 64);
    cr_expect_float_eq(p->step_ms, 40.5, 1e-12);
    cr_expect_float_eq(p->efficiency, 0.81, 1e-12);
    cr_expect(isnan(p->measured_step_ms) && isnan(p->intra_busbw_gbs), "empty: not measured");
    cr_expect_eq(p->fit_ranks, -1);
    cr_expect_eq(p->nodes, -1, "no nodes column");
    cr_expect_eq(m.predictions[1].fit_ranks, 2);
    cr_expect_float_eq(m.predictions[1].measured_step_ms, 71.5, 1e-12);
    run_free(&m);
    /* a link the report cannot place, a step that is no time, an efficiency missing */
    static const struct {
        const char *row, *want;
    } bad[] = {
        {"m,32,weak,nvlink,2,70,0.9\n", "scaling_model.csv:2: column 'link': 'nvlink' is not fit or links"},
        {"m,32,weak,fit,2,0,0.9\n", "scaling_model.csv:2: column 'step_ms': '0' is out of range (expected milliseconds > 0)"},
        {"m,32,weak,fit,2,70,\n", "scaling_model.csv:2: column 'efficiency' is empty (expected a value >= 0)"},
        {"m,32,weak,fit,0,70,0.9\n", "scaling_model.csv:2: column 'world_size': '0' is out of range"},
    };
    for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++) {
        write_joined(dir, "scaling_model.csv", "model,res,mode,link,world_size,step_ms,efficiency\n",
                     bad[i].row);
        cr_expect_eq(run_load(&m, dir, RUN_SCALING_MODEL, 0, err, sizeof err), RUN_LOAD_BAD_INPUT,
                     "%s", bad[i].row);
        cr_expect(strstr(err, bad[i].want) != NULL, "got '%s', wanted '%s'", err, bad[i].want);
        cr_expect(strchr(err, '\n') == NULL, "one line: %s", err);
    }
    remove_temp_dir(dir);
}

Test(run_load, kernels_carry_bytes_per_memory_level)
{
    char *dir = temp_dir(), err[512];
    write_joined(dir, "kernels.csv", files[2].header, files[2].row);
    run_model m;
    cr_assert_eq(run_load(&m, dir, RUN_KERNELS, 0, err, sizeof err), RUN_LOAD_OK, "%s", err);
    cr_assert_eq(m.n_traces, 1);
    const run_kernel *k = &m.traces[0].rows[0];
    cr_expect_eq(k->dram_read_bytes, 100);
    cr_expect_eq(k->dram_write_bytes, 200);
    cr_expect_eq(k->l2_bytes, 300);
    cr_expect_eq(k->l1_bytes, 400);
    cr_expect_str_eq(k->source, "cupti");
    cr_expect_str_eq(k->layer, "conv1");
    run_free(&m);
    remove_temp_dir(dir);
}
