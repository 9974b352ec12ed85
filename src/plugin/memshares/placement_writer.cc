// MemoryPublisher's placements: each preferred choice and each Allocate
// answer is added to gpulet.dev/gpu-memory before the plugin answers
// (memory_publisher.h).
#include <algorithm>
#include <optional>
#include <tuple>
#include <utility>
#include <vector>

#include "absl/strings/str_cat.h"
#include "nlohmann/json.hpp"
#include "src/base/common/logging.h"
#include "src/base/common/status_macros.h"
#include "src/net/kube/api_path.h"
#include "src/plugin/memshares/memory_publisher.h"
#include "src/plugin/memshares/node_json.h"

namespace gpulet::nodeagent {
namespace {

using Json = nlohmann::json;

bool SameIds(const sharing::Placement& a, const sharing::Placement& b) {
  return a.gpu == b.gpu && a.ids == b.ids;
}

}  // namespace

absl::Status MemoryPublisher::OnAllocate(const std::string& gpu, int64_t units,
                                         const std::vector<std::string>& ids,
                                         std::stop_token stop) {
  if (static_cast<int64_t>(ids.size()) != units) {
    // A caller's bug; such a record would make the annotation unreadable.
    GPULET_LOG(ERROR) << "memory shares: Allocate of " << units
                      << " unit(s) of " << gpu << " names " << ids.size()
                      << " unit IDs; not recorded";
    return absl::OkStatus();
  }
  sharing::Placement placed{gpu, units, ids, options_.clock->WallNow()};
  // A stop request re-evaluates the wait below.
  std::stop_callback wake_on_stop(stop, [this] { Wake(); });
  absl::MutexLock lock(&mu_);
  auto not_listing = [this]() ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_) {
    return !gate_.listing();
  };
  mu_.Await(absl::Condition(&not_listing));
  gate_.Answering();
  ledger_.Record(placed);
  wake_ = true;
  if (!writes_.running) {
    gate_.Answered(options_.clock->WallNow());
    return absl::OkStatus();
  }
  const int64_t mine = ++writes_.queued;
  writes_.to_write.emplace_back(mine, placed);
  std::optional<absl::Status>& result = writes_.waiting[mine];
  auto done = [&result, &stop]() {
    return result.has_value() || stop.stop_requested();
  };
  mu_.AwaitWithTimeout(absl::Condition(&done), options_.placement_timeout);
  absl::Status status = Written(placed, result, stop);
  writes_.waiting.erase(mine);
  if (!status.ok()) {
    // The kubelet will not hold these units for this container.
    ledger_.Forget(placed);
    GPULET_LOG(WARNING) << "memory shares: failing the Allocate: "
                        << status.message();
  }
  gate_.Answered(options_.clock->WallNow());
  return status;
}

absl::Status MemoryPublisher::Written(const sharing::Placement& placed,
                                      const std::optional<absl::Status>& result,
                                      std::stop_token stop) {
  const std::string what = absl::StrCat(
      "node ", options_.node_name, ": the Allocate of ", placed.units,
      " unit(s) of ", placed.gpu, " was not recorded in the Node's ",
      std::string(sharing::kNodeAnnotation), " annotation");
  if (!result.has_value()) {
    reports_.CountPlacementWrite("timeout");
    return absl::DeadlineExceededError(
        absl::StrCat(what, ": the API server did not answer within ",
                     stop.stop_requested()
                         ? "the call's deadline"
                         : absl::FormatDuration(options_.placement_timeout)));
  }
  // Before the first listing the sync writes it (nothing to write it
  // beside yet): counted from now on, not a guess.
  if (result->ok() || result->code() == absl::StatusCode::kFailedPrecondition) {
    return absl::OkStatus();
  }
  return absl::UnavailableError(absl::StrCat(what, ": ", result->message()));
}

absl::Status MemoryPublisher::Reserve(const std::string& gpu, int64_t units,
                                      const std::vector<std::string>& ids,
                                      const std::string& node_version,
                                      std::stop_token stop) {
  if (static_cast<int64_t>(ids.size()) != units) {
    return absl::InvalidArgumentError(
        absl::StrCat("a choice of ", units, " unit(s) of ", gpu, " names ",
                     ids.size(), " unit IDs"));
  }
  const sharing::Placement placed{gpu, units, ids, options_.clock->WallNow()};
  sharing::NodeMemory known;
  {
    // Counted from now on, so a sync that writes meanwhile keeps it; taken
    // back below if the Node changed since the choice's read.
    absl::MutexLock lock(&mu_);
    ledger_.Record(placed);
    if (node_version.empty() || !ledger_.listed_once()) {
      return absl::FailedPreconditionError(
          "no Node version or no PodResources listing to write the choice "
          "against; the Allocate answer writes it");
    }
    known = Known();
  }
  absl::Status patched =
      PatchAnnotations(node_version,
                       {{std::string(sharing::kNodeAnnotation),
                         sharing::EncodeNodeMemory(known)}},
                       stop);
  if (patched.code() == absl::StatusCode::kAborted) {
    absl::MutexLock lock(&mu_);
    ledger_.Forget(placed);
  }
  return patched;
}

