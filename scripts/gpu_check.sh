#!/usr/bin/env bash
# gpu_check.sh: goaccel's run on a GPU machine that has an NVIDIA GPU, Python with JAX's CUDA
# plugin (jax[cuda12] or jax[cuda13]), PyTorch and transformers, but no Go and no network.
# Everything it runs comes from `make gpu-bundle` (dev/gpu/: this script, the xz-compressed
# binaries goaccel, bert_classify and quickstart with MPICH's libmpi.so.12 and libfabric, the
# reference losses, PyTorch's bench script); carry that folder and run it there.
#
#   bash dev/gpu/gpu_check.sh             # on the GPU machine; results in $OUT (default /tmp/gpu_check)
#   bash dev/gpu/gpu_check.sh --dry-run   # on XLA's CPU plugin: every part, tiny shapes, 1 step
#
# It fits a lease of a few minutes: each part has a cap and runs only while the budget
# (GPU_CHECK_BUDGET_S, default 285 s; 600 s for the dry run) lasts; a part that does not fit is written down as
# skipped. Parts, in order (what is judged first):
#   env       goaccel env: the CUDA plugin, NVIDIA's libraries it is pointed at, the devices
#   parity    quickstart and the tiny bert_classify (30 updates) with TF32 off against the
#             losses recorded on a CPU (gpu_references.json; largest relative difference,
#             passing at 2e-5)
#   launch    2 processes sharing the GPU (each 0.45 of its memory) under goaccel launch:
#             bert_classify at global batch 32 against the same references, and the share of
#             a step spent in all-reduces (from the processes' timelines)
#   bench     goaccel bench at the GPU shapes against PyTorch in the same run: the MLP in
#             fp32, tf32 and bf16, then BERT-base, MiniLM and tiny in bf16
#   parity    the same two programs with TF32 on, reported
#   ttfs      BERT-base's first update with XLA's GPU caches cold, then warm (if time is left;
#             the dry run: a tiny MLP, cold only)
# Results, 7 files in $OUT: summary.txt (a line per part), env.txt, parity.jsonl (the loss
# comparisons and the sync share), runs.log, bench.jsonl, bench.txt, launch.log. The exit status is 1 when a part failed.
set -uo pipefail
here="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"
dry=0
case "${1:-}" in
  --dry-run) dry=1 ;;
  "") ;;
  *) echo "gpu_check.sh: unknown argument $1 (only --dry-run)" >&2; exit 2 ;;
esac
out="${OUT:-/tmp/gpu_check}"
mkdir -p "$out" || exit 1
budget="${GPU_CHECK_BUDGET_S:-285}"
((dry)) && budget="${GPU_CHECK_BUDGET_S:-600}" # here the parts must all run, however loaded the machine
py="${GPU_CHECK_PYTHON:-python3}"
work="$(mktemp -d "${TMPDIR:-/tmp}/gpu_check.XXXXXX")" || exit 1
trap 'rm -rf "$work"' EXIT
summary="$out/summary.txt"
: >"$summary"; : >"$out/parity.jsonl"; : >"$out/runs.log"; : >"$out/bench.jsonl"; : >"$out/bench.txt"; : >"$out/launch.log"
failed=0
note() { echo "$*" | tee -a "$summary"; }

# cap N: the seconds a part capped at N may run, within what is left of the budget (0: skip).
cap() {
  local left=$((budget - SECONDS))
  if ((left < 10)); then echo 0; elif ((left < $1)); then echo "$left"; else echo "$1"; fi
}
# run CAP LOG CMD...: runs CMD under timeout, appending its output to LOG; its exit status.
run() {
  local c=$1 log=$2; shift 2
  echo "+ $*" >>"$log"
  timeout --kill-after=10 "$c" "$@" >>"$log" 2>&1
}

# The bundle: binaries in bin/, MPICH in home/mpich/lib (goaccel's home layout).
if [ -f "$here/goaccel-bundle.tar.xz" ]; then
  tar -C "$work" -xJf "$here/goaccel-bundle.tar.xz" 2>/dev/null ||
    "$py" -c 'import sys, tarfile; tarfile.open(sys.argv[1]).extractall(sys.argv[2])' "$here/goaccel-bundle.tar.xz" "$work" || {
      note "bundle: cannot unpack $here/goaccel-bundle.tar.xz"; exit 1; }
else
  note "bundle: $here/goaccel-bundle.tar.xz is missing (make gpu-bundle)"; exit 1
