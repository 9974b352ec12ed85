// Publisher: keeps the node's ResourceSlices on the API server equal to
// BuildSlices (slice_builder.h) of what the node has now.
//
// Publish() lists the slices of this driver and node (field selectors
// spec.nodeName and spec.driver), and when their specs already say what
// the node has, writes nothing. Otherwise it rebuilds the pool at a
// generation above every one seen (on the server and published before),
// updates the slices that exist (PUT with their resourceVersion), creates
// the missing ones and deletes the rest, so consumers that keep only the
// pool's highest generation never mix old and new devices. A conflict (a
// slice changed or appeared under it) lists again and retries; the
// client (kube::Client) already retries transient failures with backoff.
// Credentials stay in the transport; nothing here logs them.
//
// Thread safety: every method may be called from any thread; calls run
// one at a time. The client is borrowed and must outlive the publisher.
#pragma once

#include <cstdint>
#include <stop_token>

#include "absl/base/thread_annotations.h"
#include "absl/status/status.h"
#include "absl/synchronization/mutex.h"
#include "nlohmann/json.hpp"
#include "src/dra/slices/slice_builder.h"
#include "src/net/kube/client.h"

namespace gpulet::draslice {

inline constexpr char kResourceSlicesPath[] =
    "/apis/resource.k8s.io/v1/resourceslices";

// "spec.nodeName=<node>,spec.driver=<driver>".
std::string NodeSlicesSelector(const std::string& node,
                               const std::string& driver);

// A slice's spec as the API server gives it back, reduced to what
// BuildSlices sets: empty lists and objects and the server-set
// timeAdded of taints are dropped.
nlohmann::json ComparableSpec(const nlohmann::json& spec);

class Publisher {
 public:
  Publisher(kube::Client& client, SliceOptions options);

  // Makes the pool on the server hold exactly `devices`. InvalidArgument
  // for options BuildSlices refuses; the API server's error otherwise.
  absl::Status Publish(const NodeDevices& devices, std::stop_token stop = {});

  // Deletes every slice of this driver and node (the node stops serving
  // DRA); slices already gone are fine.
  absl::Status DeleteAll(std::stop_token stop = {});

  // The pool generation last published or found unchanged; -1 before.
  int64_t generation() const;

 private:
  // One list-compare-write round; Aborted or AlreadyExists when another
  // writer got in between.
  absl::Status PublishOnce(const NodeDevices& devices, std::stop_token stop)
      ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_);

  kube::Client& client_;
  const SliceOptions options_;
  mutable absl::Mutex mu_;
  int64_t generation_ ABSL_GUARDED_BY(mu_) = -1;
};

}  // namespace gpulet::draslice
