#!/usr/bin/env bash
# Scale-out timing on a machine of N GPUs (docs/scale-out.md): `check all` at the thorough
# budget on 1 GPU, then spread over N (--gpus N, one pytest-xdist worker per GPU); the sample
# tail check sharded over N torchrun ranks (NCCL), and on 1 rank; then, per run and family,
# the rate per GPU of the family's largest check (scripts/scale_out_table.py). Every run
# stops after LIMIT seconds (default 3000; a stopped run's report says complete: false).
# NVLink multicast stays off: NCCL_NVLS_ENABLE=0 and TORCH_SYMM_MEM_DISABLE_MULTICAST=1.
# For a GPU machine with torch, triton and pytest-xdist preinstalled (offline).
# Usage: [BUDGET=thorough] [LIMIT=S] [SELECT=-k-expression] [TAIL_KERNEL=triton-exact] \
#        scripts/gpu-scale-out.sh N [OUTDIR]          (default OUTDIR: $OUT/scale-out)
# A rehearsal on a CPU: DEVICE=cpu BUDGET=smoke TAIL_KERNEL=torch-fp64 NO_INSTALL=1 ... 2 DIR
set -u
n=${1:?usage: scripts/gpu-scale-out.sh N [OUTDIR]}
out=${2:-${OUT:-reports}/scale-out}
budget=${BUDGET:-thorough}
tail_kernel=${TAIL_KERNEL:-triton-exact}
device=${DEVICE:-cuda}
export NCCL_NVLS_ENABLE=0 TORCH_SYMM_MEM_DISABLE_MULTICAST=1
source "$(dirname "$0")/gpu-env.sh"
mkdir -p "$out"
: > "$out/times.txt"
python3 -c "import torch, xdist; print('torch', torch.__version__, 'xdist', xdist.__version__, \
torch.cuda.device_count(), 'GPUs', torch.cuda.get_device_name() if torch.cuda.is_available() else '')"
select=(); [ -z "${SELECT:-}" ] || select=(-k "$SELECT")
timed() {  # NAME COMMAND...: run it under the time limit, log to NAME.log, note its time
  local name=$1 start end code; shift
  start=$(date +%s.%N)
  timeout "${LIMIT:-3000}" "$@" >"$out/$name.log" 2>&1; code=$?
  end=$(date +%s.%N)
  echo "$name: exit $code in $(python3 -c "print(f'{$end - $start:.1f}')") s" | tee -a "$out/times.txt"
}
check=(python3 -m sampling_harness check)
timed all-1gpu "${check[@]}" all --device "$device" --budget "$budget" "${select[@]}" \
  --report-dir "$out/all-1gpu"
timed "all-${n}gpu" "${check[@]}" all --device "$device" --budget "$budget" "${select[@]}" --gpus "$n" \
  --report-dir "$out/all-${n}gpu"
for ranks in 1 "$n"; do
  timed "tail-${ranks}rank" python3 -m torch.distributed.run --standalone \
    --nproc-per-node "$ranks" -m sampling_harness check sample --kernel "$tail_kernel" \
    --device "$device" --budget "$budget" -k test_tail --report-dir "$out/tail-${ranks}rank"
done
python3 scripts/scale_out_table.py "$out" | tee "$out/table.md"
