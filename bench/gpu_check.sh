#!/usr/bin/env bash
# The GPU check (issue 34, docs/benchmarks.md "GPU check"): tests/cuda, the per-step profile of
# every registry model, the set_pooling and table30 suites, and one paper-protocol cell, each
# under its own time limit (at most 7.7 minutes in all), then one JSON of everything:
#
#   bash bench/gpu_check.sh [OUTDIR] [cuda|cpu]     (make gpu-check: OUTDIR = bench/results)
#
# GPU_CHECK_STAGES=tests_cuda,step_profile runs only the stages it names (a loan with little
# time left); the others are recorded as skipped. Two stages run only when named: `seeds`
# (seeds stacked against one after another and against the pool, 120 s) and `compile` (eager
# against --compile's CUDA graphs, 300 s): GPU_CHECK_STAGES=seeds,compile.
# writes OUTDIR/gpu_check_<device>.json (e.g. gpu_check_nvidia-h200.json) and the logs and raw
# suite outputs under OUTDIR/gpu_check_<device>/.  With `cpu` it runs the CPU-capable parts at
# a small size (about three minutes on our shared 2-core VM) and says which CUDA parts it skipped.
# Where the package is not installed (a lent machine without network), mzattn/{baselines,
# datasets,repro,bench} are linked to the top-level folders and the root goes on PYTHONPATH.
set -u
cd "$(dirname "$0")/.."
OUT=${1:-bench/results}; DEVICE=${2:-cuda}
PY=${PYTHON:-python3}
export PYTHONUNBUFFERED=1 MZATTN_DATA=${MZATTN_DATA:-/tmp/mzdata}
"$PY" -c "import mzattn.bench, mzattn.baselines" 2>/dev/null || {
  for d in baselines datasets repro bench; do [ -e "mzattn/$d" ] || ln -sfn "../$d" "mzattn/$d"; done
  export PYTHONPATH=$PWD${PYTHONPATH:+:$PYTHONPATH}; }
if [ "$DEVICE" = cuda ] && ! "$PY" -c "import torch, sys; sys.exit(not torch.cuda.is_available())"; then
  echo "gpu_check: no CUDA device visible; run 'bash bench/gpu_check.sh OUTDIR cpu' for the CPU parts" >&2
  exit 2
fi
SLUG=$("$PY" -m mzattn.bench.gpu_report slug "$DEVICE")
W=$OUT/gpu_check_$SLUG; mkdir -p "$W"; LOG=$W/log.txt; : >"$LOG"; : >"$W/stages.tsv"
T0=$(date +%s)
stage() {  # stage NAME LIMIT_S COMMAND...: runs COMMAND under `timeout`, logs and times it
  local name=$1 limit=$2 start rc; shift 2
  case ",${GPU_CHECK_STAGES:-$name}," in  # GPU_CHECK_STAGES=tests_cuda,step_profile: only those
    *",$name,"*) ;;
    *) skip "$name" "not in GPU_CHECK_STAGES"; return ;;
  esac
  start=$(date +%s); echo "=== [$((start - T0))s] $name (limit ${limit}s)" | tee -a "$LOG"
  timeout -k 10 "$limit" "$@" >>"$LOG" 2>&1; rc=$?
  printf '%s\t%s\t%s\t%s\n' "$name" "$(( $(date +%s) - start ))" "$rc" "$limit" >>"$W/stages.tsv"
}
skip() { echo "=== $1: skipped ($2)" | tee -a "$LOG"; printf '%s\t0\tskipped\t0\n' "$1" >>"$W/stages.tsv"; }
opt_in() {  # opt_in NAME LIMIT COMMAND...: a stage that runs only when GPU_CHECK_STAGES names it
  case ",${GPU_CHECK_STAGES:-}," in
    *",$1,"*) stage "$@" ;;
    *) skip "$1" "opt-in: GPU_CHECK_STAGES=$1" ;;
  esac
}

{ nvidia-smi 2>/dev/null || true; "$PY" -c "import torch, torch_geometric; print('torch', torch.__version__, 'pyg', torch_geometric.__version__)"; } >>"$LOG" 2>&1
if [ "$DEVICE" = cuda ]; then
  stage tests_cuda 120 "$PY" -m pytest -q -p no:cacheprovider tests/cuda -o addopts="" -rfE \
    --junitxml="$W/tests_cuda.xml"
  stage step_profile 100 "$PY" -m mzattn.bench.step_profile --device cuda --steps 10 \
    --out "$W/step_profile.json"
  stage set_pooling 100 "$PY" -m mzattn.repro bench --suites set_pooling --device cuda \
    --repeats 5 --out "$W"
  stage table30 80 "$PY" -m mzattn.repro bench --suites table30 --device cuda --repeats 5 --out "$W"
  stage cell 60 "$PY" -m mzattn.repro table3 --profile full --device cuda --columns d=8 \
    --models standard --seeds 1 --jobs 1 --cells-per-gpu 1 --threads 1 --out "$W/cell" --no-progress
  # issue 34, item 3: eager against --compile's static path with CUDA graphs, the measurement
  # that decides --compile's default on CUDA (compiling takes most of the stage)
  opt_in compile 300 "$PY" -m mzattn.bench.compiled --harness --device cuda \
    --models standard,mz-full --sets 128 --repeats 10 --out "$W/compiled.json"
  # issue 34, item 6: seeds stacked against one after another and against K workers on the GPU
  opt_in seeds 120 "$PY" -m mzattn.bench.stacked_seeds --device cuda \
    --models deep-sets,standard,mz-full --seeds 3 --steps 10 --repeats 3 --threads 1 \
    --out "$W/stacked_seeds.json"
else
  skip tests_cuda 'no CUDA device: tests/cuda needs one'
  stage step_profile 200 "$PY" -m mzattn.bench.step_profile --device cpu --steps 1 \
    --models standard,deep-sets --out "$W/step_profile.json"
  skip set_pooling 'CPU numbers: make bench'
  skip table30 'CPU numbers: make bench'
  skip cell 'a paper-protocol cell on CPU takes hours'
  skip seeds 'CPU numbers: python -m mzattn.bench.stacked_seeds'
  skip compile 'CPU numbers: python -m mzattn.bench.compiled --harness'
fi
"$PY" -m mzattn.bench.gpu_report collect "$W" --out "$OUT/gpu_check_$SLUG.json"
echo "=== [$(( $(date +%s) - T0 ))s] done: $OUT/gpu_check_$SLUG.json" | tee -a "$LOG"
