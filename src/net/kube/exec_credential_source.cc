#include "src/net/kube/exec_credential_source.h"

#include <utility>

namespace gpulet::kube {

ExecCredentialSource::ExecCredentialSource(RunFn run,
                                           const common::Clock& clock)
    : run_(std::move(run)), clock_(clock) {}

absl::StatusOr<ExecCredentialSource::Current> ExecCredentialSource::Get() {
  absl::MutexLock lock(&mu_);
  // client-go's rule: expired once the wall clock is past the expiry.
  if (valid_ && !(clock_.WallNow() > cached_.credential.expiry)) {
    return cached_;
  }
  valid_ = false;
  ++runs_;
  absl::StatusOr<ExecCredential> credential = run_();
  if (!credential.ok()) return credential.status();
  cached_.credential = *std::move(credential);
  ++cached_.generation;
  valid_ = true;
  return cached_;
}

void ExecCredentialSource::Invalidate(uint64_t generation) {
  absl::MutexLock lock(&mu_);
  if (generation == cached_.generation) valid_ = false;
}

int ExecCredentialSource::runs() const {
  absl::MutexLock lock(&mu_);
  return runs_;
}

}  // namespace gpulet::kube
