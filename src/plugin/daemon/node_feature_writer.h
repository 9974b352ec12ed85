// NodeFeatureWriter: brings the node's NodeFeature object
// (labels/node_feature.h; node-feature-discovery's nfd.k8s-sigs.io/v1alpha1
// API, gpu-feature-discovery's default output) to the computed labels
// through the API server: created when absent, its spec.labels replaced
// when they differ (a label no longer computed disappears with it), left
// alone when they do not. Nothing else of the object is changed and nothing
// is ever deleted. A replace that loses a race (409 Conflict, or a create
// that finds the object made meanwhile) reads the object again and tries
// again, a few times.
//
// NodeFeaturesServed() is the discovery question behind "the NodeFeature
// API when the cluster has it": does the API server serve
// nfd.k8s-sigs.io/v1alpha1 nodefeatures (node-feature-discovery's CRD
// installed)?
//
// Thread safety: Write may be called from any thread, one call at a time.
// The client is borrowed and must outlive the writer.
#pragma once

#include <stop_token>
#include <string>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "src/model/labels/labels.h"
#include "src/net/kube/client.h"

namespace gpulet::daemon {

// True when the API server's discovery document for
// nfd.k8s-sigs.io/v1alpha1 lists nodefeatures, false when it does not or
// the group version is not served (404); the error otherwise.
absl::StatusOr<bool> NodeFeaturesServed(kube::Client& client,
                                        std::stop_token stop = {});

class NodeFeatureWriter {
 public:
  // InvalidArgument naming the node or namespace when they cannot name the
  // object.
  static absl::StatusOr<NodeFeatureWriter> Create(kube::Client& client,
                                                  std::string ns,
                                                  std::string node);

  absl::Status Write(const labels::Labels& labels, std::stop_token stop = {});

  // "<namespace>/<name>", for messages.
  std::string ObjectName() const { return ns_ + "/" + name_; }

 private:
  NodeFeatureWriter(kube::Client& client, std::string ns, std::string node,
                    std::string name)
      : client_(&client),
        ns_(std::move(ns)),
        node_(std::move(node)),
        name_(std::move(name)) {}
  absl::Status WriteOnce(const labels::Labels& labels, std::stop_token stop);

  kube::Client* client_;
  std::string ns_;
  std::string node_;
  std::string name_;
};

}  // namespace gpulet::daemon
