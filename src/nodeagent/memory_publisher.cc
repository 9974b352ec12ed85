#include "src/nodeagent/memory_publisher.h"

#include <algorithm>
#include <optional>
#include <map>
#include <utility>

#include "absl/strings/str_cat.h"
#include "nlohmann/json.hpp"
#include "src/common/logging.h"
#include "src/common/status_macros.h"
#include "src/kube/api_path.h"
#include "src/kube/list_watcher.h"
#include "src/nodeagent/node_json.h"
#include "src/sharing/unit_id.h"

namespace gpulet::nodeagent {
namespace {

using Json = nlohmann::json;

// The containers holding units of `resource`, one entry per GPU they use,
// with the unit IDs of each entry.
sharing::Listing ListUnits(const std::vector<podresources::Pod>& pods,
                           const std::string& resource) {
  sharing::Listing out;
  for (const podresources::Pod& pod : pods) {
    sharing::UsedPod used;
    used.ns = pod.ns;
    used.name = pod.name;
    for (const podresources::Container& c : pod.containers) {
      std::map<std::string, std::vector<std::string>> per_gpu;
      for (const podresources::Devices& d : c.devices) {
        if (d.resource != resource) continue;
        std::string gpu;
        int64_t k = 0;
        for (const std::string& id : d.ids) {
          if (sharing::ParseMemoryUnitId(id, &gpu, &k)) {
            per_gpu[gpu].push_back(id);
          }
        }
      }
      for (auto& [gpu, ids] : per_gpu) {
        used.containers.push_back(sharing::UsedContainer{
            c.name, gpu, static_cast<int64_t>(ids.size())});
        out.ids[sharing::ListedKey(used, used.containers.back())] =
            std::move(ids);
      }
    }
    if (!used.containers.empty()) out.pods.push_back(std::move(used));
  }
  return out;
}

// The kubelet's count of each GPU's units wins over the device list's.
void ApplyAllocatable(const std::vector<podresources::Devices>& allocatable,
                      const std::string& resource,
                      std::vector<sharing::GpuSpace>* gpus) {
  std::map<std::string, int64_t> units;
  for (const podresources::Devices& d : allocatable) {
    if (d.resource != resource) continue;
    std::string gpu;
    int64_t k = 0;
    for (const std::string& id : d.ids) {
      if (sharing::ParseMemoryUnitId(id, &gpu, &k)) ++units[gpu];
    }
  }
  if (units.empty()) return;  // the kubelet has not seen the resource yet
  for (sharing::GpuSpace& g : *gpus) {
    auto it = units.find(g.uuid);
    g.units = it == units.end() ? 0 : it->second;
  }
}

}  // namespace

absl::StatusOr<PublisherMetrics> PublisherMetrics::Register(
    metrics::Registry& registry) {
  PublisherMetrics m;
  absl::StatusOr<metrics::Family*> units = registry.AddGauge(
      "gpulet_gpu_memory_units",
      "Memory units of each GPU sharing memory: total, used (allocated), "
      "pending (bound pods not admitted yet, as packed).",
      {"gpu", "state"});
  if (!units.ok()) return units.status();
  absl::StatusOr<metrics::Family*> errors = registry.AddCounter(
      "gpulet_memory_annotation_errors_total",
      "Memory-share Node annotations that could not be read.",
      {"annotation"});
  if (!errors.ok()) return errors.status();
  absl::StatusOr<metrics::Family*> syncs = registry.AddCounter(
      "gpulet_memory_syncs_total",
      "Syncs of the memory-share Node annotations, by result.", {"result"});
  if (!syncs.ok()) return syncs.status();
  absl::StatusOr<metrics::Family*> writes = registry.AddCounter(
      "gpulet_memory_placement_writes_total",
      "Allocate answers recorded on the Node before answering, by result "
      "(ok, error, timeout).",
      {"result"});
  if (!writes.ok()) return writes.status();
  m.placement_writes = *writes;
  m.memory_units = *units;
  m.annotation_errors = *errors;
  m.syncs = *syncs;
  return m;
}

MemoryPublisher::MemoryPublisher(kube::Client& api,
                                 const podresources::Client& kubelet,
                                 PublisherOptions options,
                                 PublisherMetrics metrics)
    : api_(api),
      kubelet_(kubelet),
      options_(std::move(options)),
      metrics_(metrics),
      gate_(options_.kubelet_grace,
            options_.placement_timeout + absl::Seconds(5)) {}

MemoryPublisher::~MemoryPublisher() {
  writer_.request_stop();
  loop_.request_stop();
  pods_.request_stop();
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

std::vector<sharing::Request> MemoryPublisher::Pending(
    bool refresh, std::string* node_version) {
  if (node_version != nullptr) node_version->clear();
  if (refresh) {
    // Called by preferred allocation: the kubelet is choosing units.
    absl::MutexLock lock(&mu_);
    auto not_listing = [this]() ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_) {
      return !gate_.listing();
    };
    mu_.Await(absl::Condition(&not_listing));
    gate_.Choosing(options_.now());
  }
  if (refresh) {
    absl::StatusOr<std::string> path = kube::NodePath(options_.node_name);
    absl::StatusOr<Json> node =
        path.ok() ? api_.Get(*path) : absl::StatusOr<Json>(path.status());
    std::optional<std::string> text;
    if (node.ok()) text = Annotation(*node, sharing::kPendingAnnotation);
    if (node.ok() && node_version != nullptr) {
      *node_version = StringAt(*node, "metadata", "resourceVersion");
    }
    if (!node.ok()) {
      GPULET_LOG(WARNING) << "memory shares: cannot re-read the node: "
                          << node.status().message();
    } else if (!text.has_value()) {
      absl::MutexLock lock(&mu_);
      pending_ = {};
    } else if (absl::StatusOr<sharing::Pending> parsed =
                   sharing::ParsePending(*text);
               parsed.ok()) {
      absl::MutexLock lock(&mu_);
      pending_ = *std::move(parsed);
    } else {
      ReportBad("pending", parsed.status());
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

absl::Status MemoryPublisher::ReadListing(std::stop_token stop) {
  uint64_t mark = 0;
  {
    absl::MutexLock lock(&mu_);
    auto idle = [this, &stop]() ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_) {
      return stop.stop_requested() ||
             gate_.BusyFor(options_.now()) <= absl::ZeroDuration();
    };
    while (!idle()) {
      mu_.AwaitWithTimeout(absl::Condition(&idle),
                           gate_.BusyFor(options_.now()));
    }
    if (stop.stop_requested()) {
      return absl::CancelledError("stopping: no PodResources listing");
    }
    gate_.set_listing(true);
    mark = ledger_.Mark();
  }
  absl::StatusOr<std::vector<podresources::Pod>> pods = kubelet_.List();
  absl::StatusOr<std::vector<podresources::Devices>> allocatable =
      pods.ok() ? kubelet_.Allocatable()
                : absl::StatusOr<std::vector<podresources::Devices>>(
                      pods.status());
  const absl::Time now = options_.now();
  absl::MutexLock lock(&mu_);
  gate_.set_listing(false);
  if (!pods.ok()) return pods.status();
  sharing::Listing listing = ListUnits(*pods, options_.resource_name);
  for (sharing::UsedPod& pod : listing.pods) {
    auto uid = pod_uids_.find(absl::StrCat(pod.ns, "/", pod.name));
    if (uid != pod_uids_.end()) pod.uid = uid->second;
  }
  listing = sharing::CarryOver(
      ledger_.listing(), std::move(listing),
      [this](const sharing::UsedPod& pod) ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_) {
        auto uid = pod_uids_.find(absl::StrCat(pod.ns, "/", pod.name));
        return uid != pod_uids_.end() &&
               (pod.uid.empty() || uid->second == pod.uid);
      });
  ledger_.Observe(std::move(listing), mark, now, options_.pending_timeout);
  listed_gpus_ = gpus_;
  if (allocatable.ok()) {
    ApplyAllocatable(*allocatable, options_.resource_name, &listed_gpus_);
  }
  listed_at_ = now;
  return absl::OkStatus();
}

absl::Status MemoryPublisher::Sync(std::stop_token stop) {
  absl::Status status = ReadListing(stop);
  if (!status.ok()) {
    if (metrics_.syncs != nullptr) metrics_.syncs->Add({"error"});
    return status;
  }
  for (int attempt = 0; attempt < options_.max_attempts; ++attempt) {
    bool conflict = false;
    status = SyncOnce(stop, &conflict);
    if (!conflict) break;
  }
  if (metrics_.syncs != nullptr) {
    metrics_.syncs->Add({status.ok() ? "ok" : "error"});
  }
  return status;
}

absl::Status MemoryPublisher::SyncOnce(std::stop_token stop, bool* conflict) {
  GPULET_ASSIGN_OR_RETURN(std::string path,
                          kube::NodePath(options_.node_name));
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
    absl::StatusOr<sharing::NodeMemory> parsed =
        sharing::ParseNodeMemory(*own);
    if (!parsed.ok()) ReportBad("node", parsed.status());
  }
  std::optional<sharing::Pending> pending;
  if (std::optional<std::string> text =
          Annotation(node, sharing::kPendingAnnotation)) {
    absl::StatusOr<sharing::Pending> parsed = sharing::ParsePending(*text);
    if (parsed.ok()) {
      pending = *std::move(parsed);
    } else {
      ReportBad("pending", parsed.status());
    }
  }
  sharing::Pending pruned;
  if (pending.has_value()) {
    pruned = sharing::PrunePending(
        *pending, built, options_.now(), options_.pending_timeout,
        [&](const sharing::PendingPod& p) { return Fate(p, stop); });
  }
  Json annotations = Json::object();
  annotations[std::string(sharing::kNodeAnnotation)] =
      sharing::EncodeNodeMemory(built);
  if (pending.has_value() && pruned.pods.size() != pending->pods.size()) {
    annotations[std::string(sharing::kPendingAnnotation)] =
        sharing::EncodePending(pruned);
  }
  Json patch = {{"metadata",
                 {{"resourceVersion", StringAt(node, "metadata",
                                               "resourceVersion")},
                  {"annotations", annotations}}}};
  absl::StatusOr<Json> patched = api_.MergePatch(path, patch, stop);
  if (!patched.ok()) {
    *conflict = patched.status().code() == absl::StatusCode::kAborted;
    return patched.status();
  }
  absl::MutexLock lock(&mu_);
  pending_ = std::move(pruned);
  node_ = built;
  ++syncs_;
  UpdateMetrics(node_, sharing::PendingRequests(pending_, node_,
                                                ledger_.unmatched()));
  return absl::OkStatus();
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

void MemoryPublisher::ReportBad(std::string_view annotation,
                                const absl::Status& status) {
  if (metrics_.annotation_errors != nullptr) {
    metrics_.annotation_errors->Add({std::string(annotation)});
  }
  absl::MutexLock lock(&mu_);
  std::string& last = bad_[std::string(annotation)];
  if (last == status.message()) return;
  last = std::string(status.message());
  GPULET_LOG(WARNING) << "memory shares: ignoring an unreadable node "
                         "annotation: "
                      << status.message();
}

void MemoryPublisher::UpdateMetrics(
    const sharing::NodeMemory& node,
    const std::vector<sharing::Request>& pending) {
  if (metrics_.memory_units == nullptr) return;
  std::vector<int64_t> pending_units(node.gpus.size(), 0);
  if (absl::StatusOr<std::vector<int>> placed =
          sharing::Pack(node.gpus, pending);
      placed.ok()) {
    for (size_t i = 0; i < pending.size(); ++i) {
      pending_units[(*placed)[i]] += pending[i].units;
    }
  }
  std::vector<std::string> now;
  for (size_t g = 0; g < node.gpus.size(); ++g) {
    const std::string& uuid = node.gpus[g].uuid;
    metrics_.memory_units->Set({uuid, "total"},
                               static_cast<double>(node.gpus[g].units));
    metrics_.memory_units->Set({uuid, "used"},
                               static_cast<double>(node.gpus[g].used));
    metrics_.memory_units->Set({uuid, "pending"},
                               static_cast<double>(pending_units[g]));
    now.push_back(uuid);
  }
  for (const std::string& old : metric_gpus_) {
    if (std::find(now.begin(), now.end(), old) == now.end()) {
      metrics_.memory_units->RemoveMatching("gpu", old);
    }
  }
  metric_gpus_ = std::move(now);
}

void MemoryPublisher::Start(kube::Sleeper& sleeper) {
  absl::StatusOr<std::string> pods_path = kube::PodsPath();
  if (pods_path.ok()) {
    pods_ = std::jthread([this, &sleeper, path = *pods_path](
                             std::stop_token stop) {
      kube::ListOptions selectors;
      selectors.field_selector = kube::PodsOnNodeSelector(options_.node_name);
      kube::ListWatchCallbacks callbacks;
      callbacks.on_replace = [this](std::vector<Json> pods,
                                    const std::string&) {
        ReplacePods(pods);
        Wake();
      };
      callbacks.on_event = [this](const kube::WatchEvent& event) {
        OnPodEvent(event);
        Wake();
      };
      kube::ListWatcher watcher(api_, sleeper, path, std::move(selectors),
                                std::move(callbacks));
      watcher.Run(stop).IgnoreError();
    });
  }
  loop_ = std::jthread([this](std::stop_token stop) { Loop(stop); });
  {
    absl::MutexLock lock(&mu_);
    writer_running_ = true;
  }
  writer_ = std::jthread([this](std::stop_token stop) { WriterLoop(stop); });
}

namespace {

// Succeeded or Failed: the kubelet holds no units for it.
bool Terminal(const Json& pod) {
  const std::string phase = StringAt(pod, "status", "phase");
  return phase == "Succeeded" || phase == "Failed";
}

}  // namespace

void MemoryPublisher::ReplacePods(const std::vector<Json>& pods) {
  absl::MutexLock lock(&mu_);
  pod_uids_.clear();
  for (const Json& pod : pods) {
    if (Terminal(pod)) continue;
    pod_uids_[absl::StrCat(StringAt(pod, "metadata", "namespace"), "/",
                           StringAt(pod, "metadata", "name"))] =
        StringAt(pod, "metadata", "uid");
  }
}

void MemoryPublisher::OnPodEvent(const kube::WatchEvent& event) {
  const std::string key =
      absl::StrCat(StringAt(event.object, "metadata", "namespace"), "/",
                   StringAt(event.object, "metadata", "name"));
  absl::MutexLock lock(&mu_);
  if (event.type == kube::EventType::kDeleted || Terminal(event.object)) {
    pod_uids_.erase(key);
  } else if (event.type == kube::EventType::kAdded ||
             event.type == kube::EventType::kModified) {
    pod_uids_[key] = StringAt(event.object, "metadata", "uid");
  }
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
