// libFuzzer target for the DevicePlugin request handling: the first byte
// picks Allocate or GetPreferredAllocation, the rest is that request in
// protobuf wire format. It runs exactly the code the server runs
// (HandleAllocate / HandlePreferred with the default policies) over a fixed
// device snapshot. No input may crash, hang or get an answer other than OK
// or INVALID_ARGUMENT, and every OK answer must keep the API's promises
// (checked here; a violation aborts the run).
#include <google/protobuf/stubs/logging.h>

#include <cstddef>
#include <cstdint>
#include <cstdlib>
#include <set>
#include <string>

#include "src/plugin/allocate_response.h"
#include "src/plugin/preferred_allocation.h"
#include "src/plugin/request_handlers.h"

namespace {

using gpulet::plugin::Device;
using gpulet::plugin::DeviceSnapshot;

void Check(bool ok) {
  if (!ok) std::abort();
}

// Eight GPUs on two NUMA nodes, GPU 0 split in three replicas, one GPU
// without NUMA affinity, one unhealthy, one MIG device.
DeviceSnapshot MakeSnapshot() {
  DeviceSnapshot s;
  s.version = 1;
  for (int r = 0; r < 3; ++r) {
    s.devices.push_back({"GPU-0::" + std::to_string(r), true, {0}, "GPU-0", 0});
  }
  for (int i = 1; i < 7; ++i) {
    std::string id = "GPU-" + std::to_string(i);
    s.devices.push_back({id, i != 5, {i < 4 ? 0 : 1}, id, i});
  }
  s.devices.push_back({"GPU-7", true, {}, "GPU-7", 7});
  s.devices.push_back({"MIG-8", true, {1}, "MIG-8", 8});
  return s;
}

const DeviceSnapshot& Snapshot() {
  static const DeviceSnapshot snapshot = MakeSnapshot();
  return snapshot;
}

bool Ok(const grpc::Status& s) {
  Check(s.ok() || s.error_code() == grpc::StatusCode::INVALID_ARGUMENT);
  if (!s.ok()) Check(!s.error_message().empty());
  return s.ok();
}

void FuzzAllocate(const v1beta1::AllocateRequest& request) {
  v1beta1::AllocateResponse response;
  if (!Ok(gpulet::plugin::HandleAllocate("nvidia.com/gpu", Snapshot(), request,
                                         gpulet::plugin::EnvvarResponse,
                                         &response))) {
    return;
  }
  Check(response.container_responses_size() ==
        request.container_requests_size());
  for (const auto& r : response.container_responses()) {
    Check(!r.envs().at(gpulet::plugin::kVisibleDevicesEnv).empty());
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
                                          gpulet::plugin::SimplePreferred,
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
