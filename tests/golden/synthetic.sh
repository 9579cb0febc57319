#!/bin/bash
# Writes a synthetic run folder for timing the render (not a test input):
# 200 configurations (4 CIFAR models x batches 1..50), 2 repeats of 5 steps
# each, and 500 kernel rows per configuration (100,000 in all), with the
# golden run's peaks.csv as roofs.
#   tests/golden/synthetic.sh OUT_DIR
set -euo pipefail
out=${1:?usage: $0 OUT_DIR}
here=$(cd "$(dirname "$0")" && pwd)
mkdir -p "$out"
cp "$here/run/peaks.csv" "$out/peaks.csv"
awk -v out="$out" 'BEGIN {
    split("resnet18-cifar mobilenet_v2-cifar vgg16-cifar resnet50-cifar", models, " ")
    split("conv bn relu add fc sgd", types, " ")
    split("fwd bwd_data bwd_weights update", phases, " ")
    steps = out "/steps.csv"; kernels = out "/kernels.csv"; configs = out "/configs.csv"
    print "env,backend,model,res,batch,precision,world_size,rank,repeat,iter,step_ms,images_per_s,loss,peak_mem_bytes" > steps
    print "env,model,res,batch,precision,repeat,seq,kernel,layer,layer_type,phase,duration_ns,flops_fp64,flops_fp32,flops_fp16,flops_tensor,dram_read_bytes,dram_write_bytes,l2_bytes,l1_bytes,source" > kernels
    print "config,model,res,batch,precision,repeat,status,seconds,log" > configs
    k = 0
    for (m = 1; m <= 4; m++)
        for (b = 1; b <= 50; b++) {
            k++
            for (r = 1; r <= 2; r++) {
                printf "%d/200,%s,32,%d,fp32,%d,ok,1.5,logs/c%d.r%d.log\n", k, models[m], b, r, k, r > configs
                for (i = 0; i < 5; i++) {
                    ms = 10 * b * m * (1 + 0.01 * ((i * 7 + r * 3 + k) % 5))
                    printf "synth,cpu,%s,32,%d,fp32,1,0,%d,%d,%.4f,%.4f,2.3,%d\n", models[m], b, r, i, ms, b * 1000 / ms, 1e8 + k * 1e6 > steps
                }
            }
            printf "%d/200,%s,32,%d,fp32,trace,ok,2.0,logs/c%d.trace.log\n", k, models[m], b, k > configs
            for (s = 0; s < 500; s++) {
                t = types[s % 6 + 1]; p = phases[int(s / 6) % 4 + 1]
                printf "synth,%s,32,%d,fp32,0,%d,kern_%s_%s,layer%d.%s,%s,%s,%d,0,%d,0,0,%d,%d,,,analytic\n",
                    models[m], b, s, t, p, int(s / 24), t, t, p, 1000 + (s * 37 + k) % 5000,
                    (t == "conv" || t == "fc") ? b * (s + 1) * 100000 : b * (s + 1) * 100,
                    b * (s + 1) * 500, b * (s + 1) * 300 > kernels
            }
        }
}'
