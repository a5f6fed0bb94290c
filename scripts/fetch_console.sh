#!/usr/bin/env bash
# Install puppeteer-core (pinned in tests/console/package.json and its
# package-lock.json) into tests/console/node_modules, for the web console's
# browser tests (tests/console/, docs/console.md), which drive the system's
# Chromium (scripts/setup.sh installs Debian's chromium); scripts/test.sh
# calls this.
#
#   scripts/fetch_console.sh
#
# Idempotent: a quick no-op when the pinned version is already installed.
# Install scripts are skipped (--ignore-scripts): puppeteer-core downloads
# no browser, and nothing else needs one.
set -euo pipefail
cd "$(dirname "$0")/../tests/console"

VERSION="24.43.1"  # keep in step with package.json
INSTALLED="node_modules/puppeteer-core/package.json"

if [[ -f "$INSTALLED" ]] &&
  grep -q "\"version\": \"$VERSION\"" "$INSTALLED"; then
  echo "puppeteer-core $VERSION already in $(pwd)/node_modules"
  exit 0
fi
command -v npm >/dev/null || {
  echo "fetch_console.sh: npm not found; install Node.js 18 or later" >&2
  exit 1
}
npm ci --ignore-scripts --no-audit --no-fund
echo "puppeteer-core $VERSION installed in $(pwd)/node_modules"