fi
bin="$work/bin"
export GOMLX_NO_AUTO_INSTALL=1
if ((dry)); then
  # The CPU plugin from the goaccel home this machine has (make's .deps), MPICH from the bundle.
  if [ -z "${PJRT_PLUGIN_LIBRARY_PATH:-}" ]; then
    plugin="$(ls "${GOACCEL_HOME:-$HOME/.local/share/goaccel}"/pjrt-cpu/*/*.so 2>/dev/null | head -n 1)"
    [ -n "$plugin" ] && export PJRT_PLUGIN_LIBRARY_PATH="$plugin"
  fi
  export GOMLX_BACKEND=xla:cpu GOACCEL_DEVICES=1
  backend=xla:cpu
  mode="dry run (XLA's CPU plugin, tiny shapes, 1 step)"
else
  export GOMLX_BACKEND=xla:cuda
  backend=xla:cuda
  mode="GPU run"
fi
export GOACCEL_HOME="$work/home"
note "gpu_check: $mode; $(date -u '+%Y-%m-%d %H:%M UTC'); $(uname -n); load $(cut -d' ' -f1-3 /proc/loadavg); budget ${budget}s"

# env ---------------------------------------------------------------------------------------
{
  echo "bundle: $(du -sh "$here" | cut -f1) carried, $(du -sh "$work" | cut -f1) unpacked"
  command -v nvidia-smi >/dev/null && nvidia-smi -L
  "$bin/goaccel" env
} >"$out/env.txt" 2>&1
if grep -q "accelerator.New would pick: $backend" "$out/env.txt"; then
  note "env: ok: $(grep -m1 'accelerator.New would pick' "$out/env.txt" | cut -c3-)"
else
  note "env: FAILED: accelerator.New does not pick $backend (env.txt)"; failed=1
fi
grep -m1 "NVIDIA libraries" "$out/env.txt" | sed 's/^ */env: /' >>"$summary"

# losses ARGS...: gpu_losses.py against the bundle's references, its JSON lines in parity.jsonl.
losses() {
  local cmd=$1; shift
  "$py" "$here/gpu_losses.py" --references "$here/gpu_references.json" "$cmd" "$@" --jsonl "$out/parity.jsonl"
}

bert_args=(--global_batch_size 32 --max_steps 30 --logging_steps 1 --dropout 0)
((dry)) && bert_args=(--global_batch_size 32 --max_steps 1 --logging_steps 1 --dropout 0)

# parity TF32: the quickstart and bert_classify with GOACCEL_TF32=TF32 against the references:
# judged at 2e-5 with TF32 off, reported with it on; "unset" in the dry run (goaccel refuses
# TF32 on the CPU plugin).
parity() {
  local tf32=$1 tol=(--tolerance 2e-5) env=() t0 c r log rd
  [ "$tf32" = on ] && tol=()
  [ "$tf32" != unset ] && env=(GOACCEL_TF32="$tf32")
  t0=$SECONDS
  log="$work/quickstart-tf32-$tf32.out"
  c=$(cap 45)
  if ((c == 0)); then
    note "parity quickstart tf32 $tf32: skipped (budget)"
  elif run "$c" "$log" env "${env[@]}" "$bin/quickstart"; then
    r=$(losses compare quickstart "$log" --label "tf32 $tf32" "${tol[@]}") || failed=1
    note "parity $r ($((SECONDS - t0))s)"
  else
    note "parity quickstart tf32 $tf32: FAILED or cut at ${c}s (runs.log)"; failed=1
  fi
  cat "$log" >>"$out/runs.log" 2>/dev/null
  t0=$SECONDS
  rd="$work/bert-tf32-$tf32"
  c=$(cap 75)
  if ((c == 0)); then
    note "parity bert_classify tf32 $tf32: skipped (budget)"
  elif run "$c" "$out/runs.log" env "${env[@]}" "$bin/bert_classify" "${bert_args[@]}" --output_dir "$rd"; then
    r=$(losses compare bert_classify "$rd" --label "tf32 $tf32" "${tol[@]}") || failed=1
    note "parity $r ($((SECONDS - t0))s)"
  else
    note "parity bert_classify tf32 $tf32: FAILED or cut at ${c}s (runs.log)"; failed=1
  fi
}

