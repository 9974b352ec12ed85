#include "bench/daemon_phases.h"

#include <algorithm>
#include <chrono>
#include <functional>
#include <map>
#include <memory>
#include <set>

#include "absl/strings/str_cat.h"
#include "bench/bench_plugin.h"
#include "bench/bench_stats.h"
#include "deviceplugin/v1beta1/api.grpc.pb.h"
#include "grpcpp/grpcpp.h"
#include "sim/control_client.h"

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

// The devices advertised for one GPU: the GPU itself, or its time-slicing
// replicas "<uuid>::<n>". `gpu` is what the simulator's control socket names.
struct GpuDevices {
  std::string gpu;
  std::vector<std::string> ids;
};

std::string GpuOf(const std::string& id) {
  const size_t separator = id.rfind("::");
  return separator == std::string::npos ? id : id.substr(0, separator);
}

// In the order the GPUs first appear in `ids`.
std::vector<GpuDevices> GroupByGpu(const std::vector<std::string>& ids) {
  std::vector<GpuDevices> gpus;
  std::map<std::string, size_t> at;
  for (const std::string& id : ids) {
    std::string gpu = GpuOf(id);
    auto [it, added] = at.emplace(gpu, gpus.size());
    if (added) gpus.push_back({std::move(gpu), {}});
    gpus[it->second].ids.push_back(id);
  }
  return gpus;
}

bool Shared(const std::vector<GpuDevices>& gpus) {
  return std::any_of(gpus.begin(), gpus.end(),
                     [](const GpuDevices& g) { return g.ids.size() > 1; });
}

class RpcCases {
 public:
  RpcCases(Stub& stub, std::vector<std::string> ids)
      : stub_(stub), ids_(std::move(ids)), gpus_(GroupByGpu(ids_)) {}

