// Device and DeviceSnapshot: the devices of one resource as the kubelet sees
// them (ID, health, NUMA nodes), with what gpulet needs to answer for them
// (the runtime's ID, the parent GPU, MIG instance IDs, replica, device
// nodes). Values: the resource model builds them, allocation policies read
// them, the plugin server streams them.
//
// Thread safety: plain values; a snapshot is immutable once published.
#pragma once

#include <cstddef>
#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include "absl/container/flat_hash_map.h"

namespace gpulet::pluginapi {

struct Device {
  std::string id;  // the ID the kubelet sees (<= 63 chars)
  bool healthy = true;
  std::vector<int64_t> numa_nodes;  // empty: no NUMA affinity reported
  // What the container runtime is told for this device (NVIDIA_VISIBLE_DEVICES
  // entry): the GPU or MIG UUID, or its index, without any replica suffix.
  std::string visible_id;
  int gpu_index = -1;  // parent GPU (of a replica or MIG device), for
                       // health fan-out and topology
  // A MIG device's GPU instance and compute instance IDs; -1 for a full GPU
  // (or a replica of one). A MIG-scoped health event affects only the
  // devices with the same gpu_index, gpu_instance_id and compute_instance_id.
  int gpu_instance_id = -1;
  int compute_instance_id = -1;
  // Which replica of the underlying GPU or MIG device this is (time-slicing,
  // MPS): 0..replicas-1; -1 when the device is not shared.
  int replica = -1;
  // Device nodes only this device needs, as container paths without the dev
  // root: "/dev/nvidia3" for a GPU; for a MIG device also its GPU-instance and
  // compute-instance access nodes "/dev/nvidia-caps/nvidia-cap<N>". Control
  // nodes (nvidiactl, nvidia-uvm, ...) are per node, not listed here.
  std::vector<std::string> device_nodes = {};

  friend bool operator==(const Device&, const Device&) = default;
};

struct DeviceSnapshot {
  uint64_t version = 0;
  std::vector<Device> devices;
  // ID -> position in `devices`, built by BuildIndex (DeviceList does for
  // every snapshot it publishes); empty: Find scans. A snapshot whose
  // devices change after BuildIndex must call it again.
  // Shared between snapshots that only differ in health.
  std::shared_ptr<const absl::flat_hash_map<std::string, size_t>> index =
      nullptr;

  // The device with this ID, or null. O(1) with an index, O(n) without.
  const Device* Find(const std::string& id) const;
  void BuildIndex();
};
using DeviceSnapshotPtr = std::shared_ptr<const DeviceSnapshot>;

}  // namespace gpulet::pluginapi
