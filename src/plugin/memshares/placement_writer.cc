// MemoryPublisher's placements: each preferred choice and each Allocate
// answer is added to gpulet.dev/gpu-memory before the plugin answers
// (memory_publisher.h).
#include <algorithm>
#include <optional>
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

void MemoryPublisher::OnAllocate(const std::string& gpu, int64_t units,
                                 const std::vector<std::string>& ids) {
  if (static_cast<int64_t>(ids.size()) != units) {
    // A caller's bug; such a record would make the annotation unreadable.
    GPULET_LOG(ERROR) << "memory shares: Allocate of " << units
                      << " unit(s) of " << gpu << " names " << ids.size()
                      << " unit IDs; not recorded";
    return;
  }
  sharing::Placement placed{gpu, units, ids, options_.clock->WallNow()};
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
    return;
  }
  writes_.to_write.push_back(std::move(placed));
  const int64_t mine = ++writes_.queued;
  auto done = [this, mine]() ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_) {
    return writes_.written >= mine;
  };
  if (!mu_.AwaitWithTimeout(absl::Condition(&done),
                            options_.placement_timeout)) {
    reports_.CountPlacementWrite("timeout");
    GPULET_LOG(WARNING) << "memory shares: answering Allocate of " << units
                        << " unit(s) of " << gpu
                        << " before the Node shows it (still writing after "
                        << absl::FormatDuration(options_.placement_timeout)
                        << ")";
  }
  gate_.Answered(options_.clock->WallNow());
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
    sharing::Placement next;
    {
      absl::MutexLock lock(&mu_);
      auto ready = [this, &stop]() ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_) {
        return stop.stop_requested() || !writes_.to_write.empty();
      };
      mu_.Await(absl::Condition(&ready));
      if (stop.stop_requested()) return;
      next = std::move(writes_.to_write.front());
      writes_.to_write.erase(writes_.to_write.begin());
    }
    absl::Status s = WritePlacement(next, stop);
    if (!s.ok()) {
      GPULET_LOG(WARNING) << "memory shares: the Allocate answer of "
                          << next.units << " unit(s) of " << next.gpu
                          << " is not on the Node until the next sync: "
                          << s.message();
    }
    reports_.CountPlacementWrite(s.ok() ? "ok" : "error");
    absl::MutexLock lock(&mu_);
    ++writes_.written;
  }
}

}  // namespace gpulet::nodeagent
