#include "bench/daemon_phases.h"

#include <algorithm>
#include <chrono>
#include <functional>
#include <memory>

#include "absl/strings/str_cat.h"
#include "bench/bench_plugin.h"
#include "bench/bench_stats.h"
#include "deviceplugin/v1beta1/api.grpc.pb.h"
#include "grpcpp/grpcpp.h"
#include "src/nvml/sim/control_client.h"

namespace gpulet::bench {
namespace {

using Stub = v1beta1::DevicePlugin::Stub;

// Per call; generous so that only a hung plugin reaches it.
constexpr std::chrono::seconds kRpcDeadline(10);
constexpr std::chrono::seconds kStreamDeadline(30);

absl::Status RpcError(const std::string& what, const grpc::Status& status) {
  return absl::InternalError(absl::StrCat(what, ": ", status.error_code(), " ",
                                          status.error_message()));
}

using Call = std::function<grpc::Status(grpc::ClientContext&, int)>;

// Times one call. The ClientContext is made inside the timed region: every
// kubelet call pays for one.
absl::StatusOr<double> TimeCall(const std::string& name, int i,
                                const Call& call) {
  const BenchClock::time_point start = BenchClock::now();
  grpc::ClientContext context;
  context.set_deadline(std::chrono::system_clock::now() + kRpcDeadline);
  grpc::Status status = call(context, i);
  const double us = MicrosSince(start);
  if (!status.ok()) return RpcError(absl::StrCat(name, " call ", i), status);
  return us;
}

class RpcCases {
 public:
  RpcCases(Stub& stub, std::vector<std::string> ids)
      : stub_(stub), ids_(std::move(ids)) {}

  // A constant answer: the cost of gRPC, the socket and scheduling alone,
  // against which the other cases show gpulet's own work.
  grpc::Status Options(grpc::ClientContext& context) {
    v1beta1::DevicePluginOptions response;
    return stub_.GetDevicePluginOptions(&context, v1beta1::Empty(), &response);
  }

  // Allocate `size` devices for one container, rotating the first device.
  grpc::Status Allocate(grpc::ClientContext& context, int i, int size) {
    v1beta1::AllocateRequest request;
    auto* container = request.add_container_requests();
    for (int k = 0; k < size; ++k) {
      container->add_devices_ids(ids_[(i + k) % ids_.size()]);
    }
    v1beta1::AllocateResponse response;
    grpc::Status status = stub_.Allocate(&context, request, &response);
    if (status.ok() && response.container_responses_size() != 1) {
      return {grpc::StatusCode::INTERNAL, "not one container response"};
    }
    return status;
  }

  // Preferred `size` devices out of all, nothing required.
  grpc::Status Preferred(grpc::ClientContext& context, int size) {
    v1beta1::PreferredAllocationRequest request;
    auto* container = request.add_container_requests();
    for (const std::string& id : ids_) container->add_available_deviceids(id);
    container->set_allocation_size(size);
    v1beta1::PreferredAllocationResponse response;
    grpc::Status status =
        stub_.GetPreferredAllocation(&context, request, &response);
    if (status.ok() &&
        (response.container_responses_size() != 1 ||
         response.container_responses(0).deviceids_size() != size)) {
      return {grpc::StatusCode::INTERNAL, "wrong preferred answer"};
    }
    return status;
  }

 private:
  Stub& stub_;
  const std::vector<std::string> ids_;
};

// An open ListAndWatch stream and its first message.
struct Stream {
  grpc::ClientContext context;
  std::unique_ptr<grpc::ClientReader<v1beta1::ListAndWatchResponse>> reader;
  v1beta1::ListAndWatchResponse first;

