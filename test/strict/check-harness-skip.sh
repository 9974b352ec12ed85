#!/usr/bin/env bash
# `kubelet-harness run` fails a run in which a scenario was skipped (did not
# apply to the plugin) under GPULET_FAIL_ON_SKIP=1, and only then: against
# its built-in fake plugin, shared-limit skips without --shared-limit.
#   check-harness-skip.sh <kubelet-harness binary>
set -uo pipefail
harness="$1"
fail=0
expect() { # <want exit code> <what> <env and scenarios...>
  local want="$1" what="$2"
  shift 2
  local env=() args=()
  for a in "$@"; do
    if [[ "$a" == *=* ]]; then env+=("$a"); else args+=("$a"); fi
  done
  out="$(env "${env[@]}" "$harness" run "${args[@]}" 2>&1)"
  got=$?
  if [[ "$got" != "$want" ]]; then
    echo "FAIL: $what: exit $got, want $want"
    echo "$out"
    fail=1
  else
    echo "ok: $what: exit $got"
  fi
}
expect 1 "a skipped scenario, GPULET_FAIL_ON_SKIP=1" GPULET_FAIL_ON_SKIP=1 register shared-limit
if ! grep -q "^--- SKIP shared-limit" <<<"$out" ||
  ! grep -q "scenarios skipped (shared-limit), and GPULET_FAIL_ON_SKIP=1 makes that a failure" <<<"$out"; then
  echo "FAIL: the failure does not name the skipped scenario"
  echo "$out"
  fail=1
fi
expect 0 "a skipped scenario, GPULET_FAIL_ON_SKIP=0" GPULET_FAIL_ON_SKIP=0 register shared-limit
expect 0 "no skip, GPULET_FAIL_ON_SKIP=1" GPULET_FAIL_ON_SKIP=1 register
exit "$fail"
