#include "src/cli/memory_status.h"

#include <map>
#include <utility>

#include "absl/status/statusor.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "src/cli/table.h"
#include "src/model/sharing/annotations.h"
#include "src/model/sharing/pack.h"

namespace gpulet::cli {
namespace {

std::optional<std::string> StringAnnotation(const nlohmann::json& annotations,
                                            std::string_view key) {
  if (!annotations.is_object()) return std::nullopt;
  auto it = annotations.find(std::string(key));
  if (it == annotations.end() || !it->is_string()) return std::nullopt;
  return it->get<std::string>();
}

// Adds `units` to the pod's share in `pods`, keeping first-seen order.
void AddShare(std::vector<PodShare>& pods, const std::string& ns,
              const std::string& name, int64_t units) {
  for (PodShare& p : pods) {
    if (p.ns == ns && p.name == name) {
      p.units += units;
      return;
    }
  }
  pods.push_back({ns, name, units});
}

// The pending pods the node does not list yet, with their units.
std::vector<PodShare> NotAdmitted(const sharing::Pending& pending,
                                  const sharing::NodeMemory& memory) {
  std::vector<PodShare> out;
  for (const sharing::PendingPod& pod : pending.pods) {
    bool admitted = false;
    for (const sharing::UsedPod& used : memory.pods) {
      admitted = admitted || sharing::SamePod(pod.uid, pod.ns, pod.name,
                                              used.uid, used.ns, used.name);
    }
    if (admitted) continue;
    for (const sharing::PendingContainer& c : pod.containers) {
      AddShare(out, pod.ns, pod.name, c.units);
    }
  }
  return out;
}

std::string ShortUuid(const std::string& uuid) {
  // "GPU-" and 8 hex digits tell GPUs apart; the full UUID is in -o json.
  return uuid.size() > 12 ? uuid.substr(0, 12) : uuid;
}

std::string PodList(const std::vector<PodShare>& pods, int64_t unit_mib) {
  std::vector<std::string> cells;
  for (const PodShare& p : pods) {
    cells.push_back(
        absl::StrCat(p.ns, "/", p.name, ":", FormatMiB(p.units * unit_mib)));
  }
  return cells.empty() ? "-" : absl::StrJoin(cells, ",");
}

nlohmann::json PodsJson(const std::vector<PodShare>& pods, int64_t unit_mib) {
  nlohmann::json out = nlohmann::json::array();
  for (const PodShare& p : pods) {
    out.push_back({{"namespace", p.ns},
                   {"name", p.name},
                   {"units", p.units},
                   {"memoryMiB", p.units * unit_mib}});
  }
  return out;
}

int64_t PendingUnits(const NodeStatus& node) {
  int64_t units = 0;
  for (const PodShare& p : node.pending) units += p.units;
  return units;
}

}  // namespace

NodeAnnotations AnnotationsOfNode(const nlohmann::json& node) {
  NodeAnnotations out;
  const nlohmann::json metadata = node.value("metadata", nlohmann::json{});
  if (!metadata.is_object()) return out;
  out.node = metadata.value("name", "");
  const nlohmann::json annotations =
      metadata.value("annotations", nlohmann::json{});
  out.memory = StringAnnotation(annotations, sharing::kNodeAnnotation);
  out.pending = StringAnnotation(annotations, sharing::kPendingAnnotation);
  return out;
}

NodeStatus BuildNodeStatus(const NodeAnnotations& annotations) {
  NodeStatus out;
  out.node = annotations.node;
  if (!annotations.memory.has_value()) return out;
  absl::StatusOr<sharing::NodeMemory> memory =
      sharing::ParseNodeMemory(*annotations.memory);
  if (!memory.ok()) {
    out.error =
        absl::StrCat("annotation ", std::string(sharing::kNodeAnnotation), ": ",
                     memory.status().message());
    return out;
  }
  sharing::Pending pending;
  if (annotations.pending.has_value()) {
    absl::StatusOr<sharing::Pending> parsed =
        sharing::ParsePending(*annotations.pending);
    if (!parsed.ok()) {
      out.error =
          absl::StrCat("annotation ", std::string(sharing::kPendingAnnotation),
                       ": ", parsed.status().message());
      return out;
    }
    pending = *std::move(parsed);
  }
  out.has_shares = true;
  out.resource = memory->resource;
  out.unit_mib = memory->unit_mib;
  std::map<std::string, size_t> by_uuid;
  for (const sharing::GpuSpace& gpu : memory->gpus) {
    by_uuid[gpu.uuid] = out.gpus.size();
    out.gpus.push_back({.index = gpu.index,
                        .uuid = gpu.uuid,
                        .healthy = gpu.healthy,
                        .units = gpu.units,
                        .used = gpu.used,
                        .free = sharing::FreeUnits(gpu),
                        .pods = {}});
  }
  for (const sharing::UsedPod& pod : memory->pods) {
    for (const sharing::UsedContainer& c : pod.containers) {
      auto it = by_uuid.find(c.gpu);
      if (it == by_uuid.end()) {
        out.notes.push_back(absl::StrCat(
            "pod ", pod.ns, "/", pod.name, " container ", c.name, " is on GPU ",
            c.gpu, ", which the node does not list"));
        continue;
      }
      AddShare(out.gpus[it->second].pods, pod.ns, pod.name, c.units);
    }
  }
  out.pending = NotAdmitted(pending, *memory);
  return out;
}

std::string FormatMiB(int64_t mib) {
  if (mib % 1024 == 0) return absl::StrCat(mib / 1024, "GiB");
  return absl::StrCat(mib, "MiB");
}

std::string FormatStatusTable(const std::vector<NodeStatus>& nodes) {
  Table table({"NODE", "GPU", "MEMORY", "USED", "PENDING", "FREE", "PODS"});
  std::vector<std::string> lines;
  bool any_rows = false;
  for (const NodeStatus& node : nodes) {
    if (!node.error.empty()) {
      lines.push_back(absl::StrCat("node ", node.node, ": ", node.error));
      continue;
    }
    if (!node.has_shares) {
      lines.push_back(absl::StrCat("node ", node.node, ": no memory shares"));
      continue;
    }
    const int64_t mib = node.unit_mib;
    for (const GpuStatus& gpu : node.gpus) {
      std::string name = absl::StrCat(gpu.index, " ", ShortUuid(gpu.uuid));
      if (!gpu.healthy) absl::StrAppend(&name, " (unhealthy)");
      table.AddRow({node.node, name, FormatMiB(gpu.units * mib),
                    FormatMiB(gpu.used * mib), "-", FormatMiB(gpu.free * mib),
                    PodList(gpu.pods, mib)});
      any_rows = true;
    }
    if (!node.pending.empty()) {
      table.AddRow({node.node, "pending", "-", "-",
                    FormatMiB(PendingUnits(node) * mib), "-",
                    PodList(node.pending, mib)});
      any_rows = true;
    }
    for (const std::string& note : node.notes) {
      lines.push_back(absl::StrCat("node ", node.node, ": ", note));
    }
  }
  std::string out = any_rows ? table.Render() : "";
  for (const std::string& line : lines) absl::StrAppend(&out, line, "\n");
  return out;
}

nlohmann::json StatusJson(const std::vector<NodeStatus>& nodes) {
  nlohmann::json list = nlohmann::json::array();
  for (const NodeStatus& node : nodes) {
    nlohmann::json entry = {{"name", node.node},
                            {"memoryShares", node.has_shares}};
    if (!node.error.empty()) entry["error"] = node.error;
    if (!node.has_shares) {
      list.push_back(std::move(entry));
      continue;
    }
    const int64_t mib = node.unit_mib;
    entry["resource"] = node.resource;
    entry["unitMiB"] = mib;
    nlohmann::json gpus = nlohmann::json::array();
    for (const GpuStatus& gpu : node.gpus) {
      gpus.push_back({{"index", gpu.index},
                      {"uuid", gpu.uuid},
                      {"healthy", gpu.healthy},
                      {"memoryMiB", gpu.units * mib},
                      {"usedMiB", gpu.used * mib},
                      {"freeMiB", gpu.free * mib},
                      {"pods", PodsJson(gpu.pods, mib)}});
    }
    entry["gpus"] = std::move(gpus);
    entry["pending"] = {{"memoryMiB", PendingUnits(node) * mib},
                        {"pods", PodsJson(node.pending, mib)}};
    if (!node.notes.empty()) entry["notes"] = node.notes;
    list.push_back(std::move(entry));
  }
  return {{"nodes", std::move(list)}};
}

}  // namespace gpulet::cli