  ~Stream() {
    if (reader == nullptr) return;
    context.TryCancel();
    (void)reader->Finish();
  }
};

absl::Status OpenStream(Stub& stub, Stream& stream) {
  stream.context.set_deadline(std::chrono::system_clock::now() +
                              kStreamDeadline);
  stream.reader = stub.ListAndWatch(&stream.context, v1beta1::Empty());
  if (!stream.reader->Read(&stream.first)) {
    return absl::InternalError("ListAndWatch ended before its first message");
  }
  if (stream.first.devices_size() == 0) {
    return absl::InternalError("ListAndWatch advertised no devices");
  }
  return absl::OkStatus();
}

std::vector<std::string> Ids(const v1beta1::ListAndWatchResponse& message) {
  std::vector<std::string> ids;
  for (const auto& device : message.devices()) ids.push_back(device.id());
  return ids;
}

absl::Status RunRpcCases(const PhaseConfig& config, RpcCases& rpc, int devices,
                         RpcResults& results) {
  std::vector<std::pair<std::string, Call>> cases = {
      {"GetDevicePluginOptions (floor)",
       [&](grpc::ClientContext& c, int) { return rpc.Options(c); }},
      {"Allocate 1 device",
       [&](grpc::ClientContext& c, int i) { return rpc.Allocate(c, i, 1); }},
      {absl::StrCat("Allocate ", devices, " devices"),
       [&](grpc::ClientContext& c, int i) {
         return rpc.Allocate(c, i, devices);
       }},
  };
  for (int size : {1, 4, 8}) {
    if (size > devices) continue;
    cases.emplace_back(absl::StrCat("GetPreferredAllocation size ", size),
                       [&rpc, size](grpc::ClientContext& c, int) {
                         return rpc.Preferred(c, size);
                       });
  }
  // Connection set-up, first-call allocations and lazy gRPC init stay out.
  for (int i = 0; i < config.warmup; ++i) {
    for (const auto& [name, call] : cases) {
      if (auto us = TimeCall(name, i, call); !us.ok()) return us.status();
    }
  }
  // Round robin, so that a burst of load from other processes on the
  // machine hits every case alike and the floor stays comparable.
  std::vector<std::vector<double>> samples(cases.size());
  for (auto& s : samples) s.reserve(static_cast<size_t>(config.samples));
  for (int i = 0; i < config.samples; ++i) {
    for (size_t c = 0; c < cases.size(); ++c) {
      absl::StatusOr<double> us = TimeCall(cases[c].first, i, cases[c].second);
      if (!us.ok()) return us.status();
      samples[c].push_back(*us);
    }
  }
  for (size_t c = 0; c < cases.size(); ++c) {
    results.cases.emplace_back(cases[c].first, std::move(samples[c]));
  }
  return absl::OkStatus();
}

// Stream order that alternates between the two halves of the device list:
// on dgx-h100 (GPUs 0-3 on NUMA node 0, 4-7 on node 1) between the nodes.
std::vector<int> AlternatingOrder(int n) {
  std::vector<int> order;
  const int half = (n + 1) / 2;
  for (int i = 0; i < half; ++i) {
    order.push_back(i);
    if (i + half < n) order.push_back(i + half);
  }
  return order;
}

int CountUnhealthy(const v1beta1::ListAndWatchResponse& message,
                   const std::string& id, bool* id_unhealthy) {
  int unhealthy = 0;
  for (const auto& device : message.devices()) {
    if (device.health() != "Unhealthy") continue;
    ++unhealthy;
    if (device.id() == id) *id_unhealthy = true;
  }
  return unhealthy;
}

// Up to `events` Xids on one fresh plugin (at most one per GPU).
absl::Status HealthOnOnePlugin(const PhaseConfig& config, int events,
                               HealthResults& results) {
  BenchPlugin plugin(config.scratch_root,
                     {.machine = config.machine, .sim_control = true});
  if (absl::Status s = plugin.Start(); !s.ok()) return s;
  if (absl::Status s = plugin.WaitForHealthMonitor(); !s.ok()) return s;
  std::unique_ptr<Stub> stub = plugin.Dial();
  Stream stream;
  if (absl::Status s = OpenStream(*stub, stream); !s.ok()) return s;
  const std::vector<std::string> ids = Ids(stream.first);
  const std::vector<int> order = AlternatingOrder(static_cast<int>(ids.size()));
  const int n = std::min(events, static_cast<int>(order.size()));
  for (int k = 0; k < n; ++k) {
    const std::string& id = ids[order[k]];
    const BenchClock::time_point start = BenchClock::now();
    absl::StatusOr<std::string> sent = sim::SendControlCommand(
        plugin.sim_socket_path(), absl::StrCat("xid ", id, " 79"));
    const double control_us = MicrosSince(start);
    if (!sent.ok()) return sent.status();
    v1beta1::ListAndWatchResponse update;
    if (!stream.reader->Read(&update)) {
      return absl::InternalError("ListAndWatch ended while waiting for " + id);
    }
    const double update_us = MicrosSince(start);
    bool marked = false;
    // One message per event: a coalesced or extra update would skew the
    // figure, so it is an error rather than a sample.
    if (CountUnhealthy(update, id, &marked) != k + 1 || !marked) {
      return absl::InternalError(absl::StrCat(
          "update ", k + 1, " does not mark exactly ", id, " in addition"));
    }
    results.update_us.push_back(update_us);
    results.control_us.push_back(control_us);
    results.first_on_plugin.push_back(k == 0);
  }
  return plugin.Stop();
}

}  // namespace

absl::StatusOr<std::vector<double>> MeasureStartToRegistered(
    const PhaseConfig& config) {
  std::vector<double> us;
  for (int i = 0; i < config.starts; ++i) {
    BenchPlugin plugin(config.scratch_root, {.machine = config.machine});
    if (absl::Status s = plugin.Start(); !s.ok()) return s;
    us.push_back(plugin.start_to_registered_us());
    if (absl::Status s = plugin.Stop(); !s.ok()) return s;
  }
  return us;
}

absl::StatusOr<RpcResults> MeasureRpcs(const PhaseConfig& config) {
  BenchPlugin plugin(config.scratch_root, {.machine = config.machine});
  if (absl::Status s = plugin.Start(); !s.ok()) return s;
  if (absl::Status s = plugin.WaitForHealthMonitor(); !s.ok()) return s;
  RpcResults results;
  std::unique_ptr<Stub> stub = plugin.Dial();
  Stream stream;
  if (absl::Status s = OpenStream(*stub, stream); !s.ok()) return s;
  results.registered = ReadMemory(plugin.pid());
  RpcCases rpc(*stub, Ids(stream.first));
  absl::Status run =
      RunRpcCases(config, rpc, stream.first.devices_size(), results);
  if (!run.ok()) return run;
  results.after = ReadMemory(plugin.pid());
  if (absl::Status s = plugin.Stop(); !s.ok()) return s;
  return results;
}

absl::StatusOr<HealthResults> MeasureHealthUpdates(const PhaseConfig& config) {
  HealthResults results;
  while (static_cast<int>(results.update_us.size()) < config.health_events) {
    const size_t before = results.update_us.size();
    absl::Status s = HealthOnOnePlugin(
        config, config.health_events - static_cast<int>(before), results);
    if (!s.ok()) return s;
    ++results.plugins;
    if (results.update_us.size() == before) {
      return absl::InternalError("a plugin yielded no health events");
    }
  }
  return results;
}

}  // namespace gpulet::bench
