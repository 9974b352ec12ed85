#!/bin/sh
# The Debian packages that own the shared libraries gpulet's binaries load,
# so the image's run-time stage (deploy/Containerfile) installs exactly those.
#
#   runtime-libs.sh list BINARY...           print the packages, one a line
#   runtime-libs.sh check LIST BINARY...     exit 1 unless LIST (a file, one
#                                            package a line, # comments)
#                                            names exactly those packages
#
# Used by the image build and by the ctest test deploy_runtime_packages, so
# a new library dependency fails `make test` instead of the pod start-up.
set -eu

list() {
  paths=""
  for bin in "$@"; do
    [ -x "$bin" ] || { echo "runtime-libs.sh: not an executable: $bin" >&2; return 1; }
    out=$(ldd "$bin") || { echo "runtime-libs.sh: ldd $bin failed" >&2; return 1; }
    if printf '%s\n' "$out" | grep -q 'not found'; then
      echo "runtime-libs.sh: $bin: unresolved library:" >&2
      printf '%s\n' "$out" | grep 'not found' >&2
      return 1
    fi
    # "libx.so.1 => /path (0x..)" and "/lib64/ld-linux-x86-64.so.2 (0x..)";
    # the vdso has no path.
    paths="$paths
$(printf '%s\n' "$out" | awk '$2 == "=>" && $3 ~ /^\// {print $3} $1 ~ /^\// {print $1}')"
  done
  # One dpkg-query for all of them (it is slow to start). Merged /usr: a
  # library resolved under /lib may be registered under /usr/lib, or the
  # other way round, so both spellings are asked for.
  libs=$(printf '%s\n' "$paths" | grep -v '^$' | sort -u)
  queries=$(for lib in $libs; do echo "$lib"; echo "/usr$lib"; echo "${lib#/usr}"; done | sort -u)
  owners=$(dpkg-query -S $queries 2>/dev/null || true)
  owned=$(printf '%s\n' "$owners" | sed -e 's/^.*: //')
  for lib in $libs; do
    base=${lib#/usr}
    if ! printf '%s\n' "$owned" | grep -qxF -e "$base" -e "/usr$base"; then
      echo "runtime-libs.sh: no Debian package owns $lib" >&2
      return 1
    fi
  done
  # "libfoo1:amd64: /usr/lib/..." or "libfoo1: /usr/lib/...".
  printf '%s\n' "$owners" | sed -e 's/: .*//' -e 's/:.*//' | sort -u
}

cmd=${1:-}
case "$cmd" in
  list)
    shift
    [ $# -gt 0 ] || { echo "usage: $0 list BINARY..." >&2; exit 2; }
    list "$@" || exit 1
    ;;
  check)
    shift
    [ $# -gt 1 ] || { echo "usage: $0 check LIST BINARY..." >&2; exit 2; }
    file=$1
    shift
    want=$(sed -e 's/#.*//' -e 's/[[:space:]]//g' "$file" | grep -v '^$' | sort -u)
    have=$(list "$@") || exit 1
    if [ "$want" != "$have" ]; then
      echo "runtime-libs.sh: $file does not match what $* load(s)." >&2
      echo "  needed but not listed: $(printf '%s\n' "$have" | grep -vxF -e "$want" | tr '\n' ' ')" >&2
      echo "  listed but not needed: $(printf '%s\n' "$want" | grep -vxF -e "$have" | tr '\n' ' ')" >&2
      echo "  the packages needed are:" >&2
      printf '    %s\n' $have >&2
      exit 1
    fi
    echo "runtime-libs.sh: $file matches the libraries of: $*"
    ;;
  *)
    echo "usage: $0 list BINARY... | check LIST BINARY..." >&2
    exit 2
    ;;
esac