  int devices() const { return static_cast<int>(ids_.size()); }
  int gpus() const { return static_cast<int>(gpus_.size()); }
  bool shared() const { return Shared(gpus_); }

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
    return Send(context, request);
  }

  // One device of every GPU (replica i of each, modulo its replicas).
  grpc::Status AllocatePerGpu(grpc::ClientContext& context, int i) {
    v1beta1::AllocateRequest request;
    auto* container = request.add_container_requests();
    for (const GpuDevices& gpu : gpus_) {
      container->add_devices_ids(gpu.ids[i % gpu.ids.size()]);
    }
    return Send(context, request);
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
  grpc::Status Send(grpc::ClientContext& context,
                    const v1beta1::AllocateRequest& request) {
    v1beta1::AllocateResponse response;
    grpc::Status status = stub_.Allocate(&context, request, &response);
    if (status.ok() && response.container_responses_size() != 1) {
      return {grpc::StatusCode::INTERNAL, "not one container response"};
    }
    return status;
  }

  Stub& stub_;
  const std::vector<std::string> ids_;
  const std::vector<GpuDevices> gpus_;
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

using Cases = std::vector<std::pair<std::string, Call>>;

// One device per GPU: Allocate 1 and all, GetPreferredAllocation 1, 4, 8.
Cases WholeGpuCases(RpcCases& rpc) {
  const int devices = rpc.devices();
  Cases cases = {
      {"Allocate 1 device",
       [&](grpc::ClientContext& c, int i) { return rpc.Allocate(c, i, 1); }},
      {absl::StrCat("Allocate ", devices, " devices"),
       [&rpc, devices](grpc::ClientContext& c, int i) {
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
  return cases;
}

// Replicas: Allocate 1 replica and 1 replica on every GPU (as many pods on
// a shared node take), GetPreferredAllocation 1, 4, 8, 16 out of all.
Cases ReplicaCases(RpcCases& rpc) {
  Cases cases = {
      {"Allocate 1 replica",
       [&](grpc::ClientContext& c, int i) { return rpc.Allocate(c, i, 1); }},
      {absl::StrCat("Allocate 1 replica x ", rpc.gpus(), " GPUs"),
       [&](grpc::ClientContext& c, int i) { return rpc.AllocatePerGpu(c, i); }},
  };
  for (int size : {1, 4, 8, 16}) {
    if (size > rpc.devices()) continue;
    cases.emplace_back(
        absl::StrCat("GetPreferredAllocation ", size, " of ", rpc.devices()),
        [&rpc, size](grpc::ClientContext& c, int) {
          return rpc.Preferred(c, size);
        });
  }
  return cases;
}

// The plugin's own CPU time per call of each case, `calls` calls in a row
// (enough that the 10 ms resolution of CpuMicros matters little):
// what a round trip would cost on an idle machine, less gRPC's share in this
// process. The floor case gives gRPC's share on the plugin's side.
absl::Status MeasureCpu(const Cases& cases, int calls, pid_t pid,
                        RpcResults& results) {
  for (const auto& [name, call] : cases) {
    const double before = CpuMicros(pid);
    for (int i = 0; i < calls; ++i) {
      if (auto us = TimeCall(name, i, call); !us.ok()) return us.status();
    }
    results.cpu_us.emplace_back(name, (CpuMicros(pid) - before) / calls);
  }
  return absl::OkStatus();
}

absl::Status RunRpcCases(const PhaseConfig& config, RpcCases& rpc, pid_t pid,
                         RpcResults& results) {
  Cases cases = {{"GetDevicePluginOptions (floor)",
                  [&](grpc::ClientContext& c, int) { return rpc.Options(c); }}};
  for (auto& c : rpc.shared() ? ReplicaCases(rpc) : WholeGpuCases(rpc)) {
    cases.push_back(std::move(c));
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
  if (!rpc.shared()) return absl::OkStatus();
  return MeasureCpu(cases, config.samples, pid, results);
}

// GPU order that alternates between the two halves of the GPUs: on dgx-h100
// (GPUs 0-3 on NUMA node 0, 4-7 on node 1) between the nodes, on islands-16
// between the NVLink islands.
std::vector<int> AlternatingOrder(int n) {
  std::vector<int> order;
  const int half = (n + 1) / 2;
  for (int i = 0; i < half; ++i) {
    order.push_back(i);
    if (i + half < n) order.push_back(i + half);
  }
  return order;
}

// Unhealthy devices in `message`, and how many of them belong to `gpu`.
struct Unhealthy {
  int total = 0;
  int of_gpu = 0;
};
Unhealthy CountUnhealthy(const v1beta1::ListAndWatchResponse& message,
                         const GpuDevices& gpu) {
  const std::set<std::string> ids(gpu.ids.begin(), gpu.ids.end());
  Unhealthy count;
  for (const auto& device : message.devices()) {
    if (device.health() != "Unhealthy") continue;
    ++count.total;
    if (ids.contains(device.id())) ++count.of_gpu;
  }
  return count;
}

// One Xid on `gpu`, timed until the ListAndWatch update that marks it. The
// update must mark every device of that GPU (all its replicas) in addition to
// the `marked_before` devices of the GPUs hit earlier: one message per event,
// since a coalesced or extra update would skew the figure, so anything else
// is an error rather than a sample.
absl::Status OneXid(const BenchPlugin& plugin, Stream& stream,
                    const GpuDevices& gpu, int marked_before, bool cpu,
                    HealthResults& results) {
  const ThreadCpu cpu_before = cpu ? ReadThreadCpu(plugin.pid()) : ThreadCpu();
  const BenchClock::time_point start = BenchClock::now();
  absl::StatusOr<std::string> sent = sim::SendControlCommand(
      plugin.sim_socket_path(), absl::StrCat("xid ", gpu.gpu, " 79"));
  const double control_us = MicrosSince(start);
  if (!sent.ok()) return sent.status();
  v1beta1::ListAndWatchResponse update;
  if (!stream.reader->Read(&update)) {
    return absl::InternalError("ListAndWatch ended while waiting for " +
                               gpu.gpu);
  }
  const double update_us = MicrosSince(start);
  const int size = static_cast<int>(gpu.ids.size());
  const Unhealthy count = CountUnhealthy(update, gpu);
  if (count.total != marked_before + size || count.of_gpu != size) {
    return absl::InternalError(absl::StrCat(
        "update after the Xid on ", gpu.gpu, " marks ", count.of_gpu,
        " of its ", size, " devices and ", count.total - count.of_gpu,
        " others (expected ", marked_before, ")"));
  }
  results.update_us.push_back(update_us);
  results.control_us.push_back(control_us);
  if (cpu) {
    results.cpu_us.push_back(
        CpuMicrosBetween(cpu_before, ReadThreadCpu(plugin.pid())));
  }
  results.message_bytes.push_back(static_cast<double>(update.ByteSizeLong()));
  results.devices_per_gpu = std::max(results.devices_per_gpu, size);
  return absl::OkStatus();
}

// Up to `events` Xids on one fresh plugin (at most one per GPU).
absl::Status HealthOnOnePlugin(const PhaseConfig& config, int events,
                               HealthResults& results) {
  BenchPlugin plugin(config.scratch_root, {.machine = config.machine,
                                           .config_file = config.config_file,
                                           .sim_control = true});
  if (absl::Status s = plugin.Start(); !s.ok()) return s;
  if (absl::Status s = plugin.WaitForHealthMonitor(); !s.ok()) return s;
  std::unique_ptr<Stub> stub = plugin.Dial();
  Stream stream;
  if (absl::Status s = OpenStream(*stub, stream); !s.ok()) return s;
  const std::vector<GpuDevices> gpus = GroupByGpu(Ids(stream.first));
  const std::vector<int> order =
      AlternatingOrder(static_cast<int>(gpus.size()));
  const int n = std::min(events, static_cast<int>(order.size()));
  int marked = 0;
  for (int k = 0; k < n; ++k) {
    const GpuDevices& gpu = gpus[order[k]];
    if (absl::Status s =
            OneXid(plugin, stream, gpu, marked, Shared(gpus), results);
        !s.ok()) {
      return s;
    }
    marked += static_cast<int>(gpu.ids.size());
    results.first_on_plugin.push_back(k == 0);
  }
  return plugin.Stop();
}

}  // namespace

absl::StatusOr<std::vector<double>> MeasureStartToRegistered(
    const PhaseConfig& config) {
  std::vector<double> us;
  for (int i = 0; i < config.starts; ++i) {
    BenchPlugin plugin(
        config.scratch_root,
        {.machine = config.machine, .config_file = config.config_file});
    if (absl::Status s = plugin.Start(); !s.ok()) return s;
    us.push_back(plugin.start_to_registered_us());
    if (absl::Status s = plugin.Stop(); !s.ok()) return s;
  }
  return us;
}

absl::StatusOr<RpcResults> MeasureRpcs(const PhaseConfig& config) {
  BenchPlugin plugin(config.scratch_root, {.machine = config.machine,
                                           .config_file = config.config_file});
  if (absl::Status s = plugin.Start(); !s.ok()) return s;
  if (absl::Status s = plugin.WaitForHealthMonitor(); !s.ok()) return s;
  RpcResults results;
  std::unique_ptr<Stub> stub = plugin.Dial();
  Stream stream;
  if (absl::Status s = OpenStream(*stub, stream); !s.ok()) return s;
  results.registered = ReadMemory(plugin.pid());
  RpcCases rpc(*stub, Ids(stream.first));
  results.devices = rpc.devices();
  results.gpus = rpc.gpus();
  results.list_bytes = stream.first.ByteSizeLong();
  absl::Status run = RunRpcCases(config, rpc, plugin.pid(), results);
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
