// In-process costs of the plugin's request path, without gRPC or sockets:
// the preferred-allocation policy (SimplePreferred) and the envvar Allocate
// answer (EnvvarResponse) over a 16-GPU snapshot (two NUMA nodes of 8), and
// the full request handlers (validation + policy + response message) that
// the server runs for each call. Compare with plugin_daemon_bench's round
// trips to see how much of a call is gpulet's own work.
#include <benchmark/benchmark.h>

#include <cstdio>
#include <string>
#include <vector>

#include "deviceplugin/v1beta1/api.pb.h"
#include "src/model/allocation/allocate_response.h"
#include "src/model/allocation/simple_preferred.h"
#include "src/plugin/server/device_list.h"
#include "src/plugin/server/request_handlers.h"

namespace gpulet::plugin {
namespace {

using allocation::EnvvarResponse;
using allocation::SimplePreferred;
using pluginapi::DeviceSnapshot;

constexpr int kDevices = 16;

// UUID-shaped IDs, as the kubelet sees full GPUs.
std::string Uuid(int i) {
  char id[64];
  std::snprintf(id, sizeof(id), "GPU-%08x-4b1f-9e2c-7d3a-%012x", 0x5eed0000 + i,
                0xa11c0000 + i);
  return id;
}

DeviceSnapshot MakeSnapshot() {
  DeviceSnapshot snapshot{.version = 1, .devices = {}};
  for (int i = 0; i < kDevices; ++i) {
    snapshot.devices.push_back({.id = Uuid(i),
                                .healthy = true,
                                .numa_nodes = {i < kDevices / 2 ? 0 : 1},
                                .visible_id = Uuid(i),
                                .gpu_index = i});
  }
  return snapshot;
}

const DeviceSnapshot& Snapshot() {
  static const DeviceSnapshot snapshot = MakeSnapshot();
  return snapshot;
}

std::vector<std::string> FirstIds(int n) {
  std::vector<std::string> ids;
  for (int i = 0; i < n; ++i) ids.push_back(Snapshot().devices[i].id);
  return ids;
}

// All 16 available, nothing required: the kubelet's common case.
void BM_SimplePreferred(benchmark::State& state) {
  const int size = static_cast<int>(state.range(0));
  const std::vector<std::string> available = FirstIds(kDevices);
  for (auto _ : state) {
    auto ids = SimplePreferred(Snapshot(), available, {}, size);
    benchmark::DoNotOptimize(ids);
  }
  state.counters["devices"] = kDevices;
}
BENCHMARK(BM_SimplePreferred)->Arg(1)->Arg(4)->Arg(8)->Arg(16);

// One device on NUMA node 1 already chosen (must_include): the rest should
// come from node 1.
void BM_SimplePreferredMustInclude(benchmark::State& state) {
  const int size = static_cast<int>(state.range(0));
  const std::vector<std::string> available = FirstIds(kDevices);
  const std::vector<std::string> must = {Snapshot().devices[12].id};
  for (auto _ : state) {
    auto ids = SimplePreferred(Snapshot(), available, must, size);
    benchmark::DoNotOptimize(ids);
  }
}
BENCHMARK(BM_SimplePreferredMustInclude)->Arg(4)->Arg(8);

void BM_EnvvarResponse(benchmark::State& state) {
  const std::vector<std::string> ids =
      FirstIds(static_cast<int>(state.range(0)));
  for (auto _ : state) {
    auto response = EnvvarResponse(Snapshot(), ids);
    benchmark::DoNotOptimize(response);
  }
}
BENCHMARK(BM_EnvvarResponse)->Arg(1)->Arg(8)->Arg(16);

// What the server does per Allocate call once the request is parsed.
void BM_HandleAllocate(benchmark::State& state) {
  v1beta1::AllocateRequest request;
  auto* container = request.add_container_requests();
  for (const std::string& id : FirstIds(static_cast<int>(state.range(0)))) {
    container->add_devices_ids(id);
  }
  v1beta1::AllocateResponse response;
  for (auto _ : state) {
    absl::Status status = HandleAllocate("nvidia.com/gpu", Snapshot(), request,
                                         EnvvarResponse, &response);
    benchmark::DoNotOptimize(status);
  }
}
BENCHMARK(BM_HandleAllocate)->Arg(1)->Arg(8);

// What the server does per GetPreferredAllocation call (16 available).
void BM_HandlePreferred(benchmark::State& state) {
  v1beta1::PreferredAllocationRequest request;
  auto* container = request.add_container_requests();
  for (const std::string& id : FirstIds(kDevices)) {
    container->add_available_deviceids(id);
  }
  container->set_allocation_size(static_cast<int>(state.range(0)));
  v1beta1::PreferredAllocationResponse response;
  for (auto _ : state) {
    absl::Status status = HandlePreferred("nvidia.com/gpu", Snapshot(), request,
                                          SimplePreferred, &response);
    benchmark::DoNotOptimize(status);
  }
}
BENCHMARK(BM_HandlePreferred)->Arg(1)->Arg(4)->Arg(8);

void BM_ToListAndWatchResponse(benchmark::State& state) {
  for (auto _ : state) {
    auto message = ToListAndWatchResponse(Snapshot());
    benchmark::DoNotOptimize(message);
  }
}
BENCHMARK(BM_ToListAndWatchResponse);

}  // namespace
}  // namespace gpulet::plugin

BENCHMARK_MAIN();
