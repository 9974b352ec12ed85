#!/bin/sh
# Runs the kubelet harness on gpulet serving a mixed node: the simulated
# machine ($GPULET_SIM_MACHINE) is rendered under a temporary root whose
# sysfs and /dev the passthrough section reads, while NVML (the simulator)
# shows only the GPUs left on the nvidia driver.
#   passthrough-node.sh GPULET NVML_LIB HARNESS [harness run arguments]
# $PT_ROOT (the rendered root) is exported for --fault-cmd/--recover-cmd.
# PT_MDEVS=true turns on the mediated devices (passthrough.mdevs).
# The root is removed on exit.
set -eu
gpulet=$1 nvml_lib=$2 harness=$3
shift 3
PT_ROOT=$(mktemp -d /tmp/gpulet-pt-XXXXXX)
export PT_ROOT
trap 'rm -rf "$PT_ROOT"' EXIT INT TERM
"$gpulet" sim render --dev-nodes files "$PT_ROOT" >/dev/null
cat >"$PT_ROOT/config.yaml" <<CONFIG
version: v1
passthrough:
  devices: [vfio-pci]
  sysRoot: $PT_ROOT/sys
  devRoot: $PT_ROOT/dev
  hostDevRoot: /dev
  pciIds: ""
  resyncPeriod: 1s
  mdevs: ${PT_MDEVS:-false}
CONFIG
"$harness" run "$@" -- "$gpulet" --nvml-lib "$nvml_lib" plugin \
  --config-file "$PT_ROOT/config.yaml"
