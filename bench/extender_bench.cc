// The scheduler extender's own cost (docs/benchmarks.md):
//
// filter: one kube-scheduler filter call (ExtenderArgs with every node's
//   name, nodeCacheCapable) through Extender::Handle: JSON decode, a
//   packing check per node against the node cache, the JSON answer. Caches
//   of 1,000 and 5,000 nodes, each with 8 GPUs of 80 units, random use and
//   a few pending pods; p50/p99 over the calls.
// bind: binds per second through Binder against an in-memory API server
//   (FakeApiServer: GET, merge patch with resourceVersion check, binding),
//   from 1 and 4 threads over 64 nodes, with the conflicts they caused. It
//   is the extender's work per bind; a real API server adds its round
//   trips (a GET of the pod, one PATCH and one POST per bind when the
//   cache is current).
#include <atomic>
#include <cstdio>
#include <memory>
#include <random>
#include <string>
#include <thread>
#include <vector>

#include "bench/bench_stats.h"
#include "src/base/common/clock.h"
#include "src/cluster/extender/extender.h"
#include "src/cluster/testing/fake_api_server.h"
#include "src/cluster/testing/test_nodes.h"

namespace gpulet::extender {
namespace {

using nlohmann::json;

std::vector<json> MakeNodes(int count, std::mt19937& rng) {
  std::uniform_int_distribution<int64_t> used(0, 80);
  std::uniform_int_distribution<int> pending(0, 3);
  std::vector<json> nodes;
  for (int n = 0; n < count; ++n) {
    const std::string name = "node-" + std::to_string(n);
    std::vector<std::pair<int64_t, int64_t>> gpus;
    for (int g = 0; g < 8; ++g) gpus.push_back({80, used(rng)});
    const sharing::NodeMemory memory = testing::Memory(name, gpus);
    sharing::Pending p;
    for (int i = pending(rng); i > 0; --i) {
      p.pods.push_back(
          testing::PendingEntry(name + "-" + std::to_string(i), {8, 4}));
    }
    nodes.push_back(testing::NodeObject(name, &memory, &p));
  }
  return nodes;
}

void Filter(int count) {
  std::mt19937 rng(42);
  common::FakeClock clock;
  testing::FakeApiServer api;
  kube::Client client(api, clock, {});
  NodeCache cache;
  cache.Replace(MakeNodes(count, rng));
  Binder binder(client, cache, {});
  metrics::Registry registry;
  Extender extender(cache, binder, registry, {});
  json names = json::array();
  for (int n = 0; n < count; ++n) names.push_back("node-" + std::to_string(n));
  http::Request request;
  request.method = "POST";
  request.path = "/gpu-memory/filter";
  request.body = json{
      {"Pod", testing::PodObject("p", {24, 12})},
      {"NodeNames",
       names}}.dump();
  std::vector<double> ms;
  size_t fit = 0;
  for (int i = 0; i < 200; ++i) {
    const auto start = bench::BenchClock::now();
    http::Response r = extender.Handle(request);
    ms.push_back(bench::MicrosSince(start) / 1000);
    if (i == 0) fit = json::parse(r.body)["NodeNames"].size();
  }
  const bench::Summary s = bench::Summarize(ms);
  std::printf(
      "filter  nodes=%-5d fit=%-5zu calls=%zu p50=%.2f ms p99=%.2f ms "
      "max=%.2f ms\n",
      count, fit, s.n, s.p50, s.p99, s.max);
}

void Bind(int threads) {
  constexpr int kNodes = 64;
  constexpr int kPodsPerThread = 2000;
  testing::FakeApiServer api;
  for (int n = 0; n < kNodes; ++n) {
    // Room for every pod: 8 GPUs of 1,000 units, none used, nothing pending.
    const std::string name = "node-" + std::to_string(n);
    const sharing::NodeMemory memory = testing::Memory(
        name, std::vector<std::pair<int64_t, int64_t>>(8, {1000, 0}));
    api.AddNode(testing::NodeObject(name, &memory));
  }
  common::FakeClock clock;
  kube::ClientOptions options;
  options.qps = 0;
  kube::Client client(api, clock, options);
  NodeCache cache;
  std::vector<json> nodes;
  for (int n = 0; n < kNodes; ++n)
    nodes.push_back(api.Node("node-" + std::to_string(n)));
  cache.Replace(nodes);
  BinderOptions binder_options;
  binder_options.max_conflicts = 1000;
  Binder binder(client, cache, binder_options);
  std::vector<std::vector<std::shared_ptr<const PodRequest>>> pods(threads);
  for (int t = 0; t < threads; ++t) {
    for (int i = 0; i < kPodsPerThread; ++i) {
      const std::string name =
          "p-" + std::to_string(t) + "-" + std::to_string(i);
      json pod = testing::PodObject(name, {1});
      api.AddPod(pod);
      pods[t].push_back(std::make_shared<const PodRequest>(
          *ReadPod(pod, testing::kResource, Policy::kBinpack, "pod")));
    }
  }
  std::atomic<int> failures{0};
  const auto start = bench::BenchClock::now();
  {
    std::vector<std::jthread> workers;
    for (int t = 0; t < threads; ++t) {
      workers.emplace_back([&, t] {
        for (int i = 0; i < kPodsPerThread; ++i) {
          BindRequest r;
          r.pod_name = pods[t][i]->name;
          r.pod_namespace = "default";
          r.pod_uid = pods[t][i]->uid;
          r.node = "node-" + std::to_string((i * 7 + t) % kNodes);
          if (!binder.Bind(r, nullptr).ok()) ++failures;
        }
      });
    }
  }
  const double seconds = bench::MicrosSince(start) / 1e6;
  const int total = threads * kPodsPerThread;
  std::printf(
      "bind    threads=%d binds=%d failed=%d conflicts=%lld "
      "rate=%.0f binds/s\n",
      threads, total, failures.load(), static_cast<long long>(api.conflicts()),
      total / seconds);
}

}  // namespace
}  // namespace gpulet::extender

int main() {
  gpulet::extender::Filter(1000);
  gpulet::extender::Filter(5000);
  gpulet::extender::Bind(1);
  gpulet::extender::Bind(4);
  return 0;
}
