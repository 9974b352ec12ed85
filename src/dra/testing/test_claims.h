// Test fixtures shared by src/dra/kubelet's tests: a small node (GPU 0 whole,
// GPU 1 in MIG mode with two MIG devices), its CDI spec, and a fake API server
// holding ResourceClaims. Test-only; header-only.
#pragma once

#include <chrono>
#include <condition_variable>
#include <map>
#include <mutex>
#include <set>
#include <stop_token>
#include <string>
#include <vector>

#include "absl/status/statusor.h"
#include "absl/strings/str_cat.h"
#include "absl/synchronization/notification.h"
#include "nlohmann/json.hpp"
#include "src/dra/kubelet/claim_allocation.h"
#include "src/dra/kubelet/claim_preparer.h"
#include "src/dra/kubelet/sharing_applier.h"
#include "src/gpu/device/gpu.h"
#include "src/model/cdi/spec.h"

namespace gpulet::dra::testing_claims {

using json = nlohmann::json;

inline constexpr char kPool[] = "node-a";

// GPU 0 whole, GPU 1 in MIG mode with two MIG devices, GPU 2 whole.
inline device::Node TestNode() {
  device::Node node;
  device::Gpu gpu0;
  gpu0.index = 0;
  gpu0.uuid = "GPU-0000";
  device::Gpu gpu1;
  gpu1.index = 1;
  gpu1.uuid = "GPU-1111";
  gpu1.mig_enabled = true;
  device::MigDevice mig_a;
  mig_a.uuid = "MIG-aaaa";
  mig_a.parent_index = 1;
  mig_a.gi_placement =
      device::GiPlacement{.profile_id = 19, .start = 6, .size = 1};
  device::MigDevice mig_b = mig_a;
  mig_b.uuid = "MIG-bbbb";
  mig_b.gi_placement =
      device::GiPlacement{.profile_id = 9, .start = 0, .size = 4};
  gpu1.mig_devices = {mig_a, mig_b};
  device::Gpu gpu2;
  gpu2.index = 2;
  gpu2.uuid = "GPU-2222";
  node.gpus = {gpu0, gpu1, gpu2};
  return node;
}

inline cdi::DeviceNode Node(const std::string& path) {
  cdi::DeviceNode node;
  node.path = path;
  return node;
}

inline cdi::Spec TestSpec() {
  cdi::Spec spec;
  spec.kind = "nvidia.com/gpu";
  spec.edits.env = {"NVIDIA_VISIBLE_DEVICES=void"};
  spec.edits.device_nodes = {Node("/dev/nvidiactl")};
  for (auto [name, dev] : std::map<std::string, std::string>{
           {"GPU-0000", "/dev/nvidia0"},
           {"GPU-1111", "/dev/nvidia1"},
           {"GPU-2222", "/dev/nvidia2"},
           {"MIG-aaaa", "/dev/nvidia-caps/nvidia-cap21"},
           {"MIG-bbbb", "/dev/nvidia-caps/nvidia-cap30"}}) {
    cdi::Device d;
    d.name = name;
    d.edits.device_nodes = {Node(dev)};
    spec.devices.push_back(d);
  }
  return spec;
}

// The API server: claims by namespace/name, and how often each was read.
// A read of a claim in `hung` does not answer until it is stopped (as the
// API client's reads of a server that holds requests); `held` counts such
// reads begun.
struct FakeApi {
  std::map<std::string, json> claims;
  std::map<std::string, int> gets;
  std::set<std::string> hung;
  std::mutex mu;  // reads come from the server's workers
  std::condition_variable held_changed;
  int held = 0;  // guarded by mu

  // Whether `n` held reads began within 30 s.
  bool WaitHeld(int n) {
    std::unique_lock lock(mu);
    return held_changed.wait_for(lock, std::chrono::seconds(30),
                                 [&] { return held >= n; });
  }

