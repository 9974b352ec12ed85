// TopologyReader: the node's GPU topology for preferred allocation, read
// once per configuration apply on a thread of its own. Reading it takes
// thousands of NVML calls (every NVLink of every GPU, P2P status per
// ordered pair: about 20 ms for 16 GPUs on the simulator, more where the
// driver reads sysfs), and only GetPreferredAllocation needs it, which the
// kubelet sends once a pod is scheduled. So the plugins start and register
// before it is read, and a preferred-allocation call that comes first
// waits for it. Without it preferred allocation falls back to NUMA order.
//
// Thread safety: Begin, ReadMeanwhile and Join are the loop thread's; the
// handlers may be called from any thread. Join before the NVML library the
// reader uses shuts down, and before it is destroyed.
#pragma once

#include <memory>
#include <thread>

#include "absl/synchronization/notification.h"
#include "src/gpu/device/gpu.h"
#include "src/gpu/nvml/library.h"
#include "src/model/allocation/preferred_handler.h"
#include "src/model/allocation/score.h"

namespace gpulet::daemon {

class TopologyReader {
 public:
  TopologyReader() = default;
  ~TopologyReader() { Join(); }
  TopologyReader(const TopologyReader&) = delete;
  TopologyReader& operator=(const TopologyReader&) = delete;

  // One read: `matrix` is set (null when the topology is unavailable)
  // before `read` is notified.
  struct Read {
    absl::Notification read;
    std::shared_ptr<const allocation::ScoreMatrix> matrix;
  };
  // The preferred-allocation handler over a read not started yet.
  static pluginapi::PreferredHandler HandlerOver(
      std::shared_ptr<Read> read, allocation::PreferredOptions options);
  // Reads `node`'s topology from `lib` into `read`, on the reader's thread
  // (the previous read joined first). `lib` outlives the read (Join).
  void ReadMeanwhile(nvml::Library& lib, const device::Node& node,
                     std::shared_ptr<Read> read);
  // Waits for the read under way, if any.
  void Join();

 private:
  std::jthread thread_;
};

}  // namespace gpulet::daemon
