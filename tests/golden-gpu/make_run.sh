#!/bin/bash
# Writes the synthetic GPU run folder tests/golden-gpu/run (the inputs a
# runner leaves: env.json, peaks.csv, steps.csv, kernels.csv, configs.csv) for
# the GPU sections of the report (tests/test_gpu_report.c). It is made, not
# measured: no GPU was used. The kernel rows follow the analytic cost model
# (bin/complexity --csv) with the departures a real CUPTI trace shows, each
# chosen so that the report has something known to find:
#   - tensor-core convolutions (bf16) count FLOPs in flops_tensor plus a small
#     epilogue in flops_fp32; conv1's 3 input channels are padded to 8, so its
#     counted FLOPs are 8/3 of the analytic ones (outside the factor 2);
#   - in fp32 the layer3 convolutions' forward runs Winograd: 0.45 x the FLOPs;
#   - ReLUs that follow a batch norm are fused into its kernels (no rows of
#     their own; their FLOPs and bytes land on the batch norm);
#   - DRAM bytes are below the cost model's minimal bytes where activations
#     stay in the 50 MB L2 (bf16 x0.55-0.6, fp32 x0.85-0.9); L2 and L1 bytes
#     are multiples of the DRAM bytes;
#   - two NCCL kernels (phase comm, timed only: source analytic, no FLOPs);
#   - durations from the roofs with an efficiency and a launch floor.
#   tests/golden-gpu/make_run.sh [BIN_DIR]   (default bin/; rewrites run/)
set -euo pipefail
here=$(cd "$(dirname "$0")" && pwd)
bin=${1:-$here/../../bin}
out=$here/run
mkdir -p "$out"
env=h100-synth
batch=64

cat >"$out/env.json" <<EOF
{
  "schema": "roofline-suite env.json 1",
  "env": "$env",
  "date_utc": "2026-11-24T09:00:00Z",
  "command_lines": [
    "tests/golden-gpu/make_run.sh (synthetic: no GPU was used)"
  ],
  "host": {
    "name": "synthetic",
    "arch": "x86_64"
  },
  "gpu": {
    "count": 1,
    "devices": [
      {
        "name": "NVIDIA H100 80GB HBM3 (synthetic)",
        "sms": 132,
        "memory_gib": 79.1
      }
    ]
  }
}
EOF

# H100-like roofs. hbm_write is the fastest HBM row but never a roof
# (analysis/roofs.c): the HBM roof is hbm_read's 3200 GB/s.
cat >"$out/peaks.csv" <<EOF
env,device,ceiling,value,unit,method,spec_value,threads_or_sms,notes
$env,H100 (synthetic),fp64_fma,30000,GFLOP/s,synthetic,33500,132,
$env,H100 (synthetic),fp32_fma,60000,GFLOP/s,synthetic,66900,132,
$env,H100 (synthetic),fp16_fma,120000,GFLOP/s,synthetic,133800,132,
$env,H100 (synthetic),tf32_tensor,350000,GFLOP/s,synthetic,494700,132,
$env,H100 (synthetic),bf16_tensor,700000,GFLOP/s,synthetic,989400,132,
$env,H100 (synthetic),fp16_tensor,700000,GFLOP/s,synthetic,989400,132,
$env,H100 (synthetic),hbm_copy,3000,GB/s,synthetic,3350,132,
$env,H100 (synthetic),hbm_triad,3050,GB/s,synthetic,3350,132,
$env,H100 (synthetic),hbm_read,3200,GB/s,synthetic,3350,132,
$env,H100 (synthetic),hbm_write,3300,GB/s,synthetic,3350,132,
$env,H100 (synthetic),l2,9000,GB/s,synthetic,,132,
$env,H100 (synthetic),l1,28000,GB/s,synthetic,,132,
$env,H100 (synthetic),pcie_h2d,50,GB/s,synthetic,64,1,
EOF

