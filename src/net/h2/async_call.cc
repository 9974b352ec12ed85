#include "src/net/h2/async_call.h"

#include <unistd.h>

#include <cstdint>
#include <utility>

namespace gpulet::h2 {

void LoopWaker::Wake() {
  ready_ = true;
  absl::MutexLock lock(&mu_);
  if (fd_ < 0) return;
  const uint64_t one = 1;
  [[maybe_unused]] const ssize_t n = ::write(fd_, &one, sizeof(one));
}

void LoopWaker::Close() {
  absl::MutexLock lock(&mu_);
  fd_ = -1;
}

void AsyncCall::Complete(absl::StatusOr<std::string> response) {
  {
    absl::MutexLock lock(&mu_);
    if (done_) return;
    done_ = true;
    response_ = std::move(response);
  }
  if (waker_ != nullptr) waker_->Wake();
}

void AsyncCall::Abandon() {
  absl::MutexLock lock(&mu_);
  done_ = true;
  response_.reset();
}

std::optional<absl::StatusOr<std::string>> AsyncCall::Take() {
  absl::MutexLock lock(&mu_);
  std::optional<absl::StatusOr<std::string>> out = std::move(response_);
  response_.reset();
  return out;
}

struct UnaryResponder::Guard {
  explicit Guard(std::shared_ptr<AsyncCall> c) : call(std::move(c)) {}
  ~Guard() {
    call->Complete(absl::InternalError(
        "the handler dropped the call without answering it"));
  }
  Guard(const Guard&) = delete;
  Guard& operator=(const Guard&) = delete;
  const std::shared_ptr<AsyncCall> call;
};

UnaryResponder::UnaryResponder(std::shared_ptr<AsyncCall> call)
    : guard_(std::make_shared<Guard>(std::move(call))) {}

void UnaryResponder::Complete(absl::StatusOr<std::string> response) const {
  guard_->call->Complete(std::move(response));
}

Clock::time_point UnaryResponder::deadline() const {
  return guard_->call->deadline();
}

}  // namespace gpulet::h2
