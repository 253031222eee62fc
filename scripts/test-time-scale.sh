#!/usr/bin/env bash
# Prints the factor the tests stretch their deadlines by (PIPELINE_TEST_TIME_SCALE, read by
# test/helpers/time-scale.ts): the 1-minute load average per core, at least 1, at most 10.
# A machine twice as busy as it has cores gets twice the time; the bound only stops a hang.
set -euo pipefail
awk -v cores="$(nproc)" '{ s = $1 / cores; if (s < 1) s = 1; if (s > 10) s = 10; printf "%.1f\n", s }' /proc/loadavg 2>/dev/null || echo 1
