// The two Node annotations that carry memory-share state between the
// scheduler extender and the node's device plugin (docs/sharing.md):
//
//   gpulet.dev/gpu-memory-pending  pods the extender bound to the node that
//                                  the kubelet has not admitted yet
//   gpulet.dev/gpu-memory          the node's real allocation, written by
//                                  the node agent only
//
// Parsing is strict (unknown fields, wrong types and out-of-range numbers
// are errors naming the field) because a hand-edited annotation must be
// noticed, never half-understood. Encoding is canonical: parse(encode(x))
// == x. Pure functions; safe to call from any thread.
#pragma once

#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

#include "absl/status/statusor.h"
#include "absl/time/time.h"
#include "src/model/sharing/pack.h"

namespace gpulet::sharing {

inline constexpr std::string_view kPendingAnnotation =
    "gpulet.dev/gpu-memory-pending";
inline constexpr std::string_view kNodeAnnotation = "gpulet.dev/gpu-memory";

struct PendingContainer {
  std::string name;
  int64_t units = 0;
};
struct PendingPod {
  std::string uid, ns, name;
  absl::Time time;  // when the extender added the entry
  std::vector<PendingContainer> containers;
};
struct Pending {
  std::vector<PendingPod> pods;
};

absl::StatusOr<Pending> ParsePending(std::string_view json);
std::string EncodePending(const Pending& pending);

struct UsedContainer {
  std::string name, gpu;  // gpu: the GPU's UUID
  int64_t units = 0;
};
struct UsedPod {
  std::string uid, ns, name;  // uid may be empty when not known
  std::vector<UsedContainer> containers;
};
// One Allocate answer the kubelet's PodResources does not list under a pod
// yet: `units` units of GPU `gpu` (UUID), the unit IDs handed out, and
// when. Its units are counted in that GPU's `used`.
struct Placement {
  std::string gpu;
  int64_t units = 0;
  std::vector<std::string> ids;
  absl::Time time;
};
struct NodeMemory {
  std::string resource;
  int64_t unit_mib = 1024;
  absl::Time observed;
  std::vector<GpuSpace> gpus;
  std::vector<UsedPod> pods;
  std::vector<Placement> placements;  // unattributed, oldest first
};

absl::StatusOr<NodeMemory> ParseNodeMemory(std::string_view json);
std::string EncodeNodeMemory(const NodeMemory& node);

// True when the two name the same pod: by uid when both have one, else by
// namespace/name.
bool SamePod(std::string_view uid_a, std::string_view ns_a,
             std::string_view name_a, std::string_view uid_b,
             std::string_view ns_b, std::string_view name_b);

// True when node.pods lists the pod with every one of its containers: the
// kubelet admitted all of them.
bool Admitted(const PendingPod& pod, const NodeMemory& node);

// The container requests of the pending pods that node.pods does not list
// yet (a listed pod's containers that it does not list are still
// outstanding), keyed "<uid or ns/name>/<container>", in annotation order,
// less one request of the same size per placement in node.placements (that
// container has its units already, counted in its GPU's `used`; requests of
// one size are interchangeable, so which pod it serves does not matter).
std::vector<Request> OutstandingRequests(const Pending& pending,
                                         const NodeMemory& node);

}  // namespace gpulet::sharing
