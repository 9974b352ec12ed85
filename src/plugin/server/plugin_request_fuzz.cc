// libFuzzer target for the DevicePlugin request handling: the first byte
// picks Allocate or GetPreferredAllocation, the rest is that request in
// protobuf wire format. It runs exactly the code the server runs
// (HandleAllocate with an Allocate handler using every strategy and option,
// HandlePreferred with the default policy) over a fixed device snapshot. No
// input may crash, hang or get an answer other than OK or INVALID_ARGUMENT, and
// every OK answer must keep the API's promises (checked here; a violation
// aborts the run).
#include <google/protobuf/stubs/logging.h>

#include <cstddef>
#include <cstdint>
#include <cstdlib>
#include <set>
#include <string>
#include <utility>
#include <vector>

#include "src/model/allocation/allocate_cdi.h"
#include "src/model/allocation/allocate_response.h"
#include "src/model/allocation/simple_preferred.h"
#include "src/plugin/server/request_handlers.h"

namespace {

using gpulet::pluginapi::Device;
using gpulet::pluginapi::DeviceSnapshot;

void Check(bool ok) {
  if (!ok) std::abort();
}

Device MakeDevice(std::string id, bool healthy, std::vector<int64_t> numa,
                  std::string visible, int gpu_index) {
  Device d;
  d.id = std::move(id);
  d.healthy = healthy;
  d.numa_nodes = std::move(numa);
  d.visible_id = std::move(visible);
  d.gpu_index = gpu_index;
  d.device_nodes = {"/dev/nvidia" + std::to_string(gpu_index)};
  return d;
}

// Eight GPUs on two NUMA nodes, GPU 0 split in three replicas, one GPU
// without NUMA affinity, one unhealthy, one MIG device.
DeviceSnapshot MakeSnapshot() {
  DeviceSnapshot s;
  s.version = 1;
  for (int r = 0; r < 3; ++r) {
    Device& d = s.devices.emplace_back(
        MakeDevice("GPU-0::" + std::to_string(r), true, {0}, "GPU-0", 0));
    d.replica = r;
  }
  for (int i = 1; i < 7; ++i) {
    std::string id = "GPU-" + std::to_string(i);
    s.devices.push_back(MakeDevice(id, i != 5, {i < 4 ? 0 : 1}, id, i));
  }
  s.devices.push_back(MakeDevice("GPU-7", true, {}, "GPU-7", 7));
  Device& mig =
      s.devices.emplace_back(MakeDevice("MIG-8", true, {1}, "MIG-8", 8));
  mig.device_nodes.push_back("/dev/nvidia-caps/nvidia-cap3");
  mig.device_nodes.push_back("/dev/nvidia-caps/nvidia-cap4");
  return s;
}

const DeviceSnapshot& Snapshot() {
  static const DeviceSnapshot snapshot = MakeSnapshot();
  return snapshot;
}

// Every strategy at once, device specs, IMEX, MPS and the shared-request
// limit, so every branch of BuildAllocateResponse is reachable.
gpulet::allocation::AllocateOptions RichOptions() {
  using gpulet::allocation::DeviceListStrategy;
  gpulet::allocation::AllocateOptions o;
  o.strategies = {
      DeviceListStrategy::kEnvvar, DeviceListStrategy::kVolumeMounts,
      DeviceListStrategy::kCdiAnnotations, DeviceListStrategy::kCdiCri};
  o.pass_device_specs = true;
  o.dev_root = "/run/nvidia/driver";
  o.control_nodes = {"/dev/nvidiactl", "/dev/nvidia-uvm"};
  o.gdrcopy_enabled = o.gds_enabled = o.mofed_enabled = true;
  o.imex_channel_ids = {0, 1};
  o.cdi_additional_devices =
      gpulet::allocation::AdditionalCdiDevices("nvidia.com", true, true, true);
  o.fail_requests_greater_than_one = true;
  o.mps_root = "/run/nvidia/mps";
  return o;
}

const gpulet::pluginapi::AllocateHandler& Handler() {
  static const gpulet::pluginapi::AllocateHandler handler = [] {
    auto made = gpulet::allocation::MakeAllocateHandler(RichOptions());
    Check(made.ok());
    return *made;
  }();
  return handler;
}

bool Ok(const absl::Status& s) {
  Check(s.ok() || s.code() == absl::StatusCode::kInvalidArgument);
  if (!s.ok()) Check(!s.message().empty());
  return s.ok();
}

void FuzzAllocate(const v1beta1::AllocateRequest& request) {
  v1beta1::AllocateResponse response;
  if (!Ok(gpulet::plugin::HandleAllocate("nvidia.com/gpu", Snapshot(), request,
                                         Handler(), &response))) {
    return;
  }
  Check(response.container_responses_size() ==
        request.container_requests_size());
  for (int i = 0; i < response.container_responses_size(); ++i) {
    const auto& r = response.container_responses(i);
    Check(r.envs().at(gpulet::allocation::kVisibleDevicesEnv) ==
          gpulet::allocation::kVolumeMountsRoot);
    Check(r.annotations_size() == 1);
    const auto& ids = request.container_requests(i).devices_ids();
    std::set<std::string> visible;
    bool replica = false;
    for (const std::string& id : ids) {
      const Device* device = Snapshot().Find(id);
      // Shared devices (the GPU-0 replicas) only ever come one at a time.
      Check(device->replica < 0 || ids.size() == 1);
      replica = replica || device->replica >= 0;
      visible.insert(device->visible_id);
    }
    // One CDI name and one mount per distinct device, plus the two IMEX
    // channels (and gdrcopy, gds, mofed for CDI; for a replica, whose GPU
    // has an MPS daemon, the MPS pipe and shm).
    // Device specs: 2 control nodes, the devices' own nodes, 2 channels.
    Check(r.cdi_devices_size() == static_cast<int>(visible.size()) + 5);
    Check(r.mounts_size() ==
          static_cast<int>(visible.size()) + 2 + (replica ? 2 : 0));
    Check(r.devices_size() >= 4);
  }
}

void CheckAnswer(const v1beta1::ContainerPreferredAllocationRequest& request,
                 const v1beta1::ContainerPreferredAllocationResponse& answer) {
  const std::set<std::string> available(request.available_deviceids().begin(),
                                        request.available_deviceids().end());
  const std::set<std::string> chosen(answer.deviceids().begin(),
                                     answer.deviceids().end());
  Check(answer.deviceids_size() == request.allocation_size());
  Check(chosen.size() == static_cast<size_t>(answer.deviceids_size()));
  for (const std::string& id : chosen) Check(available.count(id) == 1);
  for (const std::string& id : request.must_include_deviceids()) {
    Check(chosen.count(id) == 1);
  }
}

void FuzzPreferred(const v1beta1::PreferredAllocationRequest& request) {
  v1beta1::PreferredAllocationResponse response;
  if (!Ok(gpulet::plugin::HandlePreferred("nvidia.com/gpu", Snapshot(), request,
                                          gpulet::allocation::SimplePreferred,
                                          &response))) {
    return;
  }
  Check(response.container_responses_size() ==
        request.container_requests_size());
  for (int i = 0; i < request.container_requests_size(); ++i) {
    CheckAnswer(request.container_requests(i), response.container_responses(i));
  }
}

}  // namespace

extern "C" int LLVMFuzzerInitialize(int* /*argc*/, char*** /*argv*/) {
  // Invalid UTF-8 in a string field is a parse failure protobuf also logs;
  // the log would drown the fuzzer's own output.
  google::protobuf::SetLogHandler(nullptr);
  return 0;
}

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  if (size == 0) return 0;
  const int body_size = static_cast<int>(size - 1);
  if (data[0] % 2 == 0) {
    v1beta1::AllocateRequest request;
    if (request.ParseFromArray(data + 1, body_size)) FuzzAllocate(request);
  } else {
    v1beta1::PreferredAllocationRequest request;
    if (request.ParseFromArray(data + 1, body_size)) FuzzPreferred(request);
  }
  return 0;
}
