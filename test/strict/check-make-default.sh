#!/usr/bin/env bash
# `make test-unit` and `make test-asan` run their tests in strict mode
# (GPULET_FAIL_ON_SKIP=1) unless the developer sets GPULET_FAIL_ON_SKIP
# themselves. Each runs here against a stand-in build directory: an empty
# build.ninja and one ctest test that records the variable it was given.
# bootstrap and the ASan build are taken as done (make -o).
#   check-make-default.sh <source dir>
set -uo pipefail
src="$1"
dir="$(mktemp -d /tmp/gpulet-strict-make.XXXXXX)"
trap 'rm -rf "$dir"' EXIT
for b in unit asan; do
  mkdir "$dir/$b"
  : >"$dir/$b/build.ninja"
  cat >"$dir/$b/CTestTestfile.cmake" <<EOT
add_test(env_probe sh -c "printf '[%s]' \"\\\${GPULET_FAIL_ON_SKIP-unset}\" >$dir/seen")
EOT
done
fail=0
expect() { # <target> <want recorded> <what> [env and make arguments...]
  local target="$1" want="$2" what="$3"
  shift 3
  local env=() args=()
  for a in "$@"; do
    if [[ "$a" == env:* ]]; then env+=("${a#env:}"); else args+=("$a"); fi
  done
  rm -f "$dir/seen"
  out="$(env -u GPULET_FAIL_ON_SKIP -u MAKEFLAGS -u MFLAGS -u MAKELEVEL "${env[@]}" \
    make -s -C "$src" -o bootstrap -o build-asan-only BUILD="$dir/unit" ASAN_BUILD="$dir/asan" \
    JOBS=1 "${args[@]}" "$target" 2>&1)"
  got="$(cat "$dir/seen" 2>/dev/null)"
  if [[ "$got" != "$want" ]]; then
    echo "FAIL: make $target, $what: the tests saw GPULET_FAIL_ON_SKIP=$got, want $want"
    echo "$out"
    fail=1
  else
    echo "ok: make $target, $what: $got"
  fi
}
for target in test-unit test-asan; do
  expect "$target" "[1]" "by default"
  expect "$target" "[0]" "GPULET_FAIL_ON_SKIP=0 in the environment" env:GPULET_FAIL_ON_SKIP=0
  expect "$target" "[0]" "GPULET_FAIL_ON_SKIP=0 on the command line" GPULET_FAIL_ON_SKIP=0
done
exit "$fail"
