#!/usr/bin/env bash
# Installs schemathesis (PyPI) into .tools/schemathesis for the API conformance run
# (test/e2e/schemathesis.test.ts), unless it is there already. Its command is
# .tools/schemathesis/bin/st, run with PYTHONPATH=.tools/schemathesis.
set -euo pipefail
cd "$(dirname "$0")/.."
target=.tools/schemathesis
if PYTHONPATH="$target" python3 -c "import schemathesis" >/dev/null 2>&1; then
  echo "schemathesis: present"; exit 0
fi
echo "schemathesis: installing into $target"
python3 -m pip install --quiet --disable-pip-version-check --target "$target" 'schemathesis>=4,<5' 2>&1 | grep -v "Running pip as the 'root' user\|is ignored: it is neither" || true
PYTHONPATH="$target" python3 -c "import schemathesis" && echo "schemathesis: installed"
