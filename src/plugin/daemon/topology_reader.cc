#include "src/plugin/daemon/topology_reader.h"

#include <string>
#include <utility>
#include <vector>

#include "src/base/common/logging.h"
#include "src/gpu/device/topology.h"

namespace gpulet::daemon {
namespace {

// Allocation then never touches NVML.
std::shared_ptr<const allocation::ScoreMatrix> ScoreTopology(
    nvml::Library& lib, const device::Node& node) {
  device::Node reachable = node;
  std::erase_if(reachable.gpus,
                [](const device::Gpu& gpu) { return !gpu.failure.empty(); });
  absl::StatusOr<device::Topology> topology =
      device::BuildTopology(lib, reachable);
  if (!topology.ok()) {
    GPULET_LOG(WARNING) << "topology unavailable, preferred allocation "
                           "falls back to NUMA order: "
                        << topology.status().message();
    return nullptr;
  }
  GPULET_LOG(INFO) << "preferred allocation: topology-aware over "
                   << topology->size() << " GPUs";
  return std::make_shared<const allocation::ScoreMatrix>(
      allocation::BuildScoreMatrix(*topology));
}

}  // namespace

pluginapi::PreferredHandler TopologyReader::HandlerOver(
    std::shared_ptr<Read> read, allocation::PreferredOptions options) {
  return
      [read, options](const pluginapi::DeviceSnapshot& snapshot,
                      const std::vector<std::string>& available,
                      const std::vector<std::string>& must_include, int size) {
        read->read.WaitForNotification();
        return allocation::PreferredAllocation(read->matrix, options, snapshot,
                                               available, must_include, size);
      };
}

void TopologyReader::ReadMeanwhile(nvml::Library& lib, const device::Node& node,
                                   std::shared_ptr<Read> read) {
  Join();
  thread_ = std::jthread([&lib, node, read] {
    read->matrix = ScoreTopology(lib, node);
    read->read.Notify();
  });
}

void TopologyReader::Join() {
  if (thread_.joinable()) thread_.join();
}

}  // namespace gpulet::daemon
