// The replica and MIG policies alone (allocation::PreferredAllocation, no
// gRPC): 16 GPUs of islands-16 × 48 time-slicing replicas (768 devices),
// distributed and packed, every replica available or a third of them
// already allocated, sizes 1, 2, 4, 8, 16; and MIG devices (7 per GPU) on
// dgx-h100 (8 GPUs) and islands-16, sizes 1..16. Each call includes the
// request's validation and ID index over the whole snapshot.
#include <cstdio>
#include <cstdlib>
#include <string>
#include <vector>

#include "benchmark/benchmark.h"
#include "sim/profiles.h"
#include "src/model/allocation/preferred_handler.h"
#include "src/model/testing/test_topologies.h"

namespace gpulet::allocation {
namespace {

constexpr int kReplicas = 48;
constexpr int kMigPerGpu = 7;

std::shared_ptr<const ScoreMatrix> Load(const std::string& profile) {
  absl::StatusOr<sim::Machine> machine = sim::LoadMachine(profile);
  if (!machine.ok()) {
    std::fprintf(stderr, "%s\n",
                 std::string(machine.status().message()).c_str());
    std::abort();
  }
  return std::make_shared<const ScoreMatrix>(
      BuildScoreMatrix(testing::FromMachine(*machine)));
}

const std::shared_ptr<const ScoreMatrix>& Matrix(const std::string& profile) {
  static const auto h100 = Load("dgx-h100");
  static const auto islands = Load("islands-16");
  return profile == "dgx-h100" ? h100 : islands;
}

// UUID-shaped IDs as the kubelet sees them.
std::string Uuid(const char* kind, int gpu, int k) {
  char id[64];
  std::snprintf(id, sizeof(id), "%s-%08x-4b1f-9e2c-7d3a-%012x", kind,
                0x5eed0000 + gpu, 0xa11c0000 + k);
  return id;
}

struct Fixture {
  pluginapi::DeviceSnapshot snapshot;
  std::vector<std::string> available;
};

// Replica r of GPU g is allocated when busy and (g * 7 + r) % 3 == 0.
Fixture Replicas(int gpus, bool busy) {
  Fixture f;
  for (int g = 0; g < gpus; ++g) {
    for (int r = 0; r < kReplicas; ++r) {
      pluginapi::Device d;
      d.id = Uuid("GPU", g, 0) + "::" + std::to_string(r);
      d.gpu_index = g;
      d.replica = r;
      d.numa_nodes = {g < gpus / 2 ? 0 : 1};
      f.snapshot.devices.push_back(d);
      if (!busy || (g * 7 + r) % 3 != 0) f.available.push_back(d.id);
    }
  }
  return f;
}

Fixture Mig(int gpus) {
  Fixture f;
  for (int g = 0; g < gpus; ++g) {
    for (int k = 0; k < kMigPerGpu; ++k) {
      pluginapi::Device d;
      d.id = Uuid("MIG", g, k);
      d.gpu_index = g;
      d.gpu_instance_id = k + 7;
      d.compute_instance_id = 0;
      f.snapshot.devices.push_back(d);
      // GPU g has its first g % 4 MIG devices in use: uneven capacities.
      if (k >= g % 4) f.available.push_back(d.id);
    }
  }
  return f;
}

void Run(benchmark::State& state, const Fixture& f,
         const std::shared_ptr<const ScoreMatrix>& m, SharedPolicy policy) {
  const int size = static_cast<int>(state.range(0));
  const PreferredOptions options{policy};
  for (auto _ : state) {
    auto got =
        PreferredAllocation(m, options, f.snapshot, f.available, {}, size);
    if (!got.ok())
      state.SkipWithError(std::string(got.status().message()).c_str());
    benchmark::DoNotOptimize(got);
  }
  state.counters["devices"] = static_cast<double>(f.snapshot.devices.size());
}

void BM_Replicas16x48_Distributed(benchmark::State& state) {
  static const Fixture f = Replicas(16, false);
  Run(state, f, Matrix("islands-16"), SharedPolicy::kDistributed);
}
void BM_Replicas16x48_Busy_Distributed(benchmark::State& state) {
  static const Fixture f = Replicas(16, true);
  Run(state, f, Matrix("islands-16"), SharedPolicy::kDistributed);
}
void BM_Replicas16x48_Packed(benchmark::State& state) {
  static const Fixture f = Replicas(16, false);
  Run(state, f, Matrix("islands-16"), SharedPolicy::kPacked);
}
void BM_Replicas16x48_Busy_Packed(benchmark::State& state) {
  static const Fixture f = Replicas(16, true);
  Run(state, f, Matrix("islands-16"), SharedPolicy::kPacked);
}
BENCHMARK(BM_Replicas16x48_Distributed)
    ->Arg(1)
    ->Arg(2)
    ->Arg(4)
    ->Arg(8)
    ->Arg(16);
BENCHMARK(BM_Replicas16x48_Busy_Distributed)
    ->Arg(1)
    ->Arg(2)
    ->Arg(4)
    ->Arg(8)
    ->Arg(16);
BENCHMARK(BM_Replicas16x48_Packed)->Arg(1)->Arg(2)->Arg(4)->Arg(8)->Arg(16);
BENCHMARK(BM_Replicas16x48_Busy_Packed)
    ->Arg(1)
    ->Arg(2)
    ->Arg(4)
    ->Arg(8)
    ->Arg(16);

void BM_Mig_DgxH100(benchmark::State& state) {
  static const Fixture f = Mig(8);
  Run(state, f, Matrix("dgx-h100"), SharedPolicy::kDistributed);
}
BENCHMARK(BM_Mig_DgxH100)->Arg(1)->Arg(4)->Arg(7)->Arg(8)->Arg(16)->Arg(32);

void BM_Mig_Islands16(benchmark::State& state) {
  static const Fixture f = Mig(16);
  Run(state, f, Matrix("islands-16"), SharedPolicy::kDistributed);
}
BENCHMARK(BM_Mig_Islands16)->Arg(1)->Arg(4)->Arg(8)->Arg(16)->Arg(32)->Arg(64);

}  // namespace
}  // namespace gpulet::allocation

BENCHMARK_MAIN();
