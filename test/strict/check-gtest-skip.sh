#!/usr/bin/env bash
# scripts/ctest-strict fails a run in which a GTest test skipped, in its
# body or in a helper it called, under GPULET_FAIL_ON_SKIP=1, and only then.
# The tests are registered in a ctest file of their own the way
# gtest_discover_tests registers every GTest test of the build (its
# SKIP_REGULAR_EXPRESSION), in a temporary directory so as not to touch
# the logs of the ctest run this check runs in.
#   check-gtest-skip.sh <scripts/ctest-strict> <fixture program>
set -uo pipefail
ctest_strict="$1" fixture="$2"
dir="$(mktemp -d /tmp/gpulet-strict-gtest.XXXXXX)"
trap 'rm -rf "$dir"' EXIT
for t in Passes SkipsInBody SkipsInHelper; do
  cat >>"$dir/CTestTestfile.cmake" <<EOT
add_test(StrictFixture.$t "$fixture" --gtest_filter=StrictFixture.$t)
set_tests_properties(StrictFixture.$t PROPERTIES SKIP_REGULAR_EXPRESSION "\\\\[  SKIPPED \\\\]")
EOT
done
cd "$dir" || exit 1
fail=0
expect() { # <want exit code> <what> <ctest -R regex> <env...>
  local want="$1" what="$2" regex="$3"
  shift 3
  out="$(env "$@" "$ctest_strict" -R "$regex" 2>&1)"
  got=$?
  if [[ "$got" != "$want" ]]; then
    echo "FAIL: $what: exit $got, want $want"
    echo "$out"
    fail=1
  else
    echo "ok: $what: exit $got"
  fi
}
expect 1 "a skip in the body, GPULET_FAIL_ON_SKIP=1" SkipsInBody GTEST_SKIP_FIXTURE_SKIP=1 GPULET_FAIL_ON_SKIP=1
expect 1 "a skip in a helper, GPULET_FAIL_ON_SKIP=1" SkipsInHelper GTEST_SKIP_FIXTURE_SKIP=1 GPULET_FAIL_ON_SKIP=1
expect 0 "skips, GPULET_FAIL_ON_SKIP=0" . GTEST_SKIP_FIXTURE_SKIP=1 GPULET_FAIL_ON_SKIP=0
expect 0 "no skip, GPULET_FAIL_ON_SKIP=1" . GTEST_SKIP_FIXTURE_SKIP= GPULET_FAIL_ON_SKIP=1
out="$(env GTEST_SKIP_FIXTURE_SKIP=1 GPULET_FAIL_ON_SKIP=1 "$ctest_strict" 2>&1)"
for t in SkipsInBody SkipsInHelper; do
  if ! grep -qE "StrictFixture\.$t .*\(Skipped\)" <<<"$out"; then
    echo "FAIL: the failure does not name StrictFixture.$t"
    echo "$out"
    fail=1
  fi
done
if ! grep -q "GPULET_FAIL_ON_SKIP=1 makes that a failure" <<<"$out"; then
  echo "FAIL: no strict-mode failure message"
  echo "$out"
  fail=1
fi
exit "$fail"
