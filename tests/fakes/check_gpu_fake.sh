#!/usr/bin/env bash
# Every outside program scripts/check_gpu.sh calls, faked for
# tests/test_check_gpu.c, which links this file under each name: nvidia-smi,
# mpirun, ncu, compute-sanitizer, make, python, the runner (BENCH), bin/train,
# bin/peaks, bin/allreduce, the tests/gpu programs and tests/sanitize/planted. What each does is the least that
# lets the script's stages read their results: the rows and lines the real
# programs write. Calls are logged to $FAKE_LOG. Knobs: FAKE_NO_GPU,
# FAKE_NO_TORCH, FAKE_COUNTERS_DENIED (bin/train's metric pass refused), FAKE_FAIL=<name>
# (that program fails), FAKE_TORCH_FAIL='<model> <precision>' (pytorch_ref.py fails that
# configuration and goes on), FAKE_TORCH_PROFILE_HANG (its profile pass, after every
# figure, ends by --limit), FAKE_SANITIZER_FINDS='<tool> <program>' (compute-sanitizer
# reports a hazard in one of the suite's kernels there), FAKE_SANITIZER_BLIND=<tool> (it
# misses the planted bug), FAKE_SANITIZER_REFUSES (it refuses the kernel filter),
# FAKE_SANITIZER_NO_DEVICE (it cannot attach to the GPU, as under gVisor),
# FAKE_SLOW=<name> (sleeps FAKE_SLEEP seconds first).
set -u
name=${0##*/}
echo "$name $*" >>"${FAKE_LOG:-/dev/null}"
[[ ${FAKE_SLOW:-} == "$name" ]] && sleep "${FAKE_SLEEP:-10}"
if [[ ${FAKE_FAIL:-} == "$name" ]]; then
    echo "FAIL: $name broken on purpose"
    echo "0 passed, 1 failed"
    exit 1
fi

# opt NAME ARGS...: the value of option NAME among ARGS
opt() {
    local want=$1
    shift
    while (($#)); do
        [[ $1 == "$want" ]] && {
            echo "${2:-}"
            return
        }
        shift
    done
}

# one steps.csv row per timed step (the header for a new file); 2 GiB unless MEM;
# GRAPH (on or off) the column bin/train writes, none for pytorch_ref.py's rows
steps_rows() { # FILE MODEL RES BATCH PREC ITERS STEP_MS [MEM] [GRAPH]
    local graph_col=${9:+,graph} graph_cell=${9:+,$9}
    [[ -s $1 ]] || echo "env,backend,model,res,batch,precision,world_size,rank,repeat,iter,step_ms,images_per_s,loss,peak_mem_bytes$graph_col" >"$1"
    for ((i = 0; i < $6; i++)); do
        echo "fake,cuda,$2,$3,$4,$5,1,0,0,$i,$7,1,6.$((9 - i)),${8:-2147483648}$graph_cell" >>"$1"
    done
}

case $name in
nvidia-smi)
    [[ -n ${FAKE_NO_GPU:-} ]] && {
        echo "NVIDIA-SMI has failed because it couldn't communicate with the NVIDIA driver"
        exit 9
    }
    echo "GPU 0: NVIDIA H100 80GB HBM3 (UUID: GPU-00000000-fake)"
    ;;
mpirun)
    [[ $1 == -np && $2 == 1 ]] || exit 7
    shift 2
    exec "$@"
    ;;
compute-sanitizer) # --option value ... PROGRAM ARGS: the program, the tool's reports
    tool=memcheck reports=/dev/stdout
    while [[ ${1:-} == --* ]]; do
        [[ $1 == --version ]] && {
            echo "NVIDIA (R) Compute Sanitizer"
            echo "Version 2025.3.1.0 (fake)"
            exit 0
        }
        [[ $1 == --tool ]] && tool=$2
        [[ $1 == --kernel-name && -n ${FAKE_SANITIZER_REFUSES:-} ]] && {
            echo "========= Error: invalid value for option --kernel-name" >&2
            exit 1
        }
        [[ $1 == --log-file ]] && reports=$2
        shift 2
    done
    echo "========= COMPUTE-SANITIZER" >>"$reports"
    [[ -n ${FAKE_SANITIZER_NO_DEVICE:-} ]] && {
        echo "========= Error: Device not supported" >>"$reports"
        exit 1
    }
    "$@"
    rc=$? errors=0 program=${1##*/}
    report() { # KERNEL
        echo "========= Error: Race reported between Write access at $1(int *)+0x90"
        echo "=========     and Read access at $1(int *)+0xa0 [64 hazards]"
        errors=$((errors + 1))
    } >>"$reports"
    if [[ $program == planted && ${FAKE_SANITIZER_BLIND:-} != "$tool" ]]; then
        case $tool in
        memcheck) report planted_oob_kernel ;;
        racecheck) report planted_race_kernel ;;
        synccheck) report planted_sync_kernel ;;
        esac
    fi
    [[ ${FAKE_SANITIZER_FINDS:-} == "$tool $program" ]] && report bn_apply_kernel
    if [[ $tool == racecheck ]]; then # its own summary line
        echo "========= RACECHECK SUMMARY: $errors hazards displayed ($errors errors, 0 warnings)"
    else
        echo "========= ERROR SUMMARY: $errors error$( ((errors == 1)) || echo s)"
        ((errors > 0)) && echo "========= ERROR SUMMARY: 7 errors were not printed"
    fi >>"$reports"
    exit $rc
    ;;
