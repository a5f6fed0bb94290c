#!/usr/bin/env bash
# Formats the C++ sources in place, or with --check fails listing the files
# that clang-format would change.
set -euo pipefail
cd "$(dirname "$0")/.."
# Tracked files and new ones not yet added (ignored files are not ours).
mapfile -t files < <(git ls-files --cached --others --exclude-standard \
  '*.h' '*.cc' '*.cu')
if [ "${1:-}" = "--check" ]; then
  # Batches of files over every core (one clang-format per file spent a
  # minute starting processes); only a failing batch is checked file by
  # file, to name the files.
  if printf '%s\0' "${files[@]}" |
    xargs -0 -r -n 40 -P "$(nproc)" \
      clang-format --dry-run -Werror >/dev/null 2>&1; then
    echo "format: ${#files[@]} files clean" >&2
    exit 0
  fi
  bad=()
  for f in "${files[@]}"; do
    clang-format --dry-run -Werror "$f" >/dev/null 2>&1 || bad+=("$f")
  done
  if ((${#bad[@]})); then
    echo "not clang-formatted (run scripts/format.sh): ${bad[*]}" >&2
    exit 1
  fi
  echo "format: ${#files[@]} files clean" >&2
else
  clang-format -i "${files[@]}"
fi
