// Helpers for the PluginServer integration tests: a kubelet-like gRPC
// client on the plugin's unix socket, a ListAndWatch stream reader on its
// own thread, a short temporary directory, and an fd counter.
//
// Thread safety: ListAndWatchReader is safe to query from the test thread
// while its reader thread runs; the rest is single-threaded.
#pragma once

#include <grpcpp/grpcpp.h>

#include <cstddef>
#include <memory>
#include <optional>
#include <string>
#include <thread>
#include <vector>

#include "absl/base/thread_annotations.h"
#include "absl/synchronization/mutex.h"
#include "absl/time/time.h"
#include "deviceplugin/v1beta1/api.grpc.pb.h"

namespace gpulet::testing {

// Generous: only reached when something is broken.
inline constexpr absl::Duration kRpcTimeout = absl::Seconds(10);

// A stub over "unix:<socket_path>".
std::unique_ptr<v1beta1::DevicePlugin::Stub> DialPlugin(
    const std::string& socket_path);

// A context whose deadline is kRpcTimeout from now.
std::unique_ptr<grpc::ClientContext> RpcContext();

// Reads one ListAndWatch stream until it ends or is cancelled.
class ListAndWatchReader {
 public:
  explicit ListAndWatchReader(v1beta1::DevicePlugin::Stub& stub);
  ~ListAndWatchReader();  // cancels, then the thread member joins
  ListAndWatchReader(const ListAndWatchReader&) = delete;
  ListAndWatchReader& operator=(const ListAndWatchReader&) = delete;

  // Waits until `n` messages arrived or the stream ended (at most
  // kRpcTimeout); returns every message so far.
  std::vector<v1beta1::ListAndWatchResponse> WaitForMessages(size_t n);
  // The stream's final status, or nullopt if it did not end in time.
  std::optional<grpc::Status> WaitForEnd();
  void Cancel();

 private:
  void Run(v1beta1::DevicePlugin::Stub& stub);

  grpc::ClientContext context_;
  absl::Mutex mu_;
  std::vector<v1beta1::ListAndWatchResponse> messages_ ABSL_GUARDED_BY(mu_);
  std::optional<grpc::Status> end_ ABSL_GUARDED_BY(mu_);
  std::jthread thread_;  // last: joined before the rest is destroyed
};

// A fresh /tmp/gpl-XXXXXX directory, removed with its contents.
class ShortTempDir {
 public:
  ShortTempDir();
  ~ShortTempDir();
  ShortTempDir(const ShortTempDir&) = delete;
  ShortTempDir& operator=(const ShortTempDir&) = delete;
  const std::string& path() const { return path_; }

 private:
  std::string path_;
};

// Entries in /proc/self/fd.
int OpenFdCount();

// Leaves a socket file at `path` with nobody listening, as a killed plugin
// does. Returns false on failure.
bool MakeStaleSocket(const std::string& path);

}  // namespace gpulet::testing