make)
    [[ " $* " == *" info "* ]] && echo "  gnuplot        missing  -> no figures"
    if [[ " $* " == *" -q "* ]]; then # out of date (1): a program in FAKE_MAKE_STALE
        [[ ,${FAKE_MAKE_STALE:-}, == *,"${*: -1}",* || ,${FAKE_MAKE_STALE:-}, == *,"$(basename "${*: -1}")",* ]] && exit 1
        exit 0
    fi
    exit "${FAKE_MAKE_RC:-0}"
    ;;
python)
    case ${1:-} in
    -c)
        [[ -n ${FAKE_NO_TORCH:-} ]] && {
            echo "ModuleNotFoundError: No module named 'torch'"
            exit 1
        }
        ;;
    *check_gpu_ncu.py) exec python3 "$@" ;;
    *pytorch_bandwidth.py)
        out=$(opt --out "$@")
        {
            echo "env,device,ceiling,value,unit,method,spec_value,threads_or_sms,notes"
            echo "fake,H100,hbm_copy,2955,GB/s,pytorch,,,"
            echo "fake,H100,hbm_triad,2995,GB/s,pytorch,,,"
        } >"$out"
        ;;
    *pytorch_ref.py) # one configuration a line of --configs, as the real one: a step
        # of 200 ms (ours 100), torch.compile's 80 (ours behind), fp16's and tf32's
        # 105 (ours 1.05x: fp16's goal missed, tf32's met); fp16's memory 1 GiB (ours 2)
        out=$(opt --out "$@") profile=$(opt --profile "$@") rc=0
        [[ -n $profile ]] && echo "env,model,res,batch,precision,op,kernel,calls,layer_type,phase,duration_ns" >"$profile"
        while read -r model res batch prec _ iters _; do
            if [[ ${FAKE_TORCH_FAIL:-} == "$model $prec" ]]; then
                echo "pytorch_ref.py: $model res $res batch $batch $prec failed: CUDA out of memory" >&2
                rc=1
                continue
            fi
            ms=200.0 mem=2147483648
            [[ $prec == fp16 || $prec == tf32 ]] && ms=105.0
            [[ $prec == fp16 ]] && mem=1073741824
            [[ $(opt --mode "$@") == compile ]] && ms=80.0
            steps_rows "$out" "$model" "$res" "$batch" "$prec" "$iters" "$ms" "$mem"
            # a profiled step of 85 ms beside the runner's traced step of 100
            [[ -n $profile ]] && for k in "aten::conv2d,xmma_fprop,20,conv,fwd,25000000" \
                "autograd::engine::evaluate_function: ConvolutionBackward0,xmma_dgrad,20,conv,bwd,15000000" \
                "autograd::engine::evaluate_function: ConvolutionBackward0,xmma_wgrad,20,conv,bwd,25000000" \
                "aten::batch_norm,bn_fw_tr_1C11_kernel_NCHW,20,bn,fwd,15000000" \
                "Optimizer.step#SGD.step,multi_tensor_apply_kernel,1,sgd,update,5000000"; do
                echo "check-gpu,$model,$res,$batch,$prec,$k" >>"$profile"
            done
            echo "pytorch $model res=$res batch=$batch precision=$prec device=fake peak_mem_gib=2.00 median_step_ms=200.00"
        done <"$(opt --configs "$@")"
        if [[ -n $profile ]]; then
            echo "pytorch_ref.py: --profile: profiling 8 configuration(s)"
            # FAKE_TORCH_PROFILE_HANG: the profile pass hangs until --limit ends it
            [[ -n ${FAKE_TORCH_PROFILE_HANG:-} ]] && {
                echo "Timeout (0:03:00)!" >&2
                exit 1
            }
        fi
        exit $rc
        ;;
    *) exit 5 ;;
    esac
    ;;
