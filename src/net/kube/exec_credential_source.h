// ExecCredentialSource: the credential of an exec plugin, cached as
// client-go caches it. The plugin runs at the first Get(), again once the
// credential's expirationTimestamp has passed (on the wall clock; without
// one the credential is kept), and again after the server refused it
// (Invalidate on a 401). Each run's credential has a new generation
// number; Invalidate names the generation that was refused, so that many
// requests refused with the same credential cause one run, not one each.
// A failed run is returned as its error and nothing is cached: the next
// Get() runs the plugin again.
//
// The plugin runs under the source's lock: requests that need a credential
// while it runs wait for its answer instead of starting plugins of their
// own (an interactive plugin prompts once).
//
// Thread safety: every method may be called from any thread.
#pragma once

#include <cstdint>
#include <functional>

#include "absl/base/thread_annotations.h"
#include "absl/status/statusor.h"
#include "absl/synchronization/mutex.h"
#include "src/base/common/clock.h"
#include "src/net/kube/exec_credential.h"

namespace gpulet::kube {

class ExecCredentialSource {
 public:
  // Runs the plugin once (ExecPlugin::Run, or a fake in tests).
  using RunFn = std::function<absl::StatusOr<ExecCredential>()>;

  struct Current {
    ExecCredential credential;
    uint64_t generation = 0;  // 1 for the first run's credential
  };

  // REQUIRES: `clock` outlives the source.
  ExecCredentialSource(RunFn run, const common::Clock& clock);

  absl::StatusOr<Current> Get();

  // The server refused the credential of `generation`: the next Get() runs
  // the plugin, unless a newer credential is already cached.
  void Invalidate(uint64_t generation);

  // How many times the plugin has run (for tests and messages).
  int runs() const;

 private:
  const RunFn run_;
  const common::Clock& clock_;
  mutable absl::Mutex mu_;
  Current cached_ ABSL_GUARDED_BY(mu_);
  bool valid_ ABSL_GUARDED_BY(mu_) = false;
  int runs_ ABSL_GUARDED_BY(mu_) = 0;
};

}  // namespace gpulet::kube
