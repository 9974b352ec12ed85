// AllocationLedger: the node agent's merge of the kubelet's PodResources
// listings with the plugin's Allocate answers never counts a unit twice.
#include <algorithm>
#include <map>
#include <random>
#include <set>
#include <string>
#include <vector>

#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "src/model/sharing/node_view.h"

namespace gpulet::sharing {
namespace {

using ::testing::ElementsAre;
using ::testing::Field;
using ::testing::IsEmpty;

const absl::Time kT0 = absl::FromUnixSeconds(1795496400);
const absl::Duration kMaxAge = absl::Minutes(5);

// Units `from`..`from + n - 1` of GPU `gpu`.
std::vector<std::string> Ids(const std::string& gpu, int from, int n) {
  std::vector<std::string> out;
  for (int k = from; k < from + n; ++k) {
    out.push_back(gpu + "::m" + std::to_string(k));
  }
  return out;
}

struct Held {
  std::string pod, container, gpu;
  std::vector<std::string> ids;
};

// A listing of one-container pods in namespace ns.
Listing List(const std::vector<Held>& held) {
  Listing out;
  for (const Held& h : held) {
    UsedPod pod{.ns = "ns", .name = h.pod};
    pod.containers.push_back(
        {h.container, h.gpu, static_cast<int64_t>(h.ids.size())});
    out.ids[ListedKey(pod, pod.containers.back())] = h.ids;
    out.pods.push_back(std::move(pod));
  }
  return out;
}

Allocation Answer(const std::string& gpu, std::vector<std::string> ids) {
  const auto units = static_cast<int64_t>(ids.size());
  return Allocation{gpu, units, std::move(ids), kT0};
}

// What the node annotation would count on `gpu`.
int64_t Used(const AllocationLedger& ledger, const std::string& gpu) {
  int64_t used = 0;
  for (const UsedPod& pod : ledger.Listed()) {
    for (const UsedContainer& c : pod.containers) {
      if (c.gpu == gpu) used += c.units;
    }
  }
  for (const Allocation& a : ledger.unmatched()) {
    if (a.gpu == gpu) used += a.units;
  }
  return used;
}

TEST(AllocationLedger, AnAnswerLeavesOnceTheKubeletListsItsUnits) {
  AllocationLedger ledger;
  ledger.Record(Answer("GPU-a", Ids("GPU-a", 0, 2)));
  ledger.Record(Answer("GPU-a", Ids("GPU-a", 2, 4)));
  ledger.Observe(List({{"p", "c", "GPU-a", Ids("GPU-a", 0, 2)}}), ledger.Mark(),
                 kT0, kMaxAge);
  EXPECT_THAT(ledger.unmatched(), ElementsAre(Field(&Allocation::units, 4)));
  EXPECT_EQ(Used(ledger, "GPU-a"), 6);
  // Never listed: it leaves once older than the limit.
  ledger.Observe(List({{"p", "c", "GPU-a", Ids("GPU-a", 0, 2)}}), ledger.Mark(),
                 kT0 + absl::Minutes(6), kMaxAge);
  EXPECT_THAT(ledger.unmatched(), IsEmpty());
  EXPECT_EQ(Used(ledger, "GPU-a"), 2);
}

// The caller knows every pod asking for the resource is in the listing (a
// pod deleted within a second of starting, before any listing showed it):
// the answer no listing shows leaves at once, not after max_age; one
// recorded after the listing's mark stays.
TEST(AllocationLedger, ASettledListingLetsUnlistedAnswersGo) {
  AllocationLedger ledger;
  ledger.Record(Answer("GPU-a", Ids("GPU-a", 2, 4)));
  const uint64_t mark = ledger.Mark();
  ledger.Record(Answer("GPU-a", Ids("GPU-a", 6, 1)));
  const Listing p = List({{"p", "c", "GPU-a", Ids("GPU-a", 0, 2)}});
  ledger.Observe(p, mark, kT0, kMaxAge);
  EXPECT_EQ(Used(ledger, "GPU-a"), 7) << "not settled: both answers count";
  ledger.Observe(p, mark, kT0, kMaxAge, /*settled=*/true);
  EXPECT_THAT(ledger.unmatched(), ElementsAre(Field(&Allocation::units, 1)));
  EXPECT_EQ(Used(ledger, "GPU-a"), 3);
}

// The placement and the attributed entry for the same unit IDs: a listing
// read while Allocate was answered may show the container already. It is
// counted once, as the answer, until a later listing attributes it.
TEST(AllocationLedger, AListingReadDuringAllocateCountsTheUnitsOnce) {
  AllocationLedger ledger;
  const uint64_t mark = ledger.Mark();
  ledger.Record(Answer("GPU-a", Ids("GPU-a", 2, 2)));
  const Listing both = List({{"p", "c", "GPU-a", Ids("GPU-a", 0, 2)},
                             {"q", "c", "GPU-a", Ids("GPU-a", 2, 2)}});
  ledger.Observe(both, mark, kT0, kMaxAge);
  EXPECT_EQ(ledger.unmatched().size(), 1u);
  EXPECT_THAT(ledger.Listed(), ElementsAre(Field(&UsedPod::name, "p")));
  EXPECT_EQ(Used(ledger, "GPU-a"), 4);
  ledger.Observe(both, ledger.Mark(), kT0, kMaxAge);
  EXPECT_THAT(ledger.unmatched(), IsEmpty());
  EXPECT_EQ(ledger.Listed().size(), 2u);
  EXPECT_EQ(Used(ledger, "GPU-a"), 4);
}

// A restarted kubelet allocates again for a container it lists (its
// device bookkeeping lost the container): the listed entry and the answer
// are one container, counted once.
TEST(AllocationLedger, AKubeletRestartAllocatingAListedContainerAgain) {
  AllocationLedger ledger;
  const Listing before = List({{"p", "c", "GPU-a", Ids("GPU-a", 0, 3)}});
  ledger.Observe(before, ledger.Mark(), kT0, kMaxAge);
  ledger.Record(Answer("GPU-a", Ids("GPU-a", 0, 3)));
  EXPECT_THAT(ledger.Listed(), IsEmpty());
  EXPECT_EQ(Used(ledger, "GPU-a"), 3);
  // The kubelet lists it again under the same units: the answer leaves.
  ledger.Observe(before, ledger.Mark(), kT0, kMaxAge);
  EXPECT_THAT(ledger.unmatched(), IsEmpty());
  EXPECT_EQ(Used(ledger, "GPU-a"), 3);
}

// Pods deleted while the kubelet was down are still in the last listing;
// the restarted kubelet hands their units to new containers before any
// new listing is read. Those containers stop counting at once.
TEST(AllocationLedger, UnitsOfPodsDeletedWhileTheKubeletWasDown) {
  AllocationLedger ledger;
  ledger.Observe(List({{"gone", "c", "GPU-a", Ids("GPU-a", 0, 6)},
                       {"stays", "c", "GPU-a", Ids("GPU-a", 6, 2)},
                       {"gone2", "c", "GPU-b", Ids("GPU-b", 0, 8)}}),
                 ledger.Mark(), kT0, kMaxAge);
  ledger.Record(Answer("GPU-a", Ids("GPU-a", 4, 2)));
  ledger.Record(Answer("GPU-b", Ids("GPU-b", 0, 8)));
  EXPECT_THAT(ledger.Listed(), ElementsAre(Field(&UsedPod::name, "stays")));
  EXPECT_EQ(Used(ledger, "GPU-a"), 4);
  EXPECT_EQ(Used(ledger, "GPU-b"), 8);
}

// An answer whose container never showed up (admission failed, pod
// deleted) loses its units to a later answer or a later listing.
TEST(AllocationLedger, UnitsHandedOutAgainLeaveTheOlderAnswer) {
  AllocationLedger ledger;
  ledger.Record(Answer("GPU-a", Ids("GPU-a", 0, 4)));
  ledger.Record(Answer("GPU-a", Ids("GPU-a", 2, 4)));
  EXPECT_THAT(ledger.unmatched(),
              ElementsAre(Field(&Allocation::ids, Ids("GPU-a", 2, 4))));
  ledger.Record(Answer("GPU-a", Ids("GPU-a", 6, 2)));
  ledger.Observe(List({{"r", "c", "GPU-a", Ids("GPU-a", 1, 2)}}), ledger.Mark(),
                 kT0, kMaxAge);
  EXPECT_THAT(ledger.unmatched(),
              ElementsAre(Field(&Allocation::ids, Ids("GPU-a", 6, 2))));
  EXPECT_EQ(Used(ledger, "GPU-a"), 4);
}

// A restarted kubelet lists active pods only, yet holds the units of the
// pods deleted while it was down until it has dropped them: while the API
// server still has such a pod, its containers keep counting; not once it
// is gone, nor when the listing shows one of its units elsewhere.
TEST(CarryOver, KeepsContainersOfPodsStillBeingDeleted) {
  const Listing before = List({{"dying", "c", "GPU-a", Ids("GPU-a", 0, 2)},
                               {"gone", "c", "GPU-a", Ids("GPU-a", 2, 2)},
                               {"reused", "c", "GPU-a", Ids("GPU-a", 4, 2)},
                               {"stays", "c", "GPU-a", Ids("GPU-a", 6, 2)}});
  const Listing now = List({{"stays", "c", "GPU-a", Ids("GPU-a", 6, 2)},
                            {"new", "c", "GPU-a", Ids("GPU-a", 5, 1)}});
  Listing merged = CarryOver(
      before, now, [](const UsedPod& pod) { return pod.name != "gone"; });
  std::vector<std::string> names;
  for (const UsedPod& pod : merged.pods) names.push_back(pod.name);
  EXPECT_THAT(names, ElementsAre("stays", "new", "dying"));
  EXPECT_EQ(merged.ids.size(), 3u);
  AllocationLedger ledger;
  ledger.Observe(merged, ledger.Mark(), kT0, kMaxAge);
  EXPECT_EQ(Used(ledger, "GPU-a"), 5);
  // An answer the kubelet gave some of dying's units, its container not
  // listed yet: a carried entry is stale, so the answer stays and dying
  // stops counting, whichever came first.
  ledger.Record(Answer("GPU-a", Ids("GPU-a", 0, 3)));
  ledger.Observe(merged, ledger.Mark(), kT0, kMaxAge);
  EXPECT_EQ(ledger.unmatched().size(), 1u);
  EXPECT_EQ(Used(ledger, "GPU-a"), 6);
}

// A model kubelet with one GPU allocates, deletes, forgets a container
// and allocates it again (as after its restart: under the same units, or
// under others once a listing no longer showed it), and is listed at
// random moments, some listings read while an Allocate is answered or
// begun before it and read after (the node agent avoids both, KubeletGate,
// but the ledger does not rely on it). The ledger never counts more than
// the GPU has, and after a listing with no Allocate since, exactly what
// the kubelet holds (every container deleted or forgotten was listed once
// by a listing begun after its Allocate, so no answer waits for its
// timeout).
TEST(AllocationLedger, NeverCountsAUnitTwiceOverRandomRuns) {
  const int kUnits = 16;
  for (unsigned seed = 1; seed <= 300; ++seed) {
    std::mt19937 rng(seed);
    auto pick = [&](int lo, int hi) {
      return std::uniform_int_distribution<int>(lo, hi)(rng);
    };
    std::map<std::string, std::vector<std::string>> held;  // pod -> units
    std::set<std::string> seen;  // pods listed since their last Allocate
    AllocationLedger ledger;
    auto free_units = [&] {
      std::set<std::string> used;
      for (const auto& [pod, ids] : held) used.insert(ids.begin(), ids.end());
      std::vector<std::string> out;
      for (const std::string& id : Ids("GPU-a", 0, kUnits)) {
        if (!used.contains(id)) out.push_back(id);
      }
      std::shuffle(out.begin(), out.end(), rng);
      return out;
    };
    auto observe = [&](uint64_t mark) {
      std::vector<Held> list;
      for (const auto& [pod, ids] : held) {
        list.push_back({pod, "c", "GPU-a", ids});
        if (mark == ledger.Mark()) seen.insert(pod);
      }
      ledger.Observe(List(list), mark, kT0, kMaxAge);
    };
    auto a_seen_pod = [&]() -> std::string {
      if (seen.empty()) return "";
      auto it = seen.begin();
      std::advance(it, pick(0, static_cast<int>(seen.size()) - 1));
      return *it;
    };
    auto allocate = [&](const std::string& pod, std::vector<std::string> ids,
                        bool writer_reads) {
      const uint64_t mark = ledger.Mark();
      seen.erase(pod);
      ledger.Record(Answer("GPU-a", ids));
      if (writer_reads) observe(ledger.Mark());
      held[pod] = std::move(ids);
      if (pick(0, 3) == 0) observe(mark);
    };
    for (int step = 0; step < 80; ++step) {
      const int what = pick(0, 4);
      const std::string some = a_seen_pod();
      if (what <= 1) {
        std::vector<std::string> free = free_units();
        if (free.empty()) continue;
        free.resize(pick(1, static_cast<int>(free.size())));
        allocate("p" + std::to_string(step), free, pick(0, 1) == 0);
      } else if (what == 2 && !some.empty()) {  // deleted, not listed yet
        held.erase(some);
        seen.erase(some);
      } else if (what == 3 && !some.empty()) {  // forgotten, allocated again
        std::vector<std::string> again = held[some];
        held.erase(some);
        if (pick(0, 1) == 0) {
          observe(ledger.Mark());
          const size_t n = again.size();
          again = free_units();
          again.resize(n);
        }
        allocate(some, again, pick(0, 1) == 0);
      } else if (what == 4) {
        observe(ledger.Mark());
        int64_t truth = 0;
        for (const auto& [pod, ids] : held) truth += ids.size();
        ASSERT_EQ(Used(ledger, "GPU-a"), truth) << "seed " << seed;
      }
      ASSERT_LE(Used(ledger, "GPU-a"), kUnits)
          << "seed " << seed << " step " << step;
    }
  }
}

}  // namespace
}  // namespace gpulet::sharing