bench)
    runs='' bin=''
    for a in "$@"; do
        case $a in RUNS_DIR=*) runs=${a#RUNS_DIR=} ;; BIN=*) bin=${a#BIN=} ;; esac
    done
    run=$runs/gpu-quick/20261123T000000Z
    mkdir -p "$run"
    echo "config,model,res,batch,precision,repeat,status,seconds,log" >"$run/configs.csv"
    echo "env,model,res,batch,precision,repeat,seq,kernel,layer,layer_type,phase,duration_ns,flops_fp64,flops_fp32,flops_fp16,flops_tensor,dram_read_bytes,dram_write_bytes,l2_bytes,l1_bytes,source" >"$run/kernels.csv"
    while IFS=$'\t' read -r model res batch prec _ iters _; do
        steps_rows "$run/steps.csv" "$model" "$res" "$batch" "$prec" "$iters" 100.0 "" off
        # a graph twin twice as fast: never ours beside PyTorch's eager step
        [[ -n ${FAKE_BENCH_GRAPH:-} ]] &&
            steps_rows "$run/steps.csv" "$model" "$res" "$batch" "$prec" "$iters" 50.0 "" on
        echo "1/8,$model,$res,$batch,$prec,1,ok,1.0,x.log" >>"$run/configs.csv"
        # a traced step of 100 ms: conv backward half of it, in two kernels
        for k in "fprop,layer,conv,fwd,30000000" "dgrad_a,layer,conv,bwd_data,20000000" \
            "bn_apply,layer,bn,fwd,20000000" "dgrad_b,layer,conv,bwd_data,30000000" "relu,layer,relu,fwd,0"; do
            echo "fake,$model,$res,$batch,$prec,0,0,$k,0,0,0,0,0,0,0,0,analytic" >>"$run/kernels.csv"
        done
    done < <("$bin/matrix" gpu-quick)
    # bin/analyze's step rows: at the roofs 40 of the traced 100 ms
    echo "env,model,res,batch,precision,level,name,layer,layer_type,phase,count,duration_ns,time_share,flops,dram_bytes,l2_bytes,ai_dram,ai_l2,achieved_gflops,peak_ceiling,peak_gflops,dram_gbs,l2_gbs,ridge_ai,attainable_gflops,pct_of_attainable,bound,source,roof_ns,above_roof_ns" >"$run/roofline.csv"
    while IFS=$'\t' read -r model res batch prec _; do
        echo "fake,$model,$res,$batch,$prec,step,step,,,,5,100000000,1,1e12,1e10,,100,,1e4,${prec}_tensor,1e6,3000,,333,3e5,3.3,memory,analytic,40000000,60000000" >>"$run/roofline.csv"
    done < <("$bin/matrix" gpu-quick)
    echo "<html></html>" >"$run/report.html"
    ;;
train)
    out=$(opt --out "$@") trace=$(opt --trace "$@") iters=$(opt --iters "$@")
    graph=off
    [[ " $* " == *" --graph "* ]] && graph=on
    [[ -n $out ]] && steps_rows "$out" "$(opt --model "$@")" 224 "$(opt --batch "$@")" \
        "$(opt --precision "$@")" "${iters:-20}" 100.0 "" "$graph"
    [[ " $* " == *" --ddp "* ]] && echo "ddp: 1 rank, nccl, 3 buckets; comm 1.0 ms, exposed 0.2 ms"
    # the choices line after the summary, as the CUDA backend's begins it
    passes="convolution passes (--conv-api auto): cuDNN's graph API in fwd 3/20, bwd_data 2/19, bwd_filter 4/20, its legacy calls in the rest"
    [[ $(opt --model "$@") == vgg16 ]] &&
        passes="convolutions with bias under ReLU (--conv-bias auto, 13 layers): cuDNN's fused conv+bias+ReLU in 13 (on its graph API in 9), cuDNN's convolution + the own bias+ReLU kernel in 0; convolution passes (--conv-api auto): cuDNN's graph API in fwd 0/0, bwd_data 5/12, bwd_filter 6/13, its legacy calls in the rest"
    echo "$passes; convolution algorithms: 11 of 11 distinct shapes from algos.csv, 0 searched"
    if [[ -n $trace ]]; then # appended, as the real one's (the header for a new file)
        at="fake,$(opt --model "$@"),224,$(opt --batch "$@"),$(opt --precision "$@")"
        {
            [[ -s $trace ]] || echo "env,model,res,batch,precision,repeat,seq,kernel,layer,layer_type,phase,duration_ns,flops_fp64,flops_fp32,flops_fp16,flops_tensor,dram_read_bytes,dram_write_bytes,l2_bytes,l1_bytes,source"
            echo "$at,0,0,conv_kernel,conv1,conv,fwd,1000,0,200,0,1000000,4096,2048,8192,16384,cupti"
            echo "$at,0,1,bn_kernel,bn1,bn,fwd,500,0,600,8,0,1024,1024,2048,4096,cupti"
        } >>"$trace"
        if [[ -n ${FAKE_COUNTERS_DENIED:-} ]]; then
            echo "train: trace: GPU performance counters not permitted (ERR_NVGPUCTRPERM): run as root, or ... (cuptiProfilerInitialize(&init): CUPTI_ERROR_INSUFFICIENT_PRIVILEGES)" >&2
            echo "trace: 2 rows to $trace (2 kernels, timing cupti, FLOPs and bytes analytic); kernels sum to 0.00 ms = 1.0% of the median step (100.00 ms)"
        else
            echo "trace: 2 rows to $trace (2 kernels, timing cupti, FLOPs and bytes cupti on GH100); kernels sum to 0.00 ms = 1.0% of the median step (100.00 ms); metric pass 1.5 s, 15 counters in 3 replay passes per kernel"
        fi
        echo "trace: the traced step took 101.00 ms on the host, +1.0% against the median untraced step (the timing pass's overhead)"
    fi
    ;;
