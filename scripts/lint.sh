#!/usr/bin/env bash
# Runs clang-tidy (.clang-tidy) over the project's sources using the compile
# database of build/. Slow (~1 min per component on 2 cores); not part of CI.
set -euo pipefail
cd "$(dirname "$0")/.."
[ -f build/compile_commands.json ] || bash scripts/setup.sh build
mapfile -t files < <(git ls-files 'common/*.cc' 'graph/*.cc' 'estimator/*.cc' \
  'placer/*.cc' 'split/*.cc' 'scheduler/*.cc' 'cli/*.cc')
clang-tidy -p build --quiet "${files[@]}"
