#!/usr/bin/env bash
# The runs of docs/endtoend.md, one at a time: for each model folder, examples/bert_classify
# (goaccel's default device count, --devices 1, --mixed_precision bf16) and
# scripts/finetune_torch.py (fp32, --bf16 autocast) on the same split, one epoch (or
# E2E_STEPS optimizer steps of it), global batch 64, max_len 64, seed 7, each under
# scripts/e2e_measure.py (wall, user+sys CPU, peak RSS, load before and after).
#
#   go build -o /tmp/bc ./examples/bert_classify
#   go run scripts/write_split.go --data_dir DATA --seed 7 --out /tmp/split-7
#   E2E_STEPS=25 scripts/e2e_table.sh DATA /tmp/split-7 OUT_DIR MODEL_DIR...
#
# E2E_STEPS unset or 0: the whole epoch. E2E_ONLY: a space-separated subset of the run names
# (go-default go-dev1 go-bf16 go-bf16-dev1 pt-fp32 pt-bf16). Needs GOACCEL_HOME and E2E_PYTHON (a python
# with torch and transformers); E2E_BC is the bert_classify binary (default /tmp/bc).
set -euo pipefail
if [ $# -lt 4 ]; then
	echo "usage: $0 DATA_DIR SPLIT_DIR OUT_DIR MODEL_DIR..." >&2
	exit 2
fi
data=$1 split=$2 out=$3
shift 3
here=$(cd "$(dirname "$0")" && pwd)
py=${E2E_PYTHON:?set E2E_PYTHON to a python with torch and transformers}
bc=${E2E_BC:-/tmp/bc}
steps=${E2E_STEPS:-0}
only=${E2E_ONLY:-go-default pt-fp32 go-dev1 pt-bf16 go-bf16 go-bf16-dev1}
mkdir -p "$out"
go_steps=() pt_steps=()
if [ "$steps" -gt 0 ]; then
	go_steps=(--max_steps "$steps" --logging_steps 1)
	pt_steps=(--max_steps "$steps")
fi
for model in "$@"; do
	fam=$(basename "$model")
	for run in $only; do
		name=$fam-$run
		common=(--data_dir "$data" --model_dir "$model" --epochs 1 --global_batch_size 64 --max_len 64 --seed 7
			--output_dir "$out/$name" "${go_steps[@]}")
		case $run in
		go-default) cmd=("$bc" "${common[@]}") ;;
		go-dev1) cmd=("$bc" "${common[@]}" --devices 1) ;;
		go-bf16) cmd=("$bc" "${common[@]}" --mixed_precision bf16) ;;
		go-bf16-dev1) cmd=("$bc" "${common[@]}" --mixed_precision bf16 --devices 1) ;;
		pt-fp32) cmd=("$py" "$here/finetune_torch.py" --split "$split" --model_dir "$model" --seed 7 "${pt_steps[@]}") ;;
		pt-bf16) cmd=("$py" "$here/finetune_torch.py" --split "$split" --model_dir "$model" --seed 7 --bf16 "${pt_steps[@]}") ;;
		*)
			echo "$0: unknown run $run in E2E_ONLY" >&2
			exit 2
			;;
		esac
		rm -rf "${out:?}/$name"
		"$py" "$here/e2e_measure.py" --name "$name" --record "$out/runs.jsonl" \
			--metrics "$out/$name/metrics.jsonl" --first_step 5 -- "${cmd[@]}" || echo "$name failed" >&2
	done
done
