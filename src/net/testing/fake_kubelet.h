// FakeKubelet: the kubelet's pod-resources API (v1) for tests, serving
// scripted answers on a unix socket in a temporary directory it removes
// again. Header-only, for tests.
//
// Thread safety: Set may be called while the server answers.
#pragma once

#include <stdlib.h>

#include <filesystem>
#include <memory>
#include <string>
#include <utility>

#include "absl/base/thread_annotations.h"
#include "absl/synchronization/mutex.h"
#include "grpcpp/grpcpp.h"
#include "podresources/v1/api.grpc.pb.h"

namespace gpulet::podresources {

class FakeKubelet final : public v1::PodResourcesLister::Service {
 public:
  // Serves on <new temporary directory>/kubelet.sock; socket_path() is
  // empty when that failed.
  FakeKubelet() {
    char tmpl[] = "/tmp/gpulet-pr-XXXXXX";
    if (mkdtemp(tmpl) == nullptr) return;
    dir_ = tmpl;
    grpc::ServerBuilder builder;
    builder.AddListeningPort("unix://" + dir_ + "/kubelet.sock",
                             grpc::InsecureServerCredentials());
    builder.RegisterService(this);
    server_ = builder.BuildAndStart();
  }
  ~FakeKubelet() override {
    if (server_) server_->Shutdown();
    if (!dir_.empty()) std::filesystem::remove_all(dir_);
  }

  std::string socket_path() const {
    return server_ ? dir_ + "/kubelet.sock" : "";
  }

  void Set(v1::ListPodResourcesResponse list,
           v1::AllocatableResourcesResponse allocatable,
           grpc::Status status = grpc::Status::OK) {
    absl::MutexLock lock(&mu_);
    list_ = std::move(list);
    allocatable_ = std::move(allocatable);
    status_ = std::move(status);
  }

  grpc::Status List(grpc::ServerContext*, const v1::ListPodResourcesRequest*,
                    v1::ListPodResourcesResponse* reply) override {
    absl::MutexLock lock(&mu_);
    *reply = list_;
    return status_;
  }
  grpc::Status GetAllocatableResources(
      grpc::ServerContext*, const v1::AllocatableResourcesRequest*,
      v1::AllocatableResourcesResponse* reply) override {
    absl::MutexLock lock(&mu_);
    *reply = allocatable_;
    return status_;
  }

 private:
  std::string dir_;
  std::unique_ptr<grpc::Server> server_;
  absl::Mutex mu_;
  v1::ListPodResourcesResponse list_ ABSL_GUARDED_BY(mu_);
  v1::AllocatableResourcesResponse allocatable_ ABSL_GUARDED_BY(mu_);
  grpc::Status status_ ABSL_GUARDED_BY(mu_);
};

}  // namespace gpulet::podresources
