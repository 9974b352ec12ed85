#!/usr/bin/env bash
# scripts/go-test fails a run with a skipped Go test under
# GPULET_FAIL_ON_SKIP=1, and only then; and a run whose -run filter matched
# no test (a renamed test), whatever GPULET_FAIL_ON_SKIP says.
#   check-go-skip.sh <scripts/go-test> <go binary> <fixture module dir>
set -uo pipefail
go_test="$1" go="$2" dir="$3"
cd "$dir" || exit 1
export GOFLAGS=-mod=readonly GOPROXY=off
fail=0
run_filter=()
expect() { # <want exit code> <what> <env...>
  local want="$1" what="$2"
  shift 2
  out="$(env "$@" "$go_test" "$go" -count=1 "${run_filter[@]}" ./... 2>&1)"
  got=$?
  if [[ "$got" != "$want" ]]; then
    echo "FAIL: $what: exit $got, want $want"
    echo "$out"
    fail=1
  else
    echo "ok: $what: exit $got"
  fi
}
expect 1 "a skipped subtest, GPULET_FAIL_ON_SKIP=1" GOSKIP_FIXTURE_SKIP=1 GPULET_FAIL_ON_SKIP=1
expect 0 "a skipped subtest, GPULET_FAIL_ON_SKIP unset" GOSKIP_FIXTURE_SKIP=1 GPULET_FAIL_ON_SKIP=
expect 0 "no skip, GPULET_FAIL_ON_SKIP=1" GOSKIP_FIXTURE_SKIP= GPULET_FAIL_ON_SKIP=1
for filter in "-run ^TestRenamed$" "-run=^TestRenamed$"; do
  read -ra run_filter <<<"$filter"
  expect 1 "$filter (matches no test), GPULET_FAIL_ON_SKIP=0" GOSKIP_FIXTURE_SKIP= GPULET_FAIL_ON_SKIP=0
done
run_filter=(-run '^TestRuns$')
expect 0 "-run ^TestRuns\$ (matches), GPULET_FAIL_ON_SKIP=1" GOSKIP_FIXTURE_SKIP= GPULET_FAIL_ON_SKIP=1
run_filter=(-skip '^TestRuns$|^TestMaySkip$')
expect 0 "-skip of every test, without -run" GOSKIP_FIXTURE_SKIP= GPULET_FAIL_ON_SKIP=1
run_filter=(-run '^TestRenamed$')
out="$(env GPULET_FAIL_ON_SKIP=0 "$go_test" "$go" -count=1 "${run_filter[@]}" ./... 2>&1)"
if ! grep -q "the -run filter matched no test" <<<"$out" || ! grep -q "goskip.*\[no tests to run\]" <<<"$out"; then
  echo "FAIL: the failure does not name the package"
  echo "$out"
  fail=1
fi
run_filter=()
out="$(env GOSKIP_FIXTURE_SKIP=1 GPULET_FAIL_ON_SKIP=1 "$go_test" "$go" -count=1 ./... 2>&1)"
if ! grep -q -- "--- SKIP: TestMaySkip/inner" <<<"$out" || ! grep -q "GPULET_FAIL_ON_SKIP=1 makes that a failure" <<<"$out"; then
  echo "FAIL: the failure does not name the skipped test"
  echo "$out"
  fail=1
fi
exit "$fail"
