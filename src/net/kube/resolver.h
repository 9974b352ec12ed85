// Resolver: a host name to socket addresses within a deadline.
// getaddrinfo(3) takes no deadline (glibc waits resolv.conf's timeout ×
// attempts for each name server, a hung NSS module forever), so a name is
// looked up on the resolver's own worker thread while the caller waits, on
// an eventfd, for the answer, its deadline or its wake-up fd. A caller that
// gives up leaves the lookup behind: it finishes into a job the worker
// shares (shared_ptr), never into the caller's memory. An IP address is
// converted at once, on the caller's thread.
//
// One worker takes lookups in turn: a lookup that hangs delays the ones
// queued behind it, each caller still bound by its own deadline, and a
// lookup whose caller gave up before it started is skipped.
//
// Errors: "resolve <host>: ..." — Unavailable when the name does not
// resolve, DeadlineExceeded when the deadline passes first, Cancelled when
// the wake-up fd becomes readable.
//
// Thread safety: Resolve() from any number of threads. System() is
// process-wide and never destroyed (its worker may be inside getaddrinfo
// at exit); any other Resolver joins its worker on destruction, after the
// lookup in progress returns.
#pragma once

#include <sys/socket.h>

#include <deque>
#include <functional>
#include <memory>
#include <string>
#include <thread>
#include <vector>

#include "absl/base/thread_annotations.h"
#include "absl/status/statusor.h"
#include "absl/synchronization/mutex.h"
#include "absl/time/time.h"
#include "src/base/common/clock.h"

namespace gpulet::kube {

struct SocketAddress {
  sockaddr_storage storage{};
  socklen_t length = 0;
};

using Addresses = std::vector<SocketAddress>;

// The blocking lookup the worker runs: getaddrinfo for a stream socket by
// default; tests substitute their own.
using LookupFn = std::function<absl::StatusOr<Addresses>(
    const std::string& host, const std::string& port)>;

absl::StatusOr<Addresses> SystemLookup(const std::string& host,
                                       const std::string& port);

class Resolver {
 public:
  // getaddrinfo on the monotonic clock.
  static Resolver& System();

  // `clock` measures the deadline; borrowed, must outlive the resolver.
  explicit Resolver(LookupFn lookup,
                    const common::Clock& clock = common::RealClock::Get());
  ~Resolver();
  Resolver(const Resolver&) = delete;
  Resolver& operator=(const Resolver&) = delete;

  // `port` is numeric. `wake_fd` (-1: none) readable ends the wait.
  absl::StatusOr<Addresses> Resolve(const std::string& host,
                                    const std::string& port,
                                    absl::Time deadline, int wake_fd = -1);

 private:
  struct Job;
  void Work();

  const LookupFn lookup_;
  const common::Clock& clock_;
  absl::Mutex mu_;
  std::deque<std::shared_ptr<Job>> queue_ ABSL_GUARDED_BY(mu_);
  bool stopping_ ABSL_GUARDED_BY(mu_) = false;
  std::jthread worker_;  // last: starts after the members it reads
};

}  // namespace gpulet::kube
