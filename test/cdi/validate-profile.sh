#!/bin/sh
# Generates the CDI spec for one NVML simulator profile with
# `gpulet cdi generate` over the node `gpulet sim render` draws for that
# profile, in YAML and in JSON, and has
# the CDI project's own Go library (cdi-validate) load it strictly and inject
# every device it defines. The OCI spec per device is kept in OUT_JSON for
# comparison with what gpulet-runtime injects.
#
# The same spec under the device plugin's vendor (k8s.device-plugin.nvidia.com)
# is then put beside it, and both must load together (compare-kinds.py).
#
# With GPULET_RUNTIME, every device name is then also injected by
# gpulet-runtime and compared with the library's result (compare-runtime.py),
# for both name forms.
#
# usage: validate-profile.sh GPULET SIM_LIB CDI_VALIDATE PROFILE MIN_DEVICES WORK_DIR [GPULET_RUNTIME]
set -eu
gpulet=$1 sim_lib=$2 validator=$3 profile=$4 min_devices=$5 work=$6
runtime=${7:-}

rm -rf "$work"
mkdir -p "$work"
root=$work/root
# The node as `gpulet sim render` draws it from the same profile: device
# nodes (real ones as root, empty files otherwise, which discovery ignores
# and rebuilds from the majors in proc/devices), /proc, /sys, and the
# driver's libraries for the version NVML reports, with an ld.so.cache.
nodes=files
[ "$(id -u)" = 0 ] && nodes=mknod
"$gpulet" sim render "$root" --machine "$profile" --driver-dir . \
  --dev-nodes "$nodes" > /dev/null

generate() {  # FORMAT DIR
  mkdir -p "$2"
  GPULET_SIM_MACHINE=$profile "$gpulet" --nvml-lib "$sim_lib" \
    --driver-root "$root" cdi generate --format "$1" \
    --output "$2/nvidia.com-gpu.$1"
}
generate yaml "$work/cdi"
"$validator" --spec-dir "$work/cdi" --all --each \
  --min-devices "$min_devices" --output "$work/oci.json"
# The JSON form must describe exactly the same devices.
generate json "$work/cdi-json"
"$validator" --spec-dir "$work/cdi-json" --all --each \
  --min-devices "$min_devices" --output "$work/oci-from-json.json"
cmp "$work/oci.json" "$work/oci-from-json.json"

# The device plugin's own spec (vendor k8s.device-plugin.nvidia.com, as
# `gpulet plugin` and NVIDIA's plugin write it) beside the toolkit-style
# nvidia.com spec on one node: the library must load both without a
# conflict in its registry and resolve every name of both kinds.
mkdir -p "$work/both"
cp "$work/cdi/nvidia.com-gpu.yaml" "$work/both/"
GPULET_SIM_MACHINE=$profile "$gpulet" --nvml-lib "$sim_lib" \
  --driver-root "$root" cdi generate --format yaml \
  --vendor k8s.device-plugin.nvidia.com \
  --output "$work/both/k8s.device-plugin.nvidia.com-gpu.yaml"
"$validator" --spec-dir "$work/both" --all --each \
  --min-devices $((2 * min_devices)) --output "$work/oci-both.json"
python3 "$(dirname "$0")/compare-kinds.py" "$work/oci.json" "$work/oci-both.json"
if [ -n "$runtime" ]; then
  python3 "$(dirname "$0")/compare-runtime.py" "$runtime" "$work"
  python3 "$(dirname "$0")/compare-runtime.py" "$runtime" "$work" both oci-both.json
fi
