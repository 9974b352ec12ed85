// LabelPublisher: puts the node labels (src/model/labels) where they are read:
// node-feature-discovery's NodeFeature object (node_feature_writer.h), its
// local feature file, and the Node object itself through the API server.
//
// Which: `node_feature_api` on writes the NodeFeature object and neither the
// file nor the Node; off writes the file and patches the Node as
// configured; auto (the flag not given) asks the API server once whether
// it serves nodefeatures (node-feature-discovery's CRD) and is then on or
// off, and logs the choice. Auto is off without a node name for the object
// or without an API server to ask. Without a thread (`gpulet labels`)
// Create() asks, and a failure is its error; with one (the daemon) the
// thread asks before its first write, so that a device plugin's start-up
// never waits for the API server: until the answer, nothing is written,
// and a failure is logged and asked again after `retry`.
//
//   - The feature file (GFD's path and format, "key=value" lines) is
//     written atomically on the calling thread: NFD sees the old file or
//     the new one.
//   - The NodeFeature object is created or updated with the labels as the
//     feature file has them (timestamp included, as GFD writes it), on the
//     same thread and with the same retries and resync as the Node patch.
//   - The Node is merge-patched as labels/node_patch.h says: the computed
//     labels set, the labels gpulet set before and no longer computes
//     removed, no other label touched. The timestamp label is left out of
//     the patch (it would rewrite the Node at every relabel). Patches go out
//     on the publisher's own thread so that a slow or unreachable API server
//     never holds up the caller (the daemon's event loop): the newest label
//     set wins, a failed patch is tried again after `retry` until it
//     succeeds, newer labels arrive or the publisher is destroyed, and
//     after a success the Node is checked again every `resync` (labels
//     edited or removed by hand are put back).
//     WriteApi() writes the NodeFeature object and patches the Node on the
//     calling thread instead (`gpulet labels`).
//
// Ownership: the publisher owns its API client, its NodeFeature writer and
// its thread (stopped and
// joined by the destructor). Thread safety: Publish, WriteFeatureFile and
// PatchNode and WriteApi may be called from any thread.
#pragma once

#include <memory>
#include <optional>
#include <stop_token>
#include <string>
#include <thread>

#include "absl/base/thread_annotations.h"
#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "absl/synchronization/mutex.h"
#include "absl/time/time.h"
#include "src/base/config/config.h"
#include "src/gpu/device/gpu.h"
#include "src/model/labels/labels.h"
#include "src/net/kube/api_client.h"
#include "src/net/kube/client.h"
#include "src/plugin/daemon/node_feature_writer.h"

namespace gpulet::daemon {

inline constexpr char kFeatureFile[] =
    "/etc/kubernetes/node-feature-discovery/features.d/gfd";
inline constexpr char kMachineTypeFile[] = "/sys/class/dmi/id/product_name";

// GFD's --use-node-feature-api: true, false, or not given (auto: the
// NodeFeature API when the API server serves it).
enum class NodeFeatureApi { kAuto, kOn, kOff };

struct LabelOptions {
  std::string output_file;  // "": no feature file
  std::string node_name;    // "": no Node patch
  NodeFeatureApi node_feature_api = NodeFeatureApi::kOff;
  // The node the NodeFeature object is for, and the object's namespace.
  std::string feature_node;
  std::string feature_namespace = "default";
  std::string kubeconfig;  // "": the pod's service account (in-cluster)
  std::string machine_type_file = kMachineTypeFile;
  std::string sysfs_root = "/sys";
  bool timestamp = true;  // nvidia.com/gfd.timestamp in the feature file
  absl::Duration retry = absl::Seconds(30);
  // After a patch, the Node is checked again this often (a GET; a patch
  // only when someone changed or removed gpulet's labels), as GFD rewrites
  // its file every minute.
  absl::Duration resync = absl::Minutes(5);
  // Publish() patches on the publisher's thread; false: no thread, the
  // caller patches with PatchNode().
  bool background_patch = true;

