#include "src/model/allocation/preferred_handler.h"

#include <utility>

#include "src/model/allocation/gpu_selector.h"
#include "src/model/allocation/request_units.h"
#include "src/model/allocation/simple_preferred.h"
#include "src/model/allocation/topology_preferred.h"

namespace gpulet::allocation {

absl::StatusOr<std::vector<std::string>> PreferredAllocation(
    const std::shared_ptr<const ScoreMatrix>& m,
    const PreferredOptions& options, const pluginapi::DeviceSnapshot& snapshot,
    const std::vector<std::string>& available,
    const std::vector<std::string>& must_include, int size) {
  absl::StatusOr<ResolvedRequest> request =
      ResolveRequest(snapshot, available, must_include, size);
  if (!request.ok()) return request.status();
  // MIG devices share their GPU without being replicas.
  const bool shared =
      request->any_replica || (request->shared_gpu && !request->any_mig);
  if (request->unplaced || (!shared && !request->any_mig)) {
    // One device per GPU: the exact full-GPU search (a handful of devices,
    // so its own validation pass costs nothing).
    if (m == nullptr || request->unplaced) {
      return allocation::SimplePreferred(snapshot, available, must_include,
                                         size);
    }
    return TopologyPreferred(*m, snapshot, available, must_include, size);
  }
  const UnitModel model = BuildUnits(m, snapshot, *request);
  const std::vector<const pluginapi::Device*> picked =
      shared ? PickReplicas(model, options.shared_policy, request->any_mig)
             : PickMig(model);
  std::vector<std::string> answer;
  answer.reserve(request->size);
  for (const pluginapi::Device* d : request->must_include)
    answer.push_back(d->id);
  for (const pluginapi::Device* d : picked) answer.push_back(d->id);
  return answer;
}

pluginapi::PreferredHandler MakePreferredHandler(
    std::shared_ptr<const ScoreMatrix> m, PreferredOptions options) {
  return [m = std::move(m), options](
             const pluginapi::DeviceSnapshot& snapshot,
             const std::vector<std::string>& available,
             const std::vector<std::string>& must_include, int size) {
    return PreferredAllocation(m, options, snapshot, available, must_include,
                               size);
  };
}

}  // namespace gpulet::allocation
