#!/bin/sh
# A stand-in for "python3 scripts/pytorch_ref.py ..." in the runner's
# reference stage (tests/test_bench.c, tests/test_cuda_train_emu.c): any
# `-c CODE` succeeds (the import probe; the version probe prints
# 9.9-stand-in); a script run logs its arguments to python.log beside this
# file and writes two steps.csv rows per line of --configs at 500 ms a step,
# as pytorch_ref.py would, with its summary line on stdout.
if [ "$1" = -c ]; then
    case $2 in *__version__*) echo 9.9-stand-in ;; esac
    exit 0
fi
echo "$*" >>"${0%/*}/python.log"
backend=pytorch
case " $* " in *' --backend-version '*) backend=pytorch-9.9-stand-in ;; esac
shift
while [ $# -gt 0 ]; do
    case $1 in --out) out=$2 ;; --configs) configs=$2 ;; --env) env=$2 ;; esac
    shift
done
echo env,backend,model,res,batch,precision,world_size,rank,repeat,iter,step_ms,images_per_s,loss,peak_mem_bytes >"$out"
while read -r m r b p w i; do
    for it in 0 1; do
        echo "$env,$backend,$m,$r,$b,$p,1,0,0,$it,500,$((b * 2)),2.3,1048576" >>"$out"
    done
    echo "pytorch $m res=$r batch=$b precision=$p images_per_s=$((b * 2))"
done <"$configs"