kernels=$out/kernels.csv
echo "env,model,res,batch,precision,repeat,seq,kernel,layer,layer_type,phase,duration_ns,flops_fp64,flops_fp32,flops_fp16,flops_tensor,dram_read_bytes,dram_write_bytes,l2_bytes,l1_bytes,source" >"$kernels"
steps=$out/steps.csv
echo "env,backend,model,res,batch,precision,world_size,rank,repeat,iter,step_ms,images_per_s,loss,peak_mem_bytes" >"$steps"
configs=$out/configs.csv
echo "config,model,res,batch,precision,repeat,status,seconds,log" >"$configs"

k=0
for prec in bf16 fp32; do
    k=$((k + 1))
    "$bin/complexity" --model resnet18-cifar --batch $batch --precision $prec --csv |
        awk -F, -v env=$env -v prec=$prec -v kernels="$kernels" -v steps="$steps" -v k=$k '
        function jitter(i) { return 0.85 + 0.3 * ((i * 37) % 11) / 10 }
        # a count, or an empty cell for "not measured"
        function num(v) { return v == "" ? "" : sprintf("%.0f", v) }
        # one kernels.csv row; t: the duration from the roofs
        function row(kernel, layer, type, phase, f32, tensor, rd, wr, l2, l1, src,   t) {
            t = 2500 + jitter(seq) * ((tensor + f32) / (tensor > 0 ? tpeak : 60000) / eff_c + (rd + wr) / 3200 / 0.7)
            if (type == "comm") t += 40000 # an allreduce of the gradient bucket
            if (src == "") src = "cupti"
            printf "%s,resnet18-cifar,32,%d,%s,0,%d,%s,%s,%s,%s,%.0f,0,%.0f,0,%.0f,%s,%s,%s,%s,%s\n",
                env, batch, prec, seq++, kernel, layer, type, phase, t, f32, tensor, num(rd), num(wr),
                num(l2), num(l1), src >> kernels
            total_ns += t
        }
        # dram bytes of an operation: its analytic bytes x g, 3:1 read:write
        function mem(kernel, layer, type, phase, f32, tensor, bytes, g, l2x, l1x,   d) {
            d = bytes * g
            row(kernel, layer, type, phase, f32, tensor, 0.75 * d, 0.25 * d, d * l2x, d * l2x * l1x)
        }
        NR == 1 { next }
        $6 == "total" { next }
        {
            batch = $3; i = $5; name[i] = $6; type[i] = $7; input[i] = $8
            for (p = 0; p < 4; p++) { fl[i, p] = $(14 + p); by[i, p] = $(18 + p) }
            if ($6 == "loss") loss = i
            n = i + 1
        }
        function emit(i, p,   f, b, phase, t, pad, wino, fp, kind, kn, rf, rb, r) {
            if (i == loss) {
                if (p == 0)
                    mem("softmax_xent_fwd_bwd_kernel", "loss", "loss", "loss", fl[i, 0] + fl[i, 1], 0, by[i, 0] + by[i, 1], 3, 1.6, 1.05)
                return
            }
            f = fl[i, p]; b = by[i, p]; phase = ph[p + 1]
            if ((f == 0 && b == 0) || fused[i]) return
            t = type[i]
            if (t == "conv") {
                pad = name[i] == "conv1" && tensor ? 8 / 3 : 1
                wino = !tensor && p == 0 && name[i] ~ /^layer3\..*conv/ ? 0.45 : 1
                fp = 1.04 * wino
                kind = p == 0 ? "fprop" : p == 1 ? "dgrad" : "wgrad"
                kn = tensor ? "sm90_xmma_" kind "_implicit_gemm_bf16_nhwc_128x128x64_kernel" \
                            : (wino < 1 ? "winograd_fprop_4x4_3x3_fp32_kernel" : "implicit_convolve_sgemm_" kind "_fp32_kernel")
                if (tensor) mem(kn, name[i], t, phase, f * 0.002, f * pad, b, gconv, 4, 1.2)
                else mem(kn, name[i], t, phase, f * fp, 0, b, gconv, 4, 3)
            } else if (t == "fc") {
                kn = tensor ? "nvjet_sm90_tst_64x8_64x16_4x1_v_bz_" (p == 0 ? "TNT" : p == 1 ? "NNT" : "NTN") \
                            : "sgemm_32x32_" (p == 0 ? "tn" : p == 1 ? "nn" : "nt")
                if (tensor) mem(kn, name[i], t, phase, 0, f, b, 1, 2, 1.5)
                else mem(kn, name[i], t, phase, f, 0, b, 1, 2, 1.5)
            } else if (t == "bn") {
                # the ReLU that reads this batch norm is fused into its kernels
                rf = 0; rb = 0
                for (r = 0; r < n; r++) if (fused[r] && input[r] == i && p < 2) { rf += fl[r, p]; rb += by[r, p] }
                if (p == 0) {
                    mem("bn_stats_kernel", name[i], t, phase, 0.5 * f * 1.25, 0, 0.5 * b, gew, 1.6, 1.05)
                    mem("bn_apply_relu_kernel", name[i], t, phase, 0.5 * f * 1.25 + rf, 0, 0.5 * b + rb * 0.5, gew, 1.6, 1.05)
                } else {
                    mem(p == 1 ? "bn_relu_bwd_data_kernel" : "bn_bwd_weights_kernel", name[i], t, phase, f * 1.25 + rf, 0, b + rb * 0.5, gew, 1.6, 1.05)
                }
            } else {
                mem(t "_" phase "_kernel", name[i], t, phase, f, 0, b, gew, 1.6, 1.05)
            }
        }
        END {
            tensor = prec != "fp32"; tpeak = tensor ? 700000 : 60000
            eff_c = tensor ? 0.45 : 0.6
            split("fwd bwd_data bwd_weights", ph, " ")
            gconv = tensor ? 0.6 : 0.85; gew = tensor ? 0.55 : 0.9
            for (i = 0; i < n; i++) fused[i] = type[i] == "relu" && type[input[i]] == "bn"
            # forward in order (the loss after it), then backward in reverse,
            # both backward phases of a layer together, as the step driver runs them
            for (i = 0; i < n; i++) emit(i, 0)
            for (i = n - 1; i >= 0; i--) { emit(i, 1); emit(i, 2) }
            # the gradients, reduced over two ranks (timed only), then the fused update
            row("ncclDevKernel_AllReduce_Sum_f32_RING_LL", "all", "comm", "comm", 0, 0, "", "", "", "", "analytic")
            row("ncclDevKernel_AllReduce_Sum_f32_RING_LL", "all", "comm", "comm", 0, 0, "", "", "", "", "analytic")
            uf = 0; ub = 0
            for (i = 0; i < n; i++) { uf += fl[i, 3]; ub += by[i, 3] }
            for (c = 1; c <= 3; c++)
                mem("multi_tensor_sgd_momentum_kernel", "all", "sgd", "update", uf / 3, 0, ub / 3, 1, 1.6, 1.05)
            # the timed steps: the kernels plus 12% of gaps, two repeats of six
            for (r = 1; r <= 2; r++)
                for (it = 0; it < 6; it++) {
                    ms = total_ns * 1.12 * (1 + 0.004 * ((it * 5 + r * 3) % 7)) / 1e6
                    printf "%s,cuda,resnet18-cifar,32,%d,%s,2,0,%d,%d,%.4f,%.2f,%.4f,%d\n", env, batch, prec, r, it, ms, batch * 1000 / ms, 2.3 - 0.01 * it, 2.1e9 * (tensor ? 0.6 : 1) >> steps
                }
        }'
    for r in 1 2; do
        echo "$k/2,resnet18-cifar,32,$batch,$prec,$r,ok,8.5,logs/resnet18-cifar_r32_b${batch}_${prec}.rep$r.log" >>"$configs"
    done
    echo "$k/2,resnet18-cifar,32,$batch,$prec,trace,ok,95.0,logs/resnet18-cifar_r32_b${batch}_${prec}.trace.log" >>"$configs"
done
echo "wrote $out: $(($(wc -l <"$kernels") - 1)) kernel rows"