  bool enabled() const {
    return !output_file.empty() || !node_name.empty() ||
           node_feature_api == NodeFeatureApi::kOn;
  }
};

class LabelPublisher {
 public:
  // With a node name to patch or a NodeFeature to write: checks the names,
  // loads the API server's address and credentials (options.kubeconfig,
  // else in-cluster) and builds the client; with node_feature_api auto,
  // asks the API server whether it serves nodefeatures and chooses (a
  // client that cannot be built then means the file, logged). Errors name
  // the node name, the namespace, the kubeconfig, the missing in-cluster
  // setting or the failed discovery. `shared`, when given, is used instead
  // of a client of its own (a daemon's one API client); it must outlive the
  // publisher.
  static absl::StatusOr<std::unique_ptr<LabelPublisher>> Create(
      LabelOptions options, kube::Client* shared = nullptr);
  // Over a client the caller owns (tests); null: no Node patch and no
  // NodeFeature. node_feature_api auto is asked on the thread (with a
  // client, a node name and background_patch), else taken as off; on with
  // a bad node name or namespace writes no object.
  LabelPublisher(LabelOptions options, kube::Client* client);
  ~LabelPublisher();
  LabelPublisher(const LabelPublisher&) = delete;
  LabelPublisher& operator=(const LabelPublisher&) = delete;

  // The labels of `node` under `config`, with the facts read from the
  // machine type file and sysfs.
  labels::Labels Compute(const device::Node& node,
                         const config::Config& config) const;

  // Compute, write the feature file (when configured) and queue the Node
  // patch and the NodeFeature write (when configured). Returns the labels,
  // or the file's error.
  absl::StatusOr<labels::Labels> Publish(const device::Node& node,
                                         const config::Config& config);

  absl::Status WriteFeatureFile(const labels::Labels& labels) const;

  // Patches the Node now. FailedPrecondition when no node name was given.
  absl::Status PatchNode(const labels::Labels& labels,
                         std::stop_token stop = {});

  // Writes the NodeFeature object and patches the Node now, each when
  // configured; the first error.
  absl::Status WriteApi(const labels::Labels& labels,
                        std::stop_token stop = {});

  // Whether the NodeFeature object is written (the choice made; without a
  // thread, or on the thread).
  bool writes_node_feature() const { return node_feature_.has_value(); }
  // The options in force after the choice (file and patch off when the
  // NodeFeature object is written).
  const LabelOptions& options() const { return options_; }

 private:
  void PatchLoop(std::stop_token stop);
  // The NodeFeature object from now on, instead of the file and the patch.
  void UseNodeFeature();
  // Auto's question asked on the thread, once; then the file `labels` was
  // not written for, when the answer is off.
  absl::Status ChooseInBackground(const labels::Labels& labels,
                                  std::stop_token stop);
  bool Woken() const ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_) {
    return stopping_ || pending_.has_value();
  }

  const LabelOptions options_;
  // Set by Create; a test's client otherwise.
  std::unique_ptr<kube::ApiClient> owned_api_;
  kube::Client* client_ = nullptr;
  // Set before the thread starts, or by the thread (then used by it only).
  std::optional<NodeFeatureWriter> node_feature_;
  absl::Mutex mu_;
  std::optional<labels::Labels> pending_ ABSL_GUARDED_BY(mu_);
  // What is written, after the choice; while the thread has not asked
  // (auto), Publish leaves everything to it.
  bool write_file_ ABSL_GUARDED_BY(mu_) = false;
  bool patch_node_ ABSL_GUARDED_BY(mu_) = false;
  bool choice_pending_ ABSL_GUARDED_BY(mu_) = false;
  bool stopping_ ABSL_GUARDED_BY(mu_) = false;
  // Last: started after everything it uses, stopped first.
  std::jthread patcher_;
};

}  // namespace gpulet::daemon
