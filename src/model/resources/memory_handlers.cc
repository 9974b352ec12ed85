#include "src/model/resources/memory_handlers.h"

#include <algorithm>
#include <map>
#include <memory>
#include <set>
#include <utility>

#include "absl/status/status.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "deviceplugin/v1beta1/api.pb.h"
#include "src/base/common/logging.h"
#include "src/gpu/mps/mps_paths.h"
#include "src/model/sharing/unit_id.h"

namespace gpulet::resources {
namespace {

// The GPUs of a memory-unit snapshot, in device order.
struct GpuTable {
  std::vector<sharing::GpuSpace> gpus;  // used = 0 here
  std::map<std::string, size_t> position;
};

GpuTable Gpus(const pluginapi::DeviceSnapshot& snapshot) {
  GpuTable t;
  std::string uuid;
  int64_t k = 0;
  for (const pluginapi::Device& d : snapshot.devices) {
    if (!sharing::ParseMemoryUnitId(d.id, &uuid, &k)) continue;
    auto [it, added] = t.position.emplace(uuid, t.gpus.size());
    if (added) {
      sharing::GpuSpace g;
      g.uuid = uuid;
      g.index = d.gpu_index;
      t.gpus.push_back(std::move(g));
    }
    sharing::GpuSpace& g = t.gpus[it->second];
    ++g.units;
    g.healthy = g.healthy && d.healthy;
  }
  return t;
}

std::string Listed(const std::vector<std::string>& items) {
  constexpr size_t kShown = 8;
  if (items.size() <= kShown) return absl::StrJoin(items, ", ");
  std::vector<std::string> head(items.begin(), items.begin() + kShown);
  return absl::StrCat(absl::StrJoin(head, ", "), " and ", items.size() - kShown,
                      " more");
}

// Any valid answer: must_include, then the available IDs in order.
std::vector<std::string> FirstAvailable(
    const std::vector<std::string>& available,
    const std::vector<std::string>& must_include, int size) {
  std::vector<std::string> out = must_include;
  std::set<std::string> taken(must_include.begin(), must_include.end());
  for (const std::string& id : available) {
    if (static_cast<int>(out.size()) >= size) break;
    if (taken.insert(id).second) out.push_back(id);
  }
  return out;
}

// The GPU the answer comes from (-1 when none fits), chosen against the
// pending requests read now, whose Node version goes to `node_version`;
// the error when they cannot be read.
absl::StatusOr<int> ChooseFor(const MemoryHandlerOptions& o,
                              const std::vector<sharing::GpuSpace>& spaces,
                              int size, std::string* node_version) {
  // The pending pods as the API server has them now. The extender records
  // a pod there before it binds it, so this read holds the pod being
  // admitted and every pod bound before it; the copy of the last sync may
  // lack some, and when one of those has this request's size, the copy
  // would send this container into the room another one needs.
  std::vector<sharing::Request> pending;
  if (o.pending) {
    absl::StatusOr<std::vector<sharing::Request>> read =
        o.pending(true, node_version);
    if (!read.ok()) return read.status();
    pending = *std::move(read);
  }
  absl::StatusOr<sharing::Choice> c =
      sharing::ChooseGpu(spaces, pending, size, o.policy);
  if (!c.ok() || !c->pending_fits) {
    // Never expected: the extender binds a pod only when it fits beside
    // every pending one. Say what the choice saw.
    std::vector<std::string> free, sizes;
    for (const sharing::GpuSpace& g : spaces) {
      free.push_back(absl::StrCat(g.uuid, ":", sharing::FreeUnits(g)));
    }
    for (const sharing::Request& r : pending) {
      sizes.push_back(absl::StrCat(r.key, ":", r.units));
    }
    GPULET_LOG(WARNING) << "memory units: " << size
                        << " unit(s) asked for; no GPU keeps the pending "
                           "requests fitting (free "
                        << absl::StrJoin(free, ", ") << "; pending "
                        << absl::StrJoin(sizes, ", ") << ")"
                        << (c.ok() ? ""
                                   : absl::StrCat("; ", c.status().message()));
  }
  return c.ok() ? c->gpu : -1;
}

// Per GPU of `table`, its units in `available` (unit number, ID), in unit
// order; each GPU's `used` becomes its units less those.
using FreeIds = std::vector<std::vector<std::pair<int64_t, std::string>>>;
FreeIds TakeFreeIds(const std::vector<std::string>& available,
                    GpuTable& table) {
  FreeIds free_ids(table.gpus.size());
  std::string uuid;
  int64_t k = 0;
  for (const std::string& id : available) {
    if (!sharing::ParseMemoryUnitId(id, &uuid, &k)) continue;
    auto it = table.position.find(uuid);
    if (it != table.position.end()) free_ids[it->second].emplace_back(k, id);
  }
  for (size_t g = 0; g < table.gpus.size(); ++g) {
    std::sort(free_ids[g].begin(), free_ids[g].end());
    table.gpus[g].used =
        table.gpus[g].units - static_cast<int64_t>(free_ids[g].size());
  }
  return free_ids;
}

// The first `size` free units of one GPU, in unit order.
std::vector<std::string> TakeFrom(
    const std::vector<std::pair<int64_t, std::string>>& free_ids,
    const std::vector<std::string>& must_include, int size) {
  std::vector<std::string> out = must_include;
  std::set<std::string> taken(must_include.begin(), must_include.end());
  for (const auto& [unit, id] : free_ids) {
    if (static_cast<int>(out.size()) >= size) break;
    if (taken.insert(id).second) out.push_back(id);
  }
  return out;
}

absl::StatusOr<std::vector<std::string>> Preferred(
    const MemoryHandlerOptions& o, const pluginapi::DeviceSnapshot& snapshot,
    const std::vector<std::string>& available,
    const std::vector<std::string>& must_include, int size) {
  GpuTable table = Gpus(snapshot);
  const FreeIds free_ids = TakeFreeIds(available, table);
  if (!must_include.empty()) {
    // The kubelet keeps units it already gave the container: their GPU.
    std::string uuid;
    int64_t k = 0;
    std::set<size_t> gpus;
    for (const std::string& id : must_include) {
      if (!sharing::ParseMemoryUnitId(id, &uuid, &k)) continue;
      auto it = table.position.find(uuid);
      if (it != table.position.end()) gpus.insert(it->second);
    }
    if (gpus.size() != 1 ||
        static_cast<int>(free_ids[*gpus.begin()].size()) < size) {
      return FirstAvailable(available, must_include, size);
    }
    return TakeFrom(free_ids[*gpus.begin()], must_include, size);
  }
  std::vector<std::string> out;
  for (int attempt = 1; attempt <= kMaxPreferredChoices; ++attempt) {
    std::string version;
    absl::StatusOr<int> choice = ChooseFor(o, table.gpus, size, &version);
    if (!choice.ok()) return choice.status();
    const int chosen = *choice;
    if (chosen < 0 || static_cast<int>(free_ids[chosen].size()) < size) {
      return FirstAvailable(available, must_include, size);
    }
    out = TakeFrom(free_ids[chosen], must_include, size);
    if (!o.reserve) break;
    absl::Status s = o.reserve(table.gpus[chosen].uuid, size, out, version);
    if (s.code() != absl::StatusCode::kAborted) break;
    if (attempt == kMaxPreferredChoices) {
      GPULET_LOG(WARNING) << "memory units: the Node kept changing under "
                          << kMaxPreferredChoices << " choices for " << size
                          << " unit(s); answering the last one: "
                          << s.message();
    }
  }
  return out;
}

void AddMount(const std::string& container_path, const std::string& host_path,
              v1beta1::ContainerAllocateResponse& response) {
  v1beta1::Mount* mount = response.add_mounts();
  mount->set_container_path(container_path);
  mount->set_host_path(host_path);
}

// The GPU's own control daemon (mps/ supervises it), the client's limit,
// and the /dev/shm the daemon shares with its clients (the GPU's own: the
// clients of other GPUs' daemons see another).
void AddMps(const MemoryHandlerOptions& o, const std::string& gpu,
            int64_t units, int64_t gpu_units,
            v1beta1::ContainerAllocateResponse& response) {
  const std::string& mps_root = o.mps_root;
  const int64_t limit_mib = units * o.unit_mib;
  auto& envs = *response.mutable_envs();
  if (o.mps_compute_by_share) {
    envs[sharing::kMpsActiveThreadPercentageEnv] =
        absl::StrCat(sharing::MpsActiveThreadPercentage(units, gpu_units));
  }
  const std::string pipe = sharing::MpsContainerPipeDir(gpu);
  envs[sharing::kMpsPipeDirectoryEnv] = pipe;
  envs[sharing::kMpsPinnedMemLimitEnv] = sharing::MpsPinnedMemLimit(limit_mib);
  AddMount(pipe, sharing::MpsHostPipeDir(mps_root, gpu), response);
  AddMount("/dev/shm", sharing::MpsHostShmDir(mps_root, gpu), response);
}

absl::StatusOr<v1beta1::ContainerAllocateResponse> Allocate(
    const pluginapi::AllocateHandler& base, const MemoryHandlerOptions& o,
    const pluginapi::DeviceSnapshot& snapshot,
    const std::vector<std::string>& ids) {
  std::map<std::string, std::set<int64_t>> by_gpu;
  std::vector<std::string> unknown;
  std::string uuid;
  int64_t k = 0;
  for (const std::string& id : ids) {
    if (!sharing::ParseMemoryUnitId(id, &uuid, &k) ||
        snapshot.Find(id) == nullptr) {
      unknown.push_back(id);
      continue;
    }
    by_gpu[uuid].insert(k);
  }
  if (!unknown.empty()) {
    return absl::InvalidArgumentError(
        absl::StrCat("unknown memory units: ", Listed(unknown),
                     " (not <GPU-uuid>::m<k> "
                     "units of ",
                     o.resource_name, ")"));
  }
  if (by_gpu.empty()) {
    return absl::InvalidArgumentError("no memory units requested");
  }
  GpuTable table = Gpus(snapshot);
  if (by_gpu.size() > 1) {
    std::vector<std::string> gpus;
    int64_t asked = 0;
    for (const auto& [gpu, units] : by_gpu) {
      gpus.push_back(gpu);
      asked += static_cast<int64_t>(units.size());
    }
    int64_t largest = 0;
    for (const sharing::GpuSpace& g : table.gpus) {
      largest = std::max(largest, g.units);
    }
    const std::string size_note =
        asked > largest
            ? absl::StrCat(asked,
                           " units asked for, more than the largest GPU "
                           "has (",
                           largest, ")")
            : absl::StrCat(asked, " units asked for; the largest GPU has ",
                           largest);
    return absl::InvalidArgumentError(absl::StrCat(
        "memory units ", Listed(ids), " span GPUs ", Listed(gpus),
        ": a container's memory units must all come from one GPU (", size_note,
        ")"));
  }
  absl::StatusOr<v1beta1::ContainerAllocateResponse> response =
      base(snapshot, ids);
  if (!response.ok()) return response.status();
  const std::string& gpu = by_gpu.begin()->first;
  const int64_t units = static_cast<int64_t>(by_gpu.begin()->second.size());
  const sharing::GpuSpace& space = table.gpus[table.position.at(gpu)];
  auto& envs = *response->mutable_envs();
  envs[kMemoryLimitEnv] = absl::StrCat(units * o.unit_mib);
  if (o.resource_name == kGpushareResource) {
    // gpushare counts in the resource's unit. It gives the pod's total in
    // _POD; gpulet does not know the pod, so it is the container's units.
    envs[kGpushareIndexEnv] = absl::StrCat(space.index);
    envs[kGpusharePodEnv] = absl::StrCat(units);
    envs[kGpushareContainerEnv] = absl::StrCat(units);
    envs[kGpushareDeviceEnv] = absl::StrCat(space.units);
  }
  if (!o.mps_root.empty()) {
    AddMps(o, gpu, units, space.units, *response);
  }
  if (o.on_allocate) {
    std::vector<std::string> placed;
    for (int64_t unit : by_gpu.begin()->second) {
      placed.push_back(sharing::MemoryUnitId(gpu, unit));
    }
    if (absl::Status s = o.on_allocate(gpu, units, placed); !s.ok()) return s;
  }
  return response;
}

}  // namespace

pluginapi::AllocateHandler MakeMemoryAllocateHandler(
    pluginapi::AllocateHandler base, MemoryHandlerOptions options) {
  auto o = std::make_shared<const MemoryHandlerOptions>(std::move(options));
  return [base = std::move(base), o](const pluginapi::DeviceSnapshot& snapshot,
                                     const std::vector<std::string>& ids) {
    return Allocate(base, *o, snapshot, ids);
  };
}

pluginapi::PreferredHandler MakeMemoryPreferredHandler(
    MemoryHandlerOptions options) {
  auto o = std::make_shared<const MemoryHandlerOptions>(std::move(options));
  return [o](const pluginapi::DeviceSnapshot& snapshot,
             const std::vector<std::string>& available,
             const std::vector<std::string>& must_include, int size) {
    return Preferred(*o, snapshot, available, must_include, size);
  };
}

}  // namespace gpulet::resources
