#include "src/plugin/memshares/memory_publisher.h"

#include <algorithm>
#include <optional>
#include <utility>

#include "absl/strings/str_cat.h"
#include "nlohmann/json.hpp"
#include "src/base/common/logging.h"
#include "src/base/common/status_macros.h"
#include "src/net/kube/api_path.h"
#include "src/plugin/memshares/node_json.h"

namespace gpulet::nodeagent {
namespace {

using Json = nlohmann::json;

}  // namespace

MemoryPublisher::MemoryPublisher(kube::Client& api,
                                 const podresources::Client& kubelet,
                                 PublisherOptions options,
                                 PublisherMetrics metrics)
    : api_(api),
      kubelet_(kubelet),
      options_(std::move(options)),
      reports_(metrics),
      gate_(options_.kubelet_grace,
            options_.placement_timeout + absl::Seconds(5)),
      pod_watch_(api, options_.node_name, options_.resource_name,
                 [this] { Wake(); }) {}

MemoryPublisher::~MemoryPublisher() {
  writer_.request_stop();
  loop_.request_stop();
  pod_watch_.RequestStop();
}

void MemoryPublisher::SetGpus(std::vector<sharing::GpuSpace> gpus) {
  absl::MutexLock lock(&mu_);
  gpus_ = std::move(gpus);
  wake_ = true;
}

void MemoryPublisher::Wake() {
  absl::MutexLock lock(&mu_);
  wake_ = true;
}

int64_t MemoryPublisher::syncs() const {
  absl::MutexLock lock(&mu_);
  return syncs_;
}

absl::StatusOr<std::vector<sharing::Request>> MemoryPublisher::Pending(
    bool refresh, std::string* node_version, std::stop_token stop) {
  if (node_version != nullptr) node_version->clear();
  if (refresh) {
    // Called by preferred allocation: the kubelet is choosing units.
    absl::MutexLock lock(&mu_);
    auto not_listing = [this]() ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_) {
      return !gate_.listing();
    };
    mu_.Await(absl::Condition(&not_listing));
    gate_.Choosing(options_.clock->WallNow());
  }
  if (refresh) {
    absl::StatusOr<std::string> path = kube::NodePath(options_.node_name);
    absl::StatusOr<Json> node =
        path.ok() ? api_.Get(*path, stop) : absl::StatusOr<Json>(path.status());
    std::optional<std::string> text;
    if (node.ok()) text = Annotation(*node, sharing::kPendingAnnotation);
    if (node.ok() && node_version != nullptr) {
      *node_version = StringAt(*node, "metadata", "resourceVersion");
    }
    if (!node.ok()) {
      return absl::Status(
          stop.stop_requested() ? absl::StatusCode::kDeadlineExceeded
                                : absl::StatusCode::kUnavailable,
          absl::StrCat("node ", options_.node_name,
                       ": the pending memory requests (",
                       std::string(sharing::kPendingAnnotation),
                       ") could not be read from the API server",
                       stop.stop_requested() ? " in time" : "", ": ",
                       node.status().message()));
    }
    if (!text.has_value()) {
      absl::MutexLock lock(&mu_);
      pending_ = {};
    } else if (absl::StatusOr<sharing::Pending> parsed =
                   sharing::ParsePending(*text);
               parsed.ok()) {
      absl::MutexLock lock(&mu_);
      pending_ = *std::move(parsed);
    } else {
      reports_.BadAnnotation("pending", parsed.status());
    }
  }
  absl::MutexLock lock(&mu_);
  return sharing::PendingRequests(pending_, Known(), ledger_.unmatched());
}

sharing::NodeMemory MemoryPublisher::Known() const {
  return sharing::BuildNodeMemory(options_.resource_name, options_.unit_mib,
                                  listed_at_, listed_gpus_, ledger_.Listed(),
                                  ledger_.unmatched());
}

absl::Status MemoryPublisher::Sync(std::stop_token stop) {
  absl::Status status = ReadListing(stop);
  if (!status.ok()) {
    reports_.CountSync(false);
    return status;
  }
  std::map<std::string, sharing::PodFate> looked_up;
  for (int attempt = 0; attempt < options_.max_attempts; ++attempt) {
    bool conflict = false;
    status = SyncOnce(stop, &conflict, &looked_up);
    if (!conflict) break;
  }
  reports_.CountSync(status.ok());
  return status;
}

