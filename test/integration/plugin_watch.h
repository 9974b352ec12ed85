// Watch: one ListAndWatch stream of a running `gpulet plugin`, held open
// for the whole test as the kubelet holds it, every message kept, for the
// daemon integration tests. Test-only; header-only.
//
// Thread safety: the accessors may be called from any thread; the stream
// is read on a thread of its own, joined by the destructor.
#pragma once

#include <algorithm>
#include <cstdint>
#include <functional>
#include <memory>
#include <string>
#include <thread>
#include <vector>

#include "absl/base/thread_annotations.h"
#include "absl/strings/str_cat.h"
#include "absl/synchronization/mutex.h"
#include "absl/time/time.h"
#include "deviceplugin/v1beta1/api.grpc.pb.h"
#include "grpcpp/grpcpp.h"
#include "test/integration/device_health.h"

namespace gpulet::testing {

using Devices = v1beta1::ListAndWatchResponse;

// Generous: only reached when something is broken.
inline constexpr absl::Duration kWatchTimeout = absl::Seconds(30);

// One ListAndWatch stream held open for the whole test, as the kubelet
// holds it: every message is kept, and the stream's end is noticed.
class Watch {
 public:
  explicit Watch(const std::string& socket_path)
      : stub_(v1beta1::DevicePlugin::NewStub(grpc::CreateChannel(
            "unix://" + socket_path, grpc::InsecureChannelCredentials()))),
        thread_([this] { Run(); }) {}
  ~Watch() {
    context_.TryCancel();
    thread_.join();
  }

  // Waits until the latest message satisfies `done`; false at the timeout
  // or when the stream ended first.
  bool WaitUntil(const std::function<bool(const Devices&)>& done) {
    absl::MutexLock lock(&mu_);
    auto ready = [&]() ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_) {
      return ended_ || (!messages_.empty() && done(messages_.back()));
    };
    mu_.AwaitWithTimeout(absl::Condition(&ready), kWatchTimeout);
    return !messages_.empty() && done(messages_.back());
  }
  bool ended() {
    absl::MutexLock lock(&mu_);
    return ended_;
  }
  Devices latest() {
    absl::MutexLock lock(&mu_);
    return messages_.empty() ? Devices() : messages_.back();
  }
  // How many messages came so far: a mark for HealthyAmong.
  size_t size() {
    absl::MutexLock lock(&mu_);
    return messages_.size();
  }
  // Waits until the stream ended; false at the timeout.
  bool WaitEnded() {
    absl::MutexLock lock(&mu_);
    mu_.AwaitWithTimeout(absl::Condition(&ended_), kWatchTimeout);
    return ended_;
  }
  // Whether message `i` advertises the device `id` Unhealthy.
  bool UnhealthyIn(size_t i, const std::string& id) {
    absl::MutexLock lock(&mu_);
    if (i >= messages_.size()) return false;
    for (const auto& device : messages_[i].devices()) {
      if (device.id() == id) return device.health() != "Healthy";
    }
    return false;
  }
  // Each message from index `from` up to `to` (exclusive; all by default)
  // that advertises Healthy a device of a GPU of `gpus` (its UUID, or a
  // replica "<uuid>::<n>" of it), described; empty when there is none. A
  // reload must never, not even for one message, advertise such a device
  // Healthy while its GPU is down.
  std::string HealthyAmong(size_t from, const std::vector<std::string>& gpus,
                           size_t to = SIZE_MAX) {
    absl::MutexLock lock(&mu_);
    std::string found;
    for (size_t i = from; i < std::min(to, messages_.size()); ++i) {
      for (const auto& device : messages_[i].devices()) {
        if (device.health() != "Healthy") continue;
        for (const std::string& gpu : gpus) {
          if (device.id() == gpu || device.id().starts_with(gpu + "::")) {
            absl::StrAppend(&found, "message ", i, " advertises ", device.id(),
                            " Healthy\n");
          }
        }
      }
    }
    return found;
  }
  // Until the latest message advertises exactly `want`: every device of
  // it, with its health, and no other.
  bool WaitForHealth(const HealthById& want) {
    return WaitUntil(
        [&](const Devices& l) { return AdvertisedHealth(l) == want; });
  }
  // How the latest message differs from `want`.
  std::string Describe(const HealthById& want) {
    const std::string diff = HealthDiff(AdvertisedHealth(latest()), want);
    return absl::StrCat(ended() ? "stream ended; " : "stream open; ",
                        diff.empty() ? "latest message as wanted"
                                     : "latest message differs:\n" + diff);
  }

 private:
  void Run() {
    auto reader = stub_->ListAndWatch(&context_, v1beta1::Empty());
    Devices response;
    while (reader->Read(&response)) {
      absl::MutexLock lock(&mu_);
      messages_.push_back(response);
    }
    reader->Finish().ok();
    absl::MutexLock lock(&mu_);
    ended_ = true;
  }

  std::unique_ptr<v1beta1::DevicePlugin::Stub> stub_;
  grpc::ClientContext context_;
  absl::Mutex mu_;
  std::vector<Devices> messages_ ABSL_GUARDED_BY(mu_);
  bool ended_ ABSL_GUARDED_BY(mu_) = false;
  std::thread thread_;
};

}  // namespace gpulet::testing
