// TokenSource: the bearer token for API requests. A static token (from a
// kubeconfig) is returned as is. A token file (a pod's projected
// service-account token, which the kubelet rotates well before it expires)
// is re-read when the cached copy is older than `refresh` (a minute, as
// client-go does) or after the server refused it (Invalidate(), on a 401).
// When a re-read fails the last good token is kept and the failure logged
// (by path, never the token).
//
// Thread safety: every method may be called from any thread.
#pragma once

#include <string>

#include "absl/base/thread_annotations.h"
#include "absl/status/statusor.h"
#include "absl/synchronization/mutex.h"
#include "absl/time/time.h"
#include "src/base/common/clock.h"

namespace gpulet::kube {

class TokenSource {
 public:
  // With neither `token` nor `file`, Token() returns "" (no bearer auth).
  // REQUIRES: `clock` outlives the source.
  TokenSource(std::string token, std::string file, const common::Clock& clock,
              absl::Duration refresh = absl::Minutes(1));

  // The current token, "" when none is configured. Errors only when the
  // file has never been read successfully.
  absl::StatusOr<std::string> Token();

  // The server refused the token: re-read the file at the next Token().
  void Invalidate();

 private:
  const std::string static_token_;
  const std::string file_;
  const common::Clock& clock_;
  const absl::Duration refresh_;
  absl::Mutex mu_;
  std::string cached_ ABSL_GUARDED_BY(mu_);
  absl::Time read_at_ ABSL_GUARDED_BY(mu_) = absl::InfinitePast();
};

}  // namespace gpulet::kube