ncu)
    if [[ $1 == --import ]]; then
        m=smsp__sass_thread_inst_executed_op
        echo '"ID","Process ID","Kernel Name","dram__bytes_read.sum","dram__bytes_write.sum","lts__t_bytes.sum","l1tex__t_bytes.sum","'$m'_fadd_pred_on.sum","'$m'_ffma_pred_on.sum","'$m'_hfma_pred_on.sum","sm__ops_path_tensor_op_hgmma_src_bf16_dst_fp32.sum","sm__ops_path_tensor_op_hmma_src_bf16_dst_fp32.sum"'
        echo '"","","","byte","byte","byte","byte","inst","inst","inst","",""'
        echo '"0","1","conv_kernel","4,096","2,048","8,192","16,384","0","100","0","999,000","1,000"'
        echo '"1","1","bn_kernel","1,024","1,024","2,048","4,096","200","200","2","0","0"'
        exit 0
    fi
    [[ ${ROOFLINE_PROFILE_STEP:-} == 2 ]] || exit 3
    rep=$(opt -o "$@")
    touch "$rep.ncu-rep"
    ;;
peaks)
    out=$(opt --out "$@")
    {
        echo "env,device,ceiling,value,unit,method,spec_value,threads_or_sms,notes"
        echo "fake,H100,bf16_tensor,791000,GFLOP/s,cublasLt,989400,132,x"
        echo "fake,H100,hbm_copy,2810,GB/s,own,3352,132,x"
        echo "fake,H100,hbm_triad,2865,GB/s,own,3352,132,\"x; suspect: triad and copy\""
    } >"$out"
    ;;
allreduce)
    out=$(opt --out "$@") peaks=$(opt --peaks-out "$@")
    {
        echo "env,transport,world_size,nodes,dtype,bytes,iters,time_us,algbw_gbs,busbw_gbs,correct"
        echo "fake,nccl,1,1,fp32,1024,100,5.000,0.2048,0.0000,yes"
        echo "fake,nccl,1,1,fp32,1073741824,3,800.000,1342.1773,0.0000,yes"
    } >"$out"
    {
        echo "env,device,ceiling,value,unit,method,spec_value,threads_or_sms,notes"
        echo "fake,H100,allreduce,1342.1773,GB/s,nccl_allreduce,,1,x"
        echo "fake,H100,allreduce_latency,5.000,us,nccl_allreduce,,1,x"
    } >"$peaks"
    ;;
planted) # what the real one prints: the kernel it ran (not a report of the tool's)
    declare -A kernel_of=([memcheck]=oob [racecheck]=race [synccheck]=sync)
    echo "planted_${kernel_of[${1:-}]:-x}_kernel: launch no error, run no error"
    ;;
device_check)
    echo "device 0: NVIDIA H100 80GB HBM3, 132 SMs, 79.1 GiB, compute 9.0"
    echo "PASS: fake"
    echo "1 passed, 0 failed"
    ;;
*)
    echo "PASS: $name fake"
    echo "3 passed, 0 failed"
    ;;
esac
exit 0
