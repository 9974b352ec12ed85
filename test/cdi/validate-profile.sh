#!/bin/sh
# Generates the CDI spec for one NVML simulator profile with
# `gpulet cdi generate` over a fake driver root, in YAML and in JSON, and has
# the CDI project's own Go library (cdi-validate) load it strictly and inject
# every device it defines. The OCI spec per device is kept in OUT_JSON for
# comparison with what gpulet-runtime injects.
#
# As root the fake driver root also gets real device nodes (mknod) and an
# ld.so.cache written by ldconfig; otherwise gpulet finds the libraries in
# the standard directories and builds the nodes from the known majors.
#
# With GPULET_RUNTIME, every device name is then also injected by
# gpulet-runtime and compared with the library's result (compare-runtime.py).
#
# usage: validate-profile.sh GPULET SIM_LIB CDI_VALIDATE FAKE_LIB_DIR PROFILE MIN_DEVICES WORK_DIR [GPULET_RUNTIME]
set -eu
gpulet=$1 sim_lib=$2 validator=$3 fake_libs=$4 profile=$5 min_devices=$6 work=$7
runtime=${8:-}

rm -rf "$work"
mkdir -p "$work"
root=$work/root
mkdir -p "$root/proc/driver/nvidia-caps" "$root/usr/lib64" "$root/usr/bin" \
         "$root/etc" "$root/dev/nvidia-caps"

printf 'Character devices:\n  1 mem\n195 nvidia\n235 nvidia-caps\n511 nvidia-uvm\n' \
  > "$root/proc/devices"
# The driver lists every possible instance of every GPU minor, numbered in
# order after config (1) and monitor (2).
awk 'BEGIN {
  print "config 1"; print "monitor 2"; n = 3
  for (gpu = 0; gpu < 16; gpu++)
    for (gi = 0; gi < 15; gi++) {
      printf "gpu%d/gi%d/access %d\n", gpu, gi, n++
      for (ci = 0; ci < 8; ci++) printf "gpu%d/gi%d/ci%d/access %d\n", gpu, gi, ci, n++
    }
}' > "$root/proc/driver/nvidia-caps/mig-minors"

# The driver's libraries for both driver versions the profiles report.
for lib in "$fake_libs"/*.so.*.*.*; do
  stem=$(basename "$lib" | sed 's/\.so\..*$/.so/')
  for version in 550.54.15 535.161.08; do
    cp "$lib" "$root/usr/lib64/$stem.$version"
  done
done
printf '#!/bin/sh\n' > "$root/usr/bin/nvidia-smi"
chmod 755 "$root/usr/bin/nvidia-smi"

if [ "$(id -u)" = 0 ]; then
  mknod "$root/dev/nvidiactl" c 195 255
  mknod "$root/dev/nvidia-uvm" c 511 0
  mknod "$root/dev/nvidia-uvm-tools" c 511 1
  i=0
  while [ $i -lt 16 ]; do mknod "$root/dev/nvidia$i" c 195 $i; i=$((i + 1)); done
  echo /usr/lib64 > "$root/etc/ld.so.conf"
  ldconfig -r "$root" 2>/dev/null
fi

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
if [ -n "$runtime" ]; then
  python3 "$(dirname "$0")/compare-runtime.py" "$runtime" "$work"
fi