absl::Status MemoryPublisher::WritePlacement(const sharing::Placement& placed,
                                             std::stop_token stop) {
  absl::Status status;
  for (int attempt = 0; attempt < options_.max_attempts; ++attempt) {
    bool conflict = false;
    status = WritePlacementOnce(placed, stop, &conflict);
    if (!conflict) break;
  }
  return status;
}

absl::Status MemoryPublisher::WritePlacementOnce(
    const sharing::Placement& placed, std::stop_token stop, bool* conflict) {
  GPULET_ASSIGN_OR_RETURN(std::string path, kube::NodePath(options_.node_name));
  GPULET_ASSIGN_OR_RETURN(Json node, api_.Get(path, stop));
  sharing::NodeMemory known;
  {
    // A sync since may have attributed it, or expired it.
    absl::MutexLock lock(&mu_);
    const std::vector<sharing::Placement> ledger = ledger_.unmatched();
    if (std::none_of(
            ledger.begin(), ledger.end(),
            [&](const sharing::Placement& p) { return SameIds(p, placed); })) {
      return absl::OkStatus();
    }
    if (!ledger_.listed_once()) {
      return absl::FailedPreconditionError(
          "no PodResources listing yet; the next sync writes the node's "
          "allocation");
    }
    // Not the annotation as read plus this answer: that may still count
    // containers whose units the kubelet has just handed out again (pods
    // deleted while it was down), and show the GPU over its size. No
    // listing is read here: a List while the kubelet waits for this
    // answer is what KubeletGate forbids.
    known = Known();
  }
  if (std::optional<std::string> text =
          Annotation(node, sharing::kNodeAnnotation)) {
    absl::StatusOr<sharing::NodeMemory> memory =
        sharing::ParseNodeMemory(*text);
    if (memory.ok() &&
        std::any_of(
            memory->placements.begin(), memory->placements.end(),
            [&](const sharing::Placement& p) { return SameIds(p, placed); })) {
      return absl::OkStatus();  // a sync wrote it first
    }
  }
  absl::Status patched =
      PatchAnnotations(StringAt(node, "metadata", "resourceVersion"),
                       {{std::string(sharing::kNodeAnnotation),
                         sharing::EncodeNodeMemory(known)}},
                       stop);
  *conflict = patched.code() == absl::StatusCode::kAborted;
  return patched;
}

absl::Status MemoryPublisher::PatchAnnotations(
    const std::string& resource_version, Json annotations,
    std::stop_token stop) {
  GPULET_ASSIGN_OR_RETURN(std::string path, kube::NodePath(options_.node_name));
  Json patch = {{"metadata",
                 {{"resourceVersion", resource_version},
                  {"annotations", std::move(annotations)}}}};
  return api_.MergePatch(path, patch, stop).status();
}

void MemoryPublisher::WriterLoop(std::stop_token stop) {
  std::stop_callback wake_on_stop(stop, [this] { Wake(); });
  while (true) {
    int64_t number = 0;
    sharing::Placement next;
    {
      absl::MutexLock lock(&mu_);
      auto ready = [this, &stop]() ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_) {
        return stop.stop_requested() || !writes_.to_write.empty();
      };
      mu_.Await(absl::Condition(&ready));
      if (stop.stop_requested()) return;
      std::tie(number, next) = std::move(writes_.to_write.front());
      writes_.to_write.erase(writes_.to_write.begin());
    }
    absl::Status s = WritePlacement(next, stop);
    if (!s.ok()) {
      GPULET_LOG(WARNING) << "memory shares: the Allocate answer of "
                          << next.units << " unit(s) of " << next.gpu
                          << " is not on the Node until the next sync: "
                          << s.message();
    }
    absl::MutexLock lock(&mu_);
    if (auto it = writes_.waiting.find(number); it != writes_.waiting.end()) {
      it->second = s;
      reports_.CountPlacementWrite(s.ok() ? "ok" : "error");
    }
  }
}

}  // namespace gpulet::nodeagent
