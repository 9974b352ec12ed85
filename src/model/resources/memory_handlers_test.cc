#include "src/model/resources/memory_handlers.h"

#include <string>
#include <vector>

#include "absl/status/status.h"
#include "absl/strings/str_cat.h"
#include "deviceplugin/v1beta1/api.pb.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "src/model/allocation/allocate_response.h"
#include "src/model/resources/memory_units.h"

namespace gpulet::resources {
namespace {

using ::testing::ElementsAre;
using ::testing::HasSubstr;
using ::testing::Pair;
using ::testing::UnorderedElementsAre;

// GPU-0 and GPU-1 with `units` memory units each.
pluginapi::DeviceSnapshot Snapshot(int units) {
  pluginapi::DeviceSnapshot s;
  for (int g = 0; g < 2; ++g) {
    for (int k = 0; k < units; ++k) {
      pluginapi::Device d;
      d.id = sharing::MemoryUnitId("GPU-" + std::to_string(g), k);
      d.visible_id = "GPU-" + std::to_string(g);
      d.gpu_index = g;
      d.replica = k;
      s.devices.push_back(d);
    }
  }
  s.BuildIndex();
  return s;
}

std::vector<std::string> Units(int gpu, std::vector<int> ks) {
  std::vector<std::string> out;
  for (int k : ks) {
    out.push_back(sharing::MemoryUnitId("GPU-" + std::to_string(gpu), k));
  }
  return out;
}

std::vector<std::string> Concat(std::vector<std::string> a,
                                const std::vector<std::string>& b) {
  a.insert(a.end(), b.begin(), b.end());
  return a;
}

TEST(MemoryAllocate, OneGpuGetsItsLimit) {
  std::vector<std::pair<std::string, int64_t>> told;
  MemoryHandlerOptions o;
  o.resource_name = "nvidia.com/gpu-memory";
  o.unit_mib = 1024;
  std::vector<std::string> told_ids;
  o.on_allocate = [&](const std::string& gpu, int64_t units,
                      const std::vector<std::string>& ids) {
    told.emplace_back(gpu, units);
    told_ids = ids;
    return absl::OkStatus();
  };
  auto allocate = MakeMemoryAllocateHandler(allocation::EnvvarResponse, o);
  auto r = allocate(Snapshot(4), Units(1, {0, 3}));
  ASSERT_TRUE(r.ok()) << r.status();
  EXPECT_EQ(r->envs().at(kMemoryLimitEnv), "2048");
  EXPECT_EQ(r->envs().at("NVIDIA_VISIBLE_DEVICES"), "GPU-1");
  EXPECT_EQ(r->envs().count(kGpushareIndexEnv), 0u);
  EXPECT_THAT(told, ElementsAre(Pair("GPU-1", 2)));
  EXPECT_THAT(told_ids, ElementsAre("GPU-1::m0", "GPU-1::m3"));
}

TEST(MemoryAllocate, GpushareNameAddsItsVariables) {
  MemoryHandlerOptions o;
  o.resource_name = kGpushareResource;
  o.unit_mib = 1024;
  auto allocate = MakeMemoryAllocateHandler(allocation::EnvvarResponse, o);
  auto r = allocate(Snapshot(4), Units(1, {2, 3, 1}));
  ASSERT_TRUE(r.ok()) << r.status();
  EXPECT_EQ(r->envs().at(kGpushareIndexEnv), "1");
  EXPECT_EQ(r->envs().at(kGpusharePodEnv), "3");
  EXPECT_EQ(r->envs().at(kGpushareContainerEnv), "3");
  EXPECT_EQ(r->envs().at(kGpushareDeviceEnv), "4");
  EXPECT_EQ(r->envs().at(kMemoryLimitEnv), "3072");
}

TEST(MemoryAllocate, MpsPointsAtTheGpusDaemonWithTheLimit) {
  MemoryHandlerOptions o;
  o.resource_name = "nvidia.com/gpu-memory";
  o.unit_mib = 512;
  o.mps_root = "/run/nvidia/mps";
  auto allocate = MakeMemoryAllocateHandler(allocation::EnvvarResponse, o);
  auto r = allocate(Snapshot(4), Units(1, {1, 2, 3}));
  ASSERT_TRUE(r.ok()) << r.status();
  EXPECT_EQ(r->envs().at(kMemoryLimitEnv), "1536");
  EXPECT_EQ(r->envs().at("CUDA_MPS_PINNED_DEVICE_MEM_LIMIT"), "0=1536M");
  EXPECT_EQ(r->envs().at("CUDA_MPS_PIPE_DIRECTORY"), "/mps/GPU-1/pipe");
  EXPECT_EQ(r->envs().at("NVIDIA_VISIBLE_DEVICES"), "GPU-1");
  EXPECT_EQ(r->envs().count("CUDA_MPS_ACTIVE_THREAD_PERCENTAGE"), 0u);
  std::vector<std::pair<std::string, std::string>> mounts;
  for (const auto& m : r->mounts()) {
    mounts.emplace_back(m.container_path(), m.host_path());
  }
  EXPECT_THAT(mounts,
              ElementsAre(Pair("/mps/GPU-1/pipe", "/run/nvidia/mps/GPU-1/pipe"),
                          Pair("/dev/shm", "/run/nvidia/mps/GPU-1/shm")));
}

// Clients of two GPUs' daemons never share a /dev/shm (issue: one /dev/shm
// for every MPS client of the node).
TEST(MemoryAllocate, MpsClientsOfTwoGpusGetDifferentShm) {
  MemoryHandlerOptions o;
  o.resource_name = "nvidia.com/gpu-memory";
  o.unit_mib = 512;
  o.mps_root = "/run/nvidia/mps";
  auto allocate = MakeMemoryAllocateHandler(allocation::EnvvarResponse, o);
  auto shm = [&](int gpu) {
    auto r = allocate(Snapshot(4), Units(gpu, {0}));
    EXPECT_TRUE(r.ok()) << r.status();
    for (const auto& m : r->mounts()) {
      if (m.container_path() == "/dev/shm") return m.host_path();
    }
    return std::string();
  };
  EXPECT_EQ(shm(0), "/run/nvidia/mps/GPU-0/shm");
  EXPECT_EQ(shm(1), "/run/nvidia/mps/GPU-1/shm");
}

TEST(MemoryAllocate, MpsComputeByShareGivesTheShareOfThreads) {
  MemoryHandlerOptions o;
  o.resource_name = "nvidia.com/gpu-memory";
  o.mps_root = "/run/nvidia/mps";
  o.mps_compute_by_share = true;
  auto allocate = MakeMemoryAllocateHandler(allocation::EnvvarResponse, o);
  auto r = allocate(Snapshot(3), Units(0, {2}));
  ASSERT_TRUE(r.ok()) << r.status();
  EXPECT_EQ(r->envs().at("CUDA_MPS_ACTIVE_THREAD_PERCENTAGE"), "34");
}

TEST(MemoryAllocate, WithoutMpsNoMpsVariables) {
  MemoryHandlerOptions o;
  o.resource_name = "nvidia.com/gpu-memory";
  auto allocate = MakeMemoryAllocateHandler(allocation::EnvvarResponse, o);
  auto r = allocate(Snapshot(4), Units(0, {0}));
  ASSERT_TRUE(r.ok()) << r.status();
  EXPECT_EQ(r->envs().count("CUDA_MPS_PIPE_DIRECTORY"), 0u);
  EXPECT_EQ(r->envs().count("CUDA_MPS_PINNED_DEVICE_MEM_LIMIT"), 0u);
  EXPECT_EQ(r->mounts_size(), 0);
}

TEST(MemoryAllocate, UnitsSpanningGpusAreRefused) {
  MemoryHandlerOptions o;
  o.resource_name = "nvidia.com/gpu-memory";
  bool told = false;
  o.on_allocate = [&](const std::string&, int64_t,
                      const std::vector<std::string>&) {
    told = true;
    return absl::OkStatus();
  };
  auto allocate = MakeMemoryAllocateHandler(allocation::EnvvarResponse, o);
  auto r = allocate(Snapshot(2), Concat(Units(0, {0, 1}), Units(1, {0})));
  ASSERT_FALSE(r.ok());
  EXPECT_EQ(r.status().code(), absl::StatusCode::kInvalidArgument);
  EXPECT_THAT(r.status().message(),
              HasSubstr("memory units GPU-0::m0, GPU-0::m1, GPU-1::m0 span "
                        "GPUs GPU-0, GPU-1"));
  EXPECT_THAT(r.status().message(),
              HasSubstr("3 units asked for, more than the largest GPU has "
                        "(2)"));
  EXPECT_FALSE(told);
}

TEST(MemoryAllocate, UnknownUnitsAreNamed) {
  MemoryHandlerOptions o;
  o.resource_name = "nvidia.com/gpu-memory";
  auto allocate = MakeMemoryAllocateHandler(allocation::EnvvarResponse, o);
  auto r = allocate(Snapshot(2), {"GPU-0::m0", "GPU-0", "GPU-7::m1"});
  ASSERT_FALSE(r.ok());
  EXPECT_EQ(r.status().code(), absl::StatusCode::kInvalidArgument);
  EXPECT_THAT(r.status().message(),
              HasSubstr("unknown memory units: GPU-0, GPU-7::m1"));
}

TEST(MemoryPreferred, BinpacksWithoutPendingPods) {
  auto preferred = MakeMemoryPreferredHandler({});
  // GPU-0 has 2 free, GPU-1 has 4 free: 2 units go to GPU-0.
  auto available = Concat(Units(0, {1, 3}), Units(1, {0, 1, 2, 3}));
  auto r = preferred(Snapshot(4), available, {}, 2);
  ASSERT_TRUE(r.ok()) << r.status();
  EXPECT_THAT(*r, ElementsAre("GPU-0::m1", "GPU-0::m3"));
}

TEST(MemoryPreferred, KeepsPendingPodsFitting) {
  MemoryHandlerOptions o;
  int reads = 0;
  o.pending = [&](bool, std::string*) {
    ++reads;
    return std::vector<sharing::Request>{{"u1/c", 2}, {"u2/c", 4}, {"u3/c", 3}};
  };
  auto preferred = MakeMemoryPreferredHandler(o);
  // GPU-0 has 4 free, GPU-1 5. Binpack alone would put the 2 on GPU-0 and
  // leave no GPU for the pending 3; on GPU-1 it leaves 4 | 3 for 4 and 3.
  auto snapshot = Snapshot(5);
  auto available = Concat(Units(0, {0, 1, 2, 3}), Units(1, {0, 1, 2, 3, 4}));
  auto r = preferred(snapshot, available, {}, 2);
  ASSERT_TRUE(r.ok()) << r.status();
  EXPECT_THAT(*r, ElementsAre("GPU-1::m0", "GPU-1::m1"));
  EXPECT_EQ(reads, 1);
}

// The copy of the last sync (no refresh) has a pending 3 of another pod;
// the Node read now also has the pod being admitted and one more: the
// choice follows the read.
TEST(MemoryPreferred, ReadsTheNodeForEveryChoice) {
  MemoryHandlerOptions o;
  std::vector<bool> refreshes;
  o.pending = [&](bool refresh, std::string*) {
    refreshes.push_back(refresh);
    return refresh ? std::vector<sharing::Request>{{"u1/c", 3},
                                                   {"u2/c", 4},
                                                   {"u3/c", 2}}
                   : std::vector<sharing::Request>{{"u1/c", 3}};
  };
  auto preferred = MakeMemoryPreferredHandler(o);
  auto available = Concat(Units(0, {0, 1, 2, 3}), Units(1, {0, 1, 2, 3, 4}));
  auto r = preferred(Snapshot(5), available, {}, 3);
  ASSERT_TRUE(r.ok()) << r.status();
  // After the re-read: 3 on GPU-1 leaves 4 | 2 for the pending 4 and 2.
  EXPECT_THAT(*r, ElementsAre("GPU-1::m0", "GPU-1::m1", "GPU-1::m2"));
  EXPECT_THAT(refreshes, ElementsAre(true));
}

// The extender binds two pods between the read and the choice's record on
// the Node: the record fails (Aborted, the Node changed) and the choice is
// made again from a fresh read that has them.
TEST(MemoryPreferred, ChoosesAgainWhenPodsAreBoundUnderTheChoice) {
  MemoryHandlerOptions o;
  int reads = 0;
  o.pending = [&](bool refresh, std::string* version) {
    EXPECT_TRUE(refresh);
    *version = std::to_string(++reads);
    return reads == 1 ? std::vector<sharing::Request>{{"u1/c", 2}}
                      : std::vector<sharing::Request>{
                            {"u1/c", 2}, {"u2/c", 4}, {"u3/c", 3}};
  };
  std::vector<std::string> reserved;
  o.reserve = [&](const std::string& gpu, int64_t units,
                  const std::vector<std::string>& ids,
                  const std::string& version) {
    EXPECT_EQ(units, 2);
    EXPECT_EQ(ids.size(), 2u);
    reserved.push_back(absl::StrCat(gpu, "@", version));
    return reserved.size() == 1 ? absl::AbortedError("409 Conflict")
                                : absl::OkStatus();
  };
  auto preferred = MakeMemoryPreferredHandler(o);
  // GPU-0 has 4 free, GPU-1 5. Alone, the 2 goes to the fuller GPU-0;
  // with the pending 4 and 3 it must go to GPU-1 (4 | 3 left).
  auto available = Concat(Units(0, {0, 1, 2, 3}), Units(1, {0, 1, 2, 3, 4}));
  auto r = preferred(Snapshot(5), available, {}, 2);
  ASSERT_TRUE(r.ok()) << r.status();
  EXPECT_THAT(*r, ElementsAre("GPU-1::m0", "GPU-1::m1"));
  EXPECT_THAT(reserved, ElementsAre("GPU-0@1", "GPU-1@2"));
}

// The choice was made from a fresh read of the Node; only recording it
// failed: the choice stands, and it is not made again.
TEST(MemoryPreferred, KeepsTheChoiceWhenItCannotBeRecorded) {
  MemoryHandlerOptions o;
  int reads = 0;
  o.pending = [&](bool, std::string* version) {
    ++reads;
    version->clear();
    return std::vector<sharing::Request>{};
  };
  o.reserve = [&](const std::string&, int64_t, const std::vector<std::string>&,
                  const std::string&) {
    return absl::UnavailableError("connection refused");
  };
  auto preferred = MakeMemoryPreferredHandler(o);
  auto r =
      preferred(Snapshot(4), Concat(Units(0, {1, 3}), Units(1, {0, 1})), {}, 2);
  ASSERT_TRUE(r.ok()) << r.status();
  EXPECT_THAT(*r, ElementsAre("GPU-0::m1", "GPU-0::m3"));
  EXPECT_EQ(reads, 1);
}

// Without the pending requests any choice is a guess: the read's error is
// the answer.
TEST(MemoryPreferred, FailsWhenThePendingRequestsCannotBeRead) {
  MemoryHandlerOptions o;
  o.pending =
      [](bool, std::string*) -> absl::StatusOr<std::vector<sharing::Request>> {
    return absl::DeadlineExceededError("node n1: no answer in time");
  };
  auto preferred = MakeMemoryPreferredHandler(o);
  auto r = preferred(Snapshot(4), Units(0, {0, 1, 2}), {}, 2);
  EXPECT_EQ(r.status().code(), absl::StatusCode::kDeadlineExceeded);
  EXPECT_EQ(r.status().message(), "node n1: no answer in time");
}

TEST(MemoryAllocate, FailsWhenTheAnswerCannotBeRecorded) {
  MemoryHandlerOptions o;
  o.on_allocate = [](const std::string&, int64_t,
                     const std::vector<std::string>&) {
    return absl::UnavailableError("node n1: placement not written");
  };
  auto allocate = MakeMemoryAllocateHandler(allocation::EnvvarResponse, o);
  auto r = allocate(Snapshot(4), Units(0, {0}));
  EXPECT_EQ(r.status().code(), absl::StatusCode::kUnavailable);
}

TEST(MemoryPreferred, MustIncludePinsItsGpu) {
  auto preferred = MakeMemoryPreferredHandler({});
  auto available = Concat(Units(0, {0, 1}), Units(1, {0, 1, 2, 3}));
  auto r = preferred(Snapshot(4), available, Units(1, {2}), 2);
  ASSERT_TRUE(r.ok()) << r.status();
  EXPECT_THAT(*r, UnorderedElementsAre("GPU-1::m2", "GPU-1::m0"));
}

TEST(MemoryPreferred, AlwaysAnswersEvenWhenNoGpuHasRoom) {
  auto preferred = MakeMemoryPreferredHandler({});
  auto available = Concat(Units(0, {0, 1}), Units(1, {0, 1}));
  auto r = preferred(Snapshot(4), available, {}, 3);
  ASSERT_TRUE(r.ok()) << r.status();
  EXPECT_EQ(r->size(), 3u);
}

}  // namespace
}  // namespace gpulet::resources
