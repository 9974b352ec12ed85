#!/bin/sh
# A client-go exec credential plugin for the kube-apiserver tests: answers
# an ExecCredential in the apiVersion KUBERNETES_EXEC_INFO asks for, with
# the token in $GPULET_TEST_TOKEN (which the kubeconfig's exec env sets),
# and appends one line per run to $GPULET_TEST_RUNS when that is set.
set -eu
info="${KUBERNETES_EXEC_INFO:?KUBERNETES_EXEC_INFO is not set}"
case "$info" in
  *'"apiVersion":"client.authentication.k8s.io/v1"'*)
    api=client.authentication.k8s.io/v1 ;;
  *'"apiVersion":"client.authentication.k8s.io/v1beta1"'*)
    api=client.authentication.k8s.io/v1beta1 ;;
  *)
    echo "exec_credential_plugin: no known apiVersion in KUBERNETES_EXEC_INFO" >&2
    exit 1 ;;
esac
if [ -n "${GPULET_TEST_RUNS:-}" ]; then
  echo "$info" >> "$GPULET_TEST_RUNS"
fi
printf '{"apiVersion":"%s","kind":"ExecCredential","status":{"token":"%s"}}\n' \
  "$api" "${GPULET_TEST_TOKEN:?GPULET_TEST_TOKEN is not set}"
