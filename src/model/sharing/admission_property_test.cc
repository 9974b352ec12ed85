// The promise of memory shares, as a property over random runs: every pod
// the extender binds is admitted, whatever order the kubelet admits the
// containers in, while the extender keeps binding new pods from the Node
// annotation as it is at that moment.
//
// The model: the plugin records each Allocate answer on the Node as a
// placement before answering; the node agent later replaces a placement by
// the container's attributed entry and prunes the pod's pending entry once
// all its containers are listed, in one write. The extender and the plugin
// see the same annotation and apply the same rule (OutstandingRequests).
#include <algorithm>
#include <random>
#include <string>
#include <vector>

#include "gtest/gtest.h"
#include "src/model/sharing/annotations.h"
#include "src/model/sharing/pack.h"

namespace gpulet::sharing {
namespace {

struct Allocated {
  std::string uid, container, gpu;
};

struct Sim {
  std::mt19937 rng;
  NodeMemory node;  // the annotation: used, attributed pods, placements
  Pending pending;
  std::vector<Allocated> placed;       // what each placement really served
  std::vector<std::string> allocated;  // "<uid>/<container>" admitted
  int bound = 0, admitted = 0;

  int Pick(int lo, int hi) {
    return std::uniform_int_distribution<int>(lo, hi)(rng);
  }
  bool IsAllocated(const std::string& key) const {
    return std::find(allocated.begin(), allocated.end(), key) !=
           allocated.end();
  }
};

Sim NewSim(unsigned seed) {
  Sim r{.rng = std::mt19937(seed)};
  const int gpus = r.Pick(1, 5);
  for (int g = 0; g < gpus; ++g) {
    const int units = r.Pick(4, 16);
    r.node.gpus.push_back(GpuSpace{.uuid = "GPU-" + std::to_string(g),
                                   .index = g,
                                   .units = units,
                                   .used = r.Pick(0, units / 2)});
  }
  return r;
}

// The extender: binds a random pod when it packs beside what the
// annotation shows as used and outstanding.
void Bind(Sim& r) {
  PendingPod pod{.uid = "u" + std::to_string(r.bound),
                 .ns = "ns",
                 .name = "p" + std::to_string(r.bound)};
  const int containers = r.Pick(1, 3) == 1 ? 2 : 1;
  for (int c = 0; c < containers; ++c) {
    pod.containers.push_back({"c" + std::to_string(c), r.Pick(1, 6)});
  }
  std::vector<Request> reqs = OutstandingRequests(r.pending, r.node);
  for (const PendingContainer& c : pod.containers) {
    reqs.push_back({pod.uid + "/" + c.name, c.units});
  }
  if (!Pack(r.node.gpus, reqs).ok()) return;
  ++r.bound;
  r.pending.pods.push_back(std::move(pod));
}

// The kubelet admits one random container not allocated yet; the plugin
// chooses its GPU and records the placement before answering.
::testing::AssertionResult Admit(Sim& r) {
  std::vector<std::pair<const PendingPod*, const PendingContainer*>> waiting;
  for (const PendingPod& p : r.pending.pods) {
    for (const PendingContainer& c : p.containers) {
      if (!r.IsAllocated(p.uid + "/" + c.name)) waiting.push_back({&p, &c});
    }
  }
  if (waiting.empty()) return ::testing::AssertionSuccess();
  auto [pod, container] = waiting[r.Pick(0, int(waiting.size()) - 1)];
  const std::string key = pod->uid + "/" + container->name;
  auto c = ChooseGpu(r.node.gpus, OutstandingRequests(r.pending, r.node),
                     container->units);
  if (!c.ok() || !c->pending_fits) {
    return ::testing::AssertionFailure()
           << "admission of " << key << " (" << container->units
           << " units) after " << r.admitted << " admissions and " << r.bound
           << " binds: "
           << (c.ok() ? "the rest no longer fits" : c.status().ToString());
  }
  GpuSpace& gpu = r.node.gpus[c->gpu];
  if (FreeUnits(gpu) < container->units) {
    return ::testing::AssertionFailure() << key << ": " << gpu.uuid << " full";
  }
  gpu.used += container->units;
  std::vector<std::string> ids;
  for (int64_t k = 0; k < container->units; ++k) ids.push_back(key);
  r.node.placements.push_back({gpu.uuid, container->units, ids, {}});
  r.placed.push_back({pod->uid, container->name, gpu.uuid});
  r.allocated.push_back(key);
  ++r.admitted;
  return ::testing::AssertionSuccess();
}

// The node agent: PodResources lists one placed container; its placement
// becomes the pod's entry, and the pending entry goes once all are listed.
void Attribute(Sim& r) {
  if (r.placed.empty()) return;
  const size_t i = r.Pick(0, int(r.placed.size()) - 1);
  const Allocated a = r.placed[i];
  const int64_t units = r.node.placements[i].units;
  r.placed.erase(r.placed.begin() + i);
  r.node.placements.erase(r.node.placements.begin() + i);
  UsedPod* listed = nullptr;
  for (UsedPod& p : r.node.pods) {
    if (p.uid == a.uid) listed = &p;
  }
  if (listed == nullptr) {
    r.node.pods.push_back({.uid = a.uid, .ns = "ns"});
    listed = &r.node.pods.back();
  }
  listed->containers.push_back({a.container, a.gpu, units});
  std::erase_if(r.pending.pods,
                [&](const PendingPod& p) { return Admitted(p, r.node); });
}

TEST(AdmissionProperty, EveryBoundPodIsAdmittedWhileTheExtenderBinds) {
  int admitted = 0;
  for (unsigned seed = 1; seed <= 1500; ++seed) {
    Sim r = NewSim(seed);
    for (int step = 0; step < 60; ++step) {
      const int what = r.Pick(0, 2);
      if (what == 0) {
        Bind(r);
      } else if (what == 1) {
        ASSERT_TRUE(Admit(r)) << "seed " << seed;
      } else {
        Attribute(r);
      }
    }
    admitted += r.admitted;
  }
  EXPECT_GT(admitted, 10000) << "the runs should admit many containers";
}

}  // namespace
}  // namespace gpulet::sharing