absl::Status MemoryPublisher::SyncOnce(
    std::stop_token stop, bool* conflict,
    std::map<std::string, sharing::PodFate>* looked_up) {
  GPULET_ASSIGN_OR_RETURN(std::string path, kube::NodePath(options_.node_name));
  GPULET_ASSIGN_OR_RETURN(Json node, api_.Get(path, stop));
  // The ledger as it is after this read: an answer written by OnAllocate
  // since is in it, so this patch keeps it.
  sharing::NodeMemory built;
  {
    absl::MutexLock lock(&mu_);
    built = Known();
  }
  if (std::optional<std::string> own =
          Annotation(node, sharing::kNodeAnnotation)) {
    absl::StatusOr<sharing::NodeMemory> parsed = sharing::ParseNodeMemory(*own);
    if (!parsed.ok()) reports_.BadAnnotation("node", parsed.status());
  }
  std::optional<sharing::Pending> pending;
  if (std::optional<std::string> text =
          Annotation(node, sharing::kPendingAnnotation)) {
    absl::StatusOr<sharing::Pending> parsed = sharing::ParsePending(*text);
    if (parsed.ok()) {
      pending = *std::move(parsed);
    } else {
      reports_.BadAnnotation("pending", parsed.status());
    }
  }
  sharing::Pending pruned;
  if (pending.has_value()) {
    pruned = sharing::PrunePending(*pending, built, options_.clock->WallNow(),
                                   options_.pending_timeout,
                                   [&](const sharing::PendingPod& p) {
                                     return FateOnce(p, stop, looked_up);
                                   });
  }
  Json annotations = Json::object();
  annotations[std::string(sharing::kNodeAnnotation)] =
      sharing::EncodeNodeMemory(built);
  if (pending.has_value() && pruned.pods.size() != pending->pods.size()) {
    annotations[std::string(sharing::kPendingAnnotation)] =
        sharing::EncodePending(pruned);
  }
  absl::Status patched =
      PatchAnnotations(StringAt(node, "metadata", "resourceVersion"),
                       std::move(annotations), stop);
  if (!patched.ok()) {
    *conflict = patched.code() == absl::StatusCode::kAborted;
    return patched;
  }
  absl::MutexLock lock(&mu_);
  // The annotation is `pruned` now: no pod found gone is in it.
  gone_.clear();
  pending_ = std::move(pruned);
  node_ = built;
  ++syncs_;
  reports_.SetUnits(
      node_, sharing::PendingRequests(pending_, node_, ledger_.unmatched()));
  return absl::OkStatus();
}

sharing::PodFate MemoryPublisher::FateOnce(
    const sharing::PendingPod& pod, std::stop_token stop,
    std::map<std::string, sharing::PodFate>* looked_up) {
  if (!pod.uid.empty()) {
    absl::MutexLock lock(&mu_);
    if (gone_.contains(pod.uid)) return sharing::PodFate::kGone;
  }
  const std::string key = absl::StrCat(pod.uid, "/", pod.ns, "/", pod.name);
  if (auto it = looked_up->find(key); it != looked_up->end()) {
    return it->second;
  }
  const sharing::PodFate fate = Fate(pod, stop);
  (*looked_up)[key] = fate;
  if (fate == sharing::PodFate::kGone && !pod.uid.empty()) {
    absl::MutexLock lock(&mu_);
    gone_.insert(pod.uid);
  }
  return fate;
}

sharing::PodFate MemoryPublisher::Fate(const sharing::PendingPod& pod,
                                       std::stop_token stop) {
  absl::StatusOr<std::string> path = kube::PodPath(pod.ns, pod.name);
  if (!path.ok()) return sharing::PodFate::kGone;  // no such pod can exist
  absl::StatusOr<Json> got = api_.Get(*path, stop);
  if (!got.ok()) {
    return got.status().code() == absl::StatusCode::kNotFound
               ? sharing::PodFate::kGone
               : sharing::PodFate::kWaiting;
  }
  const std::string uid = StringAt(*got, "metadata", "uid");
  const std::string phase = StringAt(*got, "status", "phase");
  const std::string bound = StringAt(*got, "spec", "nodeName");
  const bool deleting = got->contains("metadata") &&
                        (*got)["metadata"].is_object() &&
                        (*got)["metadata"].contains("deletionTimestamp");
  if ((!pod.uid.empty() && uid != pod.uid) || phase == "Succeeded" ||
      phase == "Failed" || deleting ||
      (!bound.empty() && bound != options_.node_name)) {
    return sharing::PodFate::kGone;
  }
  return sharing::PodFate::kWaiting;
}

void MemoryPublisher::Start(const common::Clock& clock) {
  pod_watch_.Start(clock);
  loop_ = std::jthread([this](std::stop_token stop) { Loop(stop); });
  {
    absl::MutexLock lock(&mu_);
    writes_.running = true;
  }
  writer_ = std::jthread([this](std::stop_token stop) { WriterLoop(stop); });
}

void MemoryPublisher::Loop(std::stop_token stop) {
  std::stop_callback wake_on_stop(stop, [this] { Wake(); });
  absl::Duration retry = absl::Seconds(1);
  while (!stop.stop_requested()) {
    absl::Status s = Sync(stop);
    if (stop.stop_requested()) break;
    absl::Duration wait = options_.resync_period;
    if (s.ok()) {
      retry = absl::Seconds(1);
    } else {
      GPULET_LOG(WARNING) << "memory shares: node annotations not updated "
                             "(retrying in "
                          << absl::FormatDuration(retry)
                          << "): " << s.message();
      wait = retry;
      retry = std::min(retry * 2, options_.resync_period);
    }
    absl::MutexLock lock(&mu_);
    mu_.AwaitWithTimeout(absl::Condition(&wake_), wait);
    wake_ = false;
  }
}

}  // namespace gpulet::nodeagent
