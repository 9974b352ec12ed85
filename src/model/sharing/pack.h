// Memory-share packing: whether a set of container requests, each counted in
// memory units and each placed whole on one GPU, fits the free space of a
// node's GPUs, and which GPU the device plugin should hand a container so
// that the requests still pending on the node keep fitting.
//
// Both the scheduler extender (does a pod fit this node?) and the node's
// device plugin (which GPU for this container?) call these same functions,
// so the two sides agree on the rule. Pure functions of their arguments;
// safe to call from any thread.
#pragma once

#include <cstdint>
#include <span>
#include <string>
#include <vector>

#include "absl/status/statusor.h"

namespace gpulet::sharing {

// One GPU's memory units. Free space is units - used, and 0 when the GPU is
// unhealthy (or used exceeds units).
struct GpuSpace {
  std::string uuid;
  int index = 0;
  int64_t units = 0;
  int64_t used = 0;
  bool healthy = true;
};

// One container's request; key is "<uid or ns/name>/<container>" and only
// names the request in messages.
struct Request {
  std::string key;
  int64_t units = 0;
};

struct PackOptions {
  int64_t budget = 100000;  // search nodes visited before giving up
};

// Free units of `gpu` as the packing rule counts them.
int64_t FreeUnits(const GpuSpace& gpu);

// Assigns every request to a GPU within its free space: for each request,
// the index into `gpus` it goes to. First-fit-decreasing is tried first,
// then an exact search. NotFound when the requests cannot fit,
// ResourceExhausted when the search ran past opts.budget (callers treat
// both as "does not fit"; the answer is never a guess that they fit),
// InvalidArgument for a request of fewer than one unit.
absl::StatusOr<std::vector<int>> Pack(std::span<const GpuSpace> gpus,
                                      std::span<const Request> reqs,
                                      PackOptions opts = {});

// How the device plugin orders the GPUs that keep the pending requests
// fitting: kBinpack fills the fullest GPU first (least free after
// placement), kSpread the emptiest. Ties go to the lower index in `gpus`.
enum class Policy { kBinpack, kSpread };

struct Choice {
  int gpu = -1;  // index into `gpus`
  // True when one pending request of the placed size was taken as the one
  // being served (equal sizes are interchangeable).
  bool matched_pending = false;
  // True when, after the placement, the other pending requests still fit.
  // False means no GPU keeps them fitting and `gpu` is the policy's pick
  // among the GPUs with room: admission is never refused over it.
  bool pending_fits = false;
};

// The GPU for one container of `units` units: among the GPUs with at least
// `units` free, those after which the pending requests minus one request
// of `units` units (when there is one) still fit, ordered by `policy`.
// NotFound when no GPU has `units` free; InvalidArgument when units < 1.
absl::StatusOr<Choice> ChooseGpu(std::span<const GpuSpace> gpus,
                                 std::span<const Request> pending,
                                 int64_t units,
                                 Policy policy = Policy::kBinpack,
                                 PackOptions opts = {});

}  // namespace gpulet::sharing
