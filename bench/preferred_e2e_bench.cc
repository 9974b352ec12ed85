// preferred_e2e_bench: GetPreferredAllocation end to end — a gRPC client
// call over a unix socket to an in-process plugin::PluginServer whose
// PreferredHandler is allocation::MakePreferredHandler over the simulator
// machine's score matrix (the handler the daemon installs) — on dgx-h100 and
// islands-16, for every size 1..n, all GPUs available, without and with one
// must_include device (sizes >= 2). Prints p50/p99 per size, next to the
// gRPC floor (GetDevicePluginOptions) timed between the same calls.
// A plain program: it accepts and ignores --benchmark_* flags so
// scripts/run-benchmarks can run every *_bench the same way.
//
//   preferred_e2e_bench [--samples=N]   (default 400 timed calls per row)
#include <grpcpp/grpcpp.h>
#include <unistd.h>

#include <algorithm>
#include <cstdio>
#include <cstdlib>
#include <memory>
#include <string>
#include <vector>

#include "absl/strings/match.h"
#include "absl/strings/numbers.h"
#include "bench/bench_stats.h"
#include "deviceplugin/v1beta1/api.grpc.pb.h"
#include "sim/profiles.h"
#include "src/model/allocation/allocate_response.h"
#include "src/model/allocation/preferred_handler.h"
#include "src/model/testing/test_topologies.h"
#include "src/plugin/server/plugin_server.h"

namespace gpulet::bench {
namespace {

struct Row {
  int size;
  bool must;
  Summary us;
  Summary floor;  // GetDevicePluginOptions calls interleaved with the row's
};

std::vector<pluginapi::Device> Devices(const sim::Machine& machine) {
  std::vector<pluginapi::Device> devices;
  for (size_t i = 0; i < machine.gpus.size(); ++i) {
    const sim::Gpu& g = machine.gpus[i];
    pluginapi::Device d;
    d.id = g.uuid;
    d.visible_id = g.uuid;
    d.gpu_index = static_cast<int>(i);
    if (g.numa_node >= 0) d.numa_nodes = {g.numa_node};
    devices.push_back(d);
  }
  return devices;
}

// The gRPC floor: an RPC that does no work, timed between the row's calls,
// so a tail caused by a loaded machine shows up in both columns.
double Floor(v1beta1::DevicePlugin::Stub& stub) {
  v1beta1::DevicePluginOptions options;
  grpc::ClientContext context;
  const BenchClock::time_point start = BenchClock::now();
  grpc::Status status =
      stub.GetDevicePluginOptions(&context, v1beta1::Empty(), &options);
  const double us = MicrosSince(start);
  if (!status.ok()) std::exit(1);
  return us;
}

// One timed call; aborts on an RPC error (the figures would be meaningless).
double Call(v1beta1::DevicePlugin::Stub& stub,
            const v1beta1::PreferredAllocationRequest& request) {
  v1beta1::PreferredAllocationResponse response;
  grpc::ClientContext context;
  const BenchClock::time_point start = BenchClock::now();
  grpc::Status status =
      stub.GetPreferredAllocation(&context, request, &response);
  const double us = MicrosSince(start);
  if (!status.ok()) {
    std::fprintf(stderr, "GetPreferredAllocation: %s\n",
                 status.error_message().c_str());
    std::exit(1);
  }
  return us;
}

int RunMachine(const std::string& profile, int samples) {
  absl::StatusOr<sim::Machine> machine = sim::LoadMachine(profile);
  if (!machine.ok()) {
    std::fprintf(stderr, "%s\n",
                 std::string(machine.status().message()).c_str());
    return 1;
  }
  auto matrix = std::make_shared<const allocation::ScoreMatrix>(
      allocation::BuildScoreMatrix(allocation::testing::FromMachine(*machine)));
  plugin::DeviceList list(Devices(*machine));
  char dir_template[] = "/tmp/gpe2e.XXXXXX";
  const std::string dir = ::mkdtemp(dir_template);
  plugin::PluginServer server({"nvidia.com/gpu", "p.sock"}, list,
                              allocation::EnvvarResponse,
                              allocation::MakePreferredHandler(matrix, {}));
  if (absl::Status s = server.Start(dir); !s.ok()) {
    std::fprintf(stderr, "%s\n", std::string(s.message()).c_str());
    return 1;
  }
  auto stub = v1beta1::DevicePlugin::NewStub(grpc::CreateChannel(
      "unix:" + server.socket_path(), grpc::InsecureChannelCredentials()));
  const std::vector<pluginapi::Device> devices = list.Snapshot()->devices;
  const int n = static_cast<int>(devices.size());
  std::vector<Row> rows;
  for (int size = 1; size <= n; ++size) {
    for (bool must : {false, true}) {
      if (must && size < 2) continue;
      v1beta1::PreferredAllocationRequest request;
      auto* c = request.add_container_requests();
      for (const pluginapi::Device& d : devices)
        c->add_available_deviceids(d.id);
      // A GPU in the second half, so the answer is not the lowest indexes.
      if (must) c->add_must_include_deviceids(devices[n - 3].id);
      c->set_allocation_size(size);
      for (int i = 0; i < 50; ++i) Call(*stub, request);
      std::vector<double> us, floor;
      for (int i = 0; i < samples; ++i) {
        us.push_back(Call(*stub, request));
        floor.push_back(Floor(*stub));
      }
      rows.push_back({size, must, Summarize(us), Summarize(floor)});
    }
  }
  server.Stop();
  ::rmdir(dir.c_str());
  std::printf("\n%s (%d GPUs), %d calls per row, microseconds\n",
              profile.c_str(), n, samples);
  std::printf("%5s %5s %9s %9s %9s | %11s %11s\n", "size", "must", "p50", "p99",
              "max", "floor p50", "floor p99");
  double worst_p99 = 0, worst_floor = 0;
  for (const Row& r : rows) {
    std::printf("%5d %5s %9.1f %9.1f %9.1f | %11.1f %11.1f\n", r.size,
                r.must ? "1" : "-", r.us.p50, r.us.p99, r.us.max, r.floor.p50,
                r.floor.p99);
    worst_p99 = std::max(worst_p99, r.us.p99);
    worst_floor = std::max(worst_floor, r.floor.p99);
  }
  std::printf("worst p99: %.1f us (worst floor p99 %.1f us)\n", worst_p99,
              worst_floor);
  return 0;
}

}  // namespace
}  // namespace gpulet::bench

int main(int argc, char** argv) {
  int samples = 400;
  for (int i = 1; i < argc; ++i) {
    const std::string arg = argv[i];
    if (absl::StartsWith(arg, "--benchmark_")) continue;
    if (!absl::StartsWith(arg, "--samples=") ||
        !absl::SimpleAtoi(arg.substr(10), &samples) || samples <= 0) {
      std::fprintf(stderr, "usage: preferred_e2e_bench [--samples=N]\n");
      return 2;
    }
  }
  std::printf(
      "GetPreferredAllocation over gRPC (unix socket, in-process "
      "PluginServer, MakePreferredHandler)\n");
  for (const char* profile : {"dgx-h100", "islands-16"}) {
    if (int rc = gpulet::bench::RunMachine(profile, samples); rc != 0) {
      return rc;
    }
  }
  return 0;
}
