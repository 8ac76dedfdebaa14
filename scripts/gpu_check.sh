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
# Issue 2: MLP 512 -> 4 x 4096 -> 10, Adam, batch 4096: goaccel vs GoMLX's trainer.
"$here/mlp" --backend xla:cuda --hidden 4096 --batch 4096 --steps 30 --rounds 3 --warmup 5
# Issue 6: the tiny-default example on the GPU (speed of the whole program).
"$here/bert_classify" --backend xla:cuda --epochs 3 --batch_size 64 --output_dir "$out/gpu_run"
