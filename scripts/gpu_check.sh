#!/usr/bin/env bash
# gpu_check.sh: the GPU measurements of the issues, run on a machine with an NVIDIA GPU, JAX's
# CUDA PJRT plugin and PyTorch, but no Go: everything it runs was built by `make gpu-bundle`
# into dev/gpu/ (carry that folder). Prints JSON lines, goaccel's and PyTorch's side by side.
#
#   bash dev/gpu/gpu_check.sh           # from the repository root on the GPU machine
#   BENCH_ARGS="--work base" bash dev/gpu/gpu_check.sh    # only some of goaccel bench's works
set -uo pipefail
here="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"
out="${OUT:-/tmp}"
site="$(python3 -c 'import site;print(site.getsitepackages()[0])')"
plugin="$(ls "$site"/jax_plugins/xla_cuda*/xla_cuda_plugin.so 2>/dev/null | sort -r | head -n 1)"
echo "gpu_check: CUDA plugin: ${plugin:-none found}"
export GOMLX_NO_AUTO_INSTALL=1
# Issue 12: every work of goaccel bench (MLP h4096 B4096, tiny, MiniLM B64 L128, base B32 L128;
# tf32 and bf16; 1 device and all GPUs), goaccel and PyTorch alternating in one run.
# It writes results.jsonl, table.txt and ratios.png under $OUT/bench.
"$here/goaccel" bench --backend xla:cuda --python python3 --torch_script "$here/bench_torch.py" \
  --run_dir "$out/bench" ${BENCH_ARGS:-}
# Issue 12, time to first step: BERT-base's training step twice with XLA's persistent GPU caches
# (autotuning results per fusion, compiled kernels): the first run is a cold start, the second
# a warm one. If this XLA rejects a flag it aborts only these two runs.
cache="$out/xla-gpu-cache"; rm -rf "$cache"; mkdir -p "$cache/autotune"
for run in cold warm; do
  XLA_FLAGS="${XLA_FLAGS:-} --xla_gpu_per_fusion_autotune_cache_dir=$cache/autotune --xla_gpu_kernel_cache_file=$cache/kernels.bin" \
    "$here/goaccel" bench --backend xla:cuda --work base --precision bf16 --rounds 1 --steps 5 --python none \
    --run_dir "$out/ttfs-$run" 2>&1 | grep -v '^{' | sed "s/^/ttfs $run: /"
done
# Issue 2: MLP 512 -> 4 x 4096 -> 10, Adam, batch 4096: goaccel vs GoMLX's trainer.
"$here/mlp" --backend xla:cuda --hidden 4096 --batch 4096 --steps 30 --rounds 3 --warmup 5
# Issue 6: the tiny-default example on the GPU (speed of the whole program).
"$here/bert_classify" --backend xla:cuda --epochs 3 --batch_size 64 --output_dir "$out/gpu_run"