# launch: 2 processes sharing the GPU, each with 0.45 of its memory, bert_classify at the same
# global batch: the losses against the same references, and the all-reduces' share of a step.
launch() {
  local t0=$SECONDS rd="$work/launch" c r s lenv=(GOACCEL_TIMELINE="$work/timeline")
  c=$(cap 75)
  if ((c == 0)); then note "launch: skipped (budget)"; return; fi
  if ((dry)); then lenv+=(GOACCEL_DEVICES=2); else lenv+=(GOACCEL_MEMORY_FRACTION=0.45 GOACCEL_TF32=off); fi
  if run "$c" "$out/launch.log" env "${lenv[@]}" "$bin/goaccel" launch --nproc_per_node 2 --log-dir "$work/launch-logs" \
    "$bin/bert_classify" "${bert_args[@]}" --output_dir "$rd"; then
    r=$(losses compare bert_classify "$rd" --label "2 processes" --tolerance 2e-5) || failed=1
    s=$(losses sync "$work/timeline" --label "2 processes") || failed=1
    note "launch $r; $s ($((SECONDS - t0))s)"
  else
    cat "$work"/launch-logs/*/rank_*/stderr.log >>"$out/launch.log" 2>/dev/null
    note "launch 2 processes: FAILED or cut at ${c}s (launch.log)"; failed=1
  fi
}

# bench NAME CAP ARGS...: one goaccel bench run against PyTorch; its results go to
# bench.jsonl, its log and table to bench.txt (its JSON lines there too, should the cap cut it).
bench() {
  local name=$1 c; c=$(cap "$2"); shift 2
  if ((c == 0)); then note "bench $name: skipped (budget)"; return; fi
  local t0=$SECONDS rd="$work/bench-$name"
  run "$c" "$out/bench.txt" "$bin/goaccel" bench --backend "$backend" --python "$py" \
    --torch_script "$here/bench_torch.py" --run_dir "$rd" "$@"
  local rc=$?
  cat "$rd/results.jsonl" >>"$out/bench.jsonl" 2>/dev/null
  if ((rc == 0)); then note "bench $name: ok ($((SECONDS - t0))s; bench.txt)"
  else note "bench $name: FAILED or cut at ${c}s, exit $rc ($((SECONDS - t0))s; bench.txt)"; failed=1; fi
}

# The order puts what is judged first, should the budget run out.
if ((dry)); then
  parity unset
  launch
  bench mlp 60 --work mlp:hidden=32:layers=1:batch=8 --precision fp32 --rounds 1 --steps 1 --warmup 0
  bench bert 60 --work tiny:batch=4:seq=16:layers=1 --precision bf16 --rounds 1 --steps 1 --warmup 0
else
  parity off
  launch
  bench mlp 70 --work mlp --precision fp32,tf32,bf16 --rounds 2 --steps 20 --warmup 2
  bench base 60 --work base --precision bf16 --rounds 1 --steps 10 --warmup 2
  bench minilm 40 --work minilm --precision bf16 --rounds 1 --steps 10 --warmup 2
  bench tiny 30 --work tiny --precision bf16 --rounds 1 --steps 10 --warmup 2
  parity on
fi

# ttfs --------------------------------------------------------------------------------------
# BERT-base's first update with XLA's persistent GPU caches (autotuning per fusion, compiled
# kernels): cold, then warm. If this XLA rejects a flag it aborts only these runs.
cache="$work/xla-cache"
mkdir -p "$cache/autotune"
ttfs_work=(--work base --precision bf16)
temps=(cold warm)
if ((dry)); then ttfs_work=(--work mlp:hidden=32:layers=1:batch=8 --precision fp32); temps=(cold); fi
for temp in "${temps[@]}"; do
  c=$(cap 45)
  if ((c == 0)); then note "ttfs $temp: skipped (budget)"; continue; fi
  t0=$SECONDS
  flags="${XLA_FLAGS:-}"
  ((dry)) || flags="$flags --xla_gpu_per_fusion_autotune_cache_dir=$cache/autotune --xla_gpu_kernel_cache_file=$cache/kernels.bin"
  if XLA_FLAGS="$flags" run "$c" "$out/bench.txt" "$bin/goaccel" bench --backend "$backend" "${ttfs_work[@]}" \
    --rounds 1 --steps 1 --warmup 0 --python none --run_dir "$work/ttfs-$temp" >/dev/null; then
    cat "$work/ttfs-$temp/results.jsonl" >>"$out/bench.jsonl" 2>/dev/null
    note "ttfs $temp: ok ($((SECONDS - t0))s in all; first step in bench.txt's table)"
  else
    note "ttfs $temp: FAILED or cut at ${c}s ($((SECONDS - t0))s; bench.txt)"
  fi
done

note "gpu_check: done in ${SECONDS}s of ${budget}s; $( ((failed)) && echo "some part FAILED" || echo "every part passed")"
exit "$failed"
