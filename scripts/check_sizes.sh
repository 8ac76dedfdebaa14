#!/usr/bin/env bash
# check_sizes.sh fails when a tracked file is over 1 MB (1,048,576 bytes), except the fixtures
# named in ALLOWED below. Binaries, weights and data sets are installed or built, never committed.
# Run from anywhere inside the checkout: `bash scripts/check_sizes.sh`.
set -euo pipefail
cd "$(git rev-parse --show-toplevel)"
LIMIT=1048576
# Fixtures allowed above the limit, one path a line (none today).
ALLOWED=()
status=0
while IFS= read -r -d '' f; do
  [ -f "$f" ] || continue
  size=$(stat -c %s "$f")
  [ "$size" -le "$LIMIT" ] && continue
  for a in "${ALLOWED[@]+"${ALLOWED[@]}"}"; do [ "$a" = "$f" ] && continue 2; done
  echo "check_sizes: $f is tracked and $size bytes, over the 1 MB limit (git rm --cached it, or name it in scripts/check_sizes.sh's ALLOWED)" >&2
  status=1
done < <(git ls-files -z)
[ "$status" -eq 0 ] && echo "check_sizes: no tracked file over 1 MB"
exit "$status"