  void Add(const ClaimRef& ref, std::vector<std::string> devices) {
    json results = json::array();
    for (const std::string& d : devices) {
      results.push_back({{"request", "req"},
                         {"driver", "gpu.nvidia.com"},
                         {"pool", kPool},
                         {"device", d}});
    }
    claims[ClaimName(ref)] = {
        {"metadata",
         {{"namespace", ref.namespace_name},
          {"name", ref.name},
          {"uid", ref.uid}}},
        {"status", {{"allocation", {{"devices", {{"results", results}}}}}}}};
  }
  // A share of `device` (DRAConsumableCapacity) added to the claim's
  // results: its shareID and the memory it consumes.
  void AddShare(const ClaimRef& ref, const std::string& device,
                const std::string& share_id, const std::string& memory) {
    json& claim = claims[ClaimName(ref)];
    if (claim.is_null()) Add(ref, {});
    claim["status"]["allocation"]["devices"]["results"].push_back(
        {{"request", "req"},
         {"driver", "gpu.nvidia.com"},
         {"pool", kPool},
         {"device", device},
         {"shareID", share_id},
         {"consumedCapacity", {{"memory", memory}}}});
  }
  ClaimGetter Getter() {
    return [this](const ClaimRef& ref,
                  std::stop_token stop) -> absl::StatusOr<json> {
      if (hung.contains(ClaimName(ref))) {
        {
          std::lock_guard lock(mu);
          ++held;
        }
        held_changed.notify_all();
        absl::Notification stopped;
        std::stop_callback on_stop(stop, [&] { stopped.Notify(); });
        stopped.WaitForNotification();
        return absl::CancelledError(
            absl::StrCat("GET claim ", ClaimName(ref), ": stopped"));
      }
      std::lock_guard lock(mu);
      ++gets[ClaimName(ref)];
      auto it = claims.find(ClaimName(ref));
      if (it == claims.end()) {
        return absl::NotFoundError(
            absl::StrCat("claim ", ClaimName(ref), " not found"));
      }
      return it->second;
    };
  }
};

// A SharingApplier that records its calls ("apply <uid> <strategy>
// <interval> <uuids>", "release <uid>") and answers with an env entry and a
// mount named after the claim; `fail` makes Apply fail.
struct FakeSharing : SharingApplier {
  std::vector<std::string> calls;
  std::vector<ClaimSharing> applied;  // each Apply's, in order
  bool fail = false;

  absl::StatusOr<SharingEdits> Apply(
      const std::string& uid, const ClaimSharing& sharing,
      const std::vector<std::string>& uuids) override {
    if (fail) return absl::InternalError("nvidia-smi: exit status 1");
    std::string call = absl::StrCat("apply ", uid, " ", sharing.strategy, " ",
                                    sharing.interval);
    for (const std::string& u : uuids) absl::StrAppend(&call, " ", u);
    calls.push_back(call);
    applied.push_back(sharing);
    cdi::Mount mount;
    mount.host_path = "/run/mps/" + uid;
    mount.container_path = "/mps/" + uid;
    return SharingEdits{.env = {"FAKE_SHARING=" + uid}, .mounts = {mount}};
  }
  absl::Status Release(const std::string& uid) override {
    calls.push_back("release " + uid);
    return absl::OkStatus();
  }
};

// The opaque configuration list of a claim whose configuration is
// `sharing` (NVIDIA's GpuConfig).
inline json SharingConfig(json sharing) {
  return json::array({{{"source", "FromClaim"},
                       {"opaque",
                        {{"driver", "gpu.nvidia.com"},
                         {"parameters",
                          {{"apiVersion", "resource.nvidia.com/v1beta1"},
                           {"kind", "GpuConfig"},
                           {"sharing", sharing}}}}}}});
}

inline ClaimRef Ref(const std::string& name) {
  return {.namespace_name = "ns", .name = name, .uid = "uid-" + name};
}

}  // namespace gpulet::dra::testing_claims
