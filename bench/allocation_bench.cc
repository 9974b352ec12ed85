// BestSet cost on the simulator's 8-GPU NVSwitch machine (dgx-h100) and its
// 16-GPU two-island machine (islands-16), for every request size with every
// GPU available (the largest search), and on islands-16 with one GPU busy
// per island and the first free GPU forced (must_include). The worst size
// is the figure docs/allocation.md quotes. Uniform16 is the adversarial
// all-ties case.
#include <cstdlib>
#include <iostream>
#include <string>
#include <vector>

#include "benchmark/benchmark.h"
#include "sim/profiles.h"
#include "src/model/allocation/best_set.h"
#include "src/model/testing/test_topologies.h"

namespace gpulet::allocation {
namespace {

ScoreMatrix Load(const std::string& profile) {
  absl::StatusOr<sim::Machine> machine = sim::LoadMachine(profile);
  if (!machine.ok()) {
    std::cerr << machine.status() << "\n";
    std::abort();
  }
  return BuildScoreMatrix(testing::FromMachine(*machine));
}

const ScoreMatrix& Matrix(const std::string& profile) {
  static const ScoreMatrix h100 = Load("dgx-h100");
  static const ScoreMatrix islands = Load("islands-16");
  return profile == "dgx-h100" ? h100 : islands;
}

void Run(benchmark::State& state, const ScoreMatrix& m,
         const std::vector<int>& available, const std::vector<int>& must) {
  const int size = static_cast<int>(state.range(0));
  for (auto _ : state) {
    absl::StatusOr<std::vector<int>> got = BestSet(m, available, must, size);
    benchmark::DoNotOptimize(got);
  }
}

std::vector<int> All(int n) {
  std::vector<int> v(n);
  for (int i = 0; i < n; ++i) v[i] = i;
  return v;
}

void BM_BestSet_DgxH100(benchmark::State& state) {
  Run(state, Matrix("dgx-h100"), All(8), {});
}
BENCHMARK(BM_BestSet_DgxH100)->DenseRange(1, 8);

void BM_BestSet_Islands16(benchmark::State& state) {
  Run(state, Matrix("islands-16"), All(16), {});
}
BENCHMARK(BM_BestSet_Islands16)->DenseRange(1, 16);

void BM_BestSet_Islands16_BusyMust(benchmark::State& state) {
  std::vector<int> available;
  for (int i = 0; i < 16; ++i) {
    if (i != 0 && i != 8) available.push_back(i);
  }
  Run(state, Matrix("islands-16"), available, {1});
}
BENCHMARK(BM_BestSet_Islands16_BusyMust)->DenseRange(1, 14);

// Adversarial: every pair scores the same, so no bound ever prunes and every
// size-k subset is visited for the tie-break (C(16, 8) = 12870 at size 8).
void BM_BestSet_Uniform16(benchmark::State& state) {
  std::vector<int64_t> scores(16 * 16, 10 * kUnitScale);
  std::vector<unsigned> index(16);
  for (unsigned i = 0; i < 16; ++i) index[i] = i;
  Run(state, ScoreMatrix(index, scores), All(16), {});
}
BENCHMARK(BM_BestSet_Uniform16)->DenseRange(1, 16);

}  // namespace
}  // namespace gpulet::allocation

BENCHMARK_MAIN();
