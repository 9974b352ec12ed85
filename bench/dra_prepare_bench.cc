// NodePrepareResources latency of `gpulet dra`'s preparer (docs/dra.md,
// docs/benchmarks.md), on a node of 8 GPUs, for a claim of one GPU that is
// not prepared yet (a prepare is followed by its unprepare, not timed):
//
// in process: ClaimPreparer::Prepare alone: the claim read (from memory
//   here; `gpulet dra` asks the API server, one GET), allocation parsing,
//   name lookup, the claim's CDI spec written and the checkpoint replaced,
//   both synced to disk.
// over the socket: the same through DraServer and a gRPC v1 client on its
//   unix socket: what the kubelet waits for.
// repeat: a claim already prepared, answered from the checkpoint.
//
// Files go to $GPULET_BENCH_DIR (default /var/tmp: a disk, so the fsyncs
// count as they would on a node), p50/p99 over every call.
#include <grpcpp/client_context.h>
#include <grpcpp/create_channel.h>
#include <grpcpp/security/credentials.h>
#include <stdlib.h>

#include <cstdio>
#include <filesystem>
#include <memory>
#include <stop_token>
#include <string>
#include <vector>

#include "absl/strings/str_cat.h"
#include "bench/bench_stats.h"
#include "dra/v1/api.grpc.pb.h"
#include "src/dra/kubelet/claim_preparer.h"
#include "src/dra/kubelet/dra_server.h"

namespace gpulet::dra {
namespace {

using json = nlohmann::json;
namespace v1 = ::k8s::io::kubelet::pkg::apis::dra::v1;
constexpr int kCalls = 400;

device::Node Node8() {
  device::Node node;
  for (unsigned i = 0; i < 8; ++i) {
    device::Gpu gpu;
    gpu.index = i;
    gpu.uuid = absl::StrCat("GPU-", i);
    node.gpus.push_back(gpu);
  }
  return node;
}

cdi::Spec Spec8() {
  cdi::Spec spec;
  spec.kind = "nvidia.com/gpu";
  cdi::DeviceNode ctl;
  ctl.path = "/dev/nvidiactl";
  spec.edits.device_nodes.push_back(ctl);
  for (int i = 0; i < 8; ++i) {
    cdi::Device d;
    d.name = absl::StrCat("GPU-", i);
    cdi::DeviceNode n;
    n.path = absl::StrCat("/dev/nvidia", i);
    d.edits.device_nodes.push_back(n);
    spec.devices.push_back(d);
  }
  return spec;
}

json Claim(const ClaimRef& ref, int gpu) {
  return {{"metadata", {{"uid", ref.uid}}},
          {"status",
           {{"allocation",
             {{"devices",
               {{"results",
                 {{{"request", "gpu"},
                   {"driver", "gpu.nvidia.com"},
                   {"pool", "node"},
                   {"device", absl::StrCat("gpu-", gpu)}}}}}}}}}}};
}

ClaimRef Ref(int i) {
  return {.namespace_name = "bench",
          .name = absl::StrCat("c", i),
          .uid = absl::StrCat("uid-", i)};
}

void Report(const char* what, std::vector<double> samples) {
  bench::Summary s = bench::Summarize(std::move(samples));
  std::printf("%-34s n=%zu p50=%.1f us p99=%.1f us max=%.1f us\n", what, s.n,
              s.p50, s.p99, s.max);
}

int Run() {
  const char* base = std::getenv("GPULET_BENCH_DIR");
  std::string tmpl =
      absl::StrCat(base ? base : "/var/tmp", "/dra-bench-XXXXXX");
  if (mkdtemp(tmpl.data()) == nullptr) {
    std::perror("mkdtemp");
    return 1;
  }
  const std::string dir = tmpl;
  std::filesystem::create_directories(dir + "/reg");
  std::filesystem::create_directories(dir + "/plug");
  PreparerOptions options;
  options.driver = "gpu.nvidia.com";
  options.pool = "node";
  options.checkpoint_path = dir + "/checkpoint.json";
  options.cdi_dir = dir + "/cdi";
  auto preparer = ClaimPreparer::Create(
      options,
      [](const ClaimRef& ref, std::stop_token) -> absl::StatusOr<json> {
        return Claim(ref, std::stoi(ref.name.substr(1)) % 8);
      });
  if (!preparer.ok()) {
    std::fprintf(stderr, "%s\n",
                 std::string(preparer.status().message()).c_str());
    return 1;
  }
  (*preparer)->SetNode(Node8(), Spec8());

  std::vector<double> in_process, repeat, socket;
  for (int i = 0; i < kCalls; ++i) {
    auto start = bench::BenchClock::now();
    auto r = (*preparer)->Prepare({Ref(i)});
    in_process.push_back(bench::MicrosSince(start));
    start = bench::BenchClock::now();
    (*preparer)->Prepare({Ref(i)});
    repeat.push_back(bench::MicrosSince(start));
    if (!r[Ref(i).uid].status.ok()) return 1;
    (*preparer)->Unprepare({Ref(i)});
  }

  DeviceHealthBoard board;
  DraServer server({.driver = "gpu.nvidia.com",
                    .pool = "node",
                    .registry_dir = dir + "/reg",
                    .plugin_dir = dir + "/plug",
                    .on_registration = {}},
                   **preparer, board);
  if (!server.Start().ok()) return 1;
  auto stub = v1::DRAPlugin::NewStub(grpc::CreateChannel(
      "unix:" + server.dra_socket(), grpc::InsecureChannelCredentials()));
  for (int i = 0; i < kCalls; ++i) {
    v1::NodePrepareResourcesRequest req;
    auto* c = req.add_claims();
    c->set_namespace_("bench");
    c->set_name(Ref(i).name);
    c->set_uid(Ref(i).uid);
    v1::NodePrepareResourcesResponse resp;
    grpc::ClientContext ctx;
    auto start = bench::BenchClock::now();
    grpc::Status status = stub->NodePrepareResources(&ctx, req, &resp);
    socket.push_back(bench::MicrosSince(start));
    if (!status.ok() || !resp.claims().at(Ref(i).uid).error().empty()) return 1;
    (*preparer)->Unprepare({Ref(i)});
  }
  server.Stop();
  Report("NodePrepareResources in process", in_process);
  Report("NodePrepareResources over socket", socket);
  Report("NodePrepareResources repeated", repeat);
  std::filesystem::remove_all(dir);
  return 0;
}

}  // namespace
}  // namespace gpulet::dra

int main() { return gpulet::dra::Run(); }
