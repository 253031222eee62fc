#!/usr/bin/env bash
# Installs moto's SQS-compatible server (PyPI `moto[server]`) into .tools/pip for the
# SQS DLQ provider's tests, unless python3 can already import it.
set -euo pipefail
cd "$(dirname "$0")/.."
if PYTHONPATH=".tools/pip${PYTHONPATH:+:$PYTHONPATH}" python3 -c "import moto.server" >/dev/null 2>&1; then
  echo "moto: present"; exit 0
fi
echo "moto: installing moto[server] into .tools/pip"
python3 -m pip install --quiet --disable-pip-version-check --target .tools/pip 'moto[server]' 2>&1 | grep -v "Running pip as the 'root' user\|is ignored: it is neither" || true
PYTHONPATH=.tools/pip python3 -c "import moto.server" && echo "moto: installed"
