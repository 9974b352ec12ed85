// MemoryShares: the node agent of memory shares (docs/sharing.md): the
// MemoryPublisher that publishes the memory-share Node annotations and
// answers the pending reservations, kept across reloads while its options
// stay, and the memory-unit resource's Allocate and preferred handlers
// wired to it. Without sharing.memory, a node name or API server access
// there is no publisher: the memory units are served, no annotation is
// published and preferred allocation packs by the policy alone. The MPS
// control daemons of the GPUs that share memory are MpsDaemons'.
//
// Thread safety: thread-safe. Ensure, WrapHandlers and Reset are the loop
// thread's; PublishUnits comes from whichever thread changed the
// memory-unit list, under ServedResources' lock (this object's mutex is
// taken after that one, and never calls out while held).
#pragma once

#include <memory>
#include <string>

#include "absl/base/thread_annotations.h"
#include "absl/synchronization/mutex.h"
#include "src/base/config/config.h"
#include "src/base/metrics/registry.h"
#include "src/model/pluginapi/device.h"
#include "src/net/podresources/client.h"
#include "src/plugin/daemon/api_client.h"
#include "src/plugin/daemon/prepared_resource.h"
#include "src/plugin/memshares/memory_publisher.h"

namespace gpulet::daemon {

class MemoryShares {
 public:
  // `registry` and `api` outlive this object.
  MemoryShares(std::string node_name, std::string pod_resources_socket,
               metrics::Registry& registry, ProcessApiClient& api);
  MemoryShares(const MemoryShares&) = delete;
  MemoryShares& operator=(const MemoryShares&) = delete;

  // The publisher `config` asks for, kept when its options are unchanged.
  void Ensure(const config::Config& config) ABSL_LOCKS_EXCLUDED(mu_);
  // When `prepared` is the memory-unit resource: its Allocate and preferred
  // handlers wired to the publisher, and its role.
  void WrapHandlers(const config::Config& config, PreparedResource& prepared)
      ABSL_LOCKS_EXCLUDED(mu_);
  // The memory-unit GPUs and their health (`units`: the resource's device
  // list, null when it is not served) to the publisher; starts it the
  // first time.
  void PublishUnits(const pluginapi::DeviceSnapshot* units)
      ABSL_LOCKS_EXCLUDED(mu_);
  // Stops serving: the publisher goes.
  void Reset() ABSL_LOCKS_EXCLUDED(mu_);

 private:
  // No publisher, logged once with `why`.
  void Without(const std::string& why) ABSL_LOCKS_EXCLUDED(mu_);
  std::shared_ptr<nodeagent::MemoryPublisher> Publisher() const
      ABSL_LOCKS_EXCLUDED(mu_);

  const std::string node_name_;
  const std::string pod_resources_socket_;
  metrics::Registry& registry_;
  ProcessApiClient& api_;
  // The loop thread's: built with the first publisher, kept after.
  std::unique_ptr<podresources::Client> pod_resources_;
  std::string key_;  // the publisher's options, to tell a reload's need
  bool warned_ = false;
  mutable absl::Mutex mu_;
  std::shared_ptr<nodeagent::MemoryPublisher> publisher_ ABSL_GUARDED_BY(mu_);
  bool started_ ABSL_GUARDED_BY(mu_) = false;
};

}  // namespace gpulet::daemon
