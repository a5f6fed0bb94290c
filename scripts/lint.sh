#!/usr/bin/env bash
# Runs clang-tidy (.clang-tidy) over the components' sources, with the
# compile database of build/, and fails on any finding. The components are
# those of cmake/components.cmake, all of them unless some are named:
#
#   bash scripts/lint.sh [component...]
#
# Their .cc files are linted (the .cu files of cuda/ are nvcc's, not
# clang-tidy's), and their headers through them; a file the build does not
# compile (cuda/ without the CUDA toolkit) is skipped. Serial and slow:
# about 20 s of CPU a file, an hour for the ~170 files of all components
# (launch/'s 6 took 2 min 13 s); not part of CI for that reason.
set -euo pipefail
cd "$(dirname "$0")/.."
[ -f build/compile_commands.json ] || bash scripts/setup.sh build

mapfile -t components < <(cmake -P cmake/components.cmake)
if (($#)); then
  for c in "$@"; do
    printf '%s\n' "${components[@]}" | grep -qx "$c" ||
      { echo "lint: $c is no component (cmake/components.cmake)" >&2; exit 2; }
  done
  selected=("$@")
else
  selected=("${components[@]}")
fi

# The build's compile database without its precompiled header: clang
# cannot read GCC's (cmake_pch.hxx.gch), and each file must compile
# without it anyway.
mkdir -p build/lint
sed -E 's# -Winvalid-pch##; s# -include [^ ]*/cmake_pch\.hxx##' \
  build/compile_commands.json >build/lint/compile_commands.json
# The sources the build compiles, as the compile database names them.
compiled=$(sed -n 's/^ *"file": "\(.*\)",\{0,1\}$/\1/p' build/lint/compile_commands.json)
files=()
for c in "${selected[@]}"; do
  while IFS= read -r f; do
    if grep -qxF "$PWD/$f" <<<"$compiled"; then
      files+=("$f")
    else
      echo "lint: skipping $f (not in build/compile_commands.json)" >&2
    fi
  done < <(git ls-files "$c/*.cc")
done
((${#files[@]})) || { echo "lint: no files" >&2; exit 0; }

# Headers: those of every component (a finding in a header is reported
# with the first file that includes it).
filter="^$PWD/($(IFS='|'; echo "${components[*]}"))/"
echo "lint: ${#files[@]} files of ${selected[*]}" >&2
clang-tidy -p build/lint --quiet --header-filter="$filter" --warnings-as-errors='*' \
  "${files[@]}"
