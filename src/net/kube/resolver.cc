#include "src/net/kube/resolver.h"

#include <netdb.h>
#include <poll.h>
#include <sys/eventfd.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>
#include <utility>

#include "absl/strings/str_cat.h"
#include "src/base/common/poll_timeout.h"
#include "src/base/common/unique_fd.h"

namespace gpulet::kube {
namespace {

absl::StatusOr<Addresses> GetAddrInfo(const std::string& host,
                                      const std::string& port, int flags) {
  addrinfo hints{};
  hints.ai_family = AF_UNSPEC;
  hints.ai_socktype = SOCK_STREAM;
  hints.ai_flags = AI_NUMERICSERV | flags;
  addrinfo* found = nullptr;
  if (const int rc = ::getaddrinfo(host.c_str(), port.c_str(), &hints, &found);
      rc != 0) {
    return absl::UnavailableError(
        absl::StrCat("resolve ", host, ": ", gai_strerror(rc)));
  }
  Addresses addresses;
  for (const addrinfo* a = found; a != nullptr; a = a->ai_next) {
    if (a->ai_addrlen > sizeof(sockaddr_storage)) continue;
    SocketAddress address;
    std::memcpy(&address.storage, a->ai_addr, a->ai_addrlen);
    address.length = a->ai_addrlen;
    addresses.push_back(address);
  }
  ::freeaddrinfo(found);
  return addresses;
}

// Until `done_fd` or `wake_fd` is readable or `deadline` passes on `clock`.
absl::Status Wait(int done_fd, int wake_fd, absl::Time deadline,
                  const common::Clock& clock) {
  pollfd fds[2] = {{done_fd, POLLIN, 0}, {wake_fd, POLLIN, 0}};
  const nfds_t count = wake_fd >= 0 ? 2 : 1;
  while (true) {
    const int n = ::poll(fds, count, common::PollTimeoutUntil(deadline, clock));
    if (n < 0 && errno == EINTR) continue;
    if (n < 0) return absl::UnavailableError(strerror(errno));
    if (fds[0].revents != 0) return absl::OkStatus();
    if (count == 2 && fds[1].revents != 0) {
      return absl::CancelledError("stopped");
    }
    if (n == 0 && clock.Now() >= deadline) {
      return absl::DeadlineExceededError("timed out");
    }
  }
}

}  // namespace

// One lookup, shared by the waiting caller and the worker.
struct Resolver::Job {
  Job(std::string h, std::string p) : host(std::move(h)), port(std::move(p)) {}
  const std::string host;
  const std::string port;
  const common::UniqueFd done_fd{::eventfd(0, EFD_CLOEXEC | EFD_NONBLOCK)};
  absl::Mutex mu;
  bool done ABSL_GUARDED_BY(mu) = false;
  bool abandoned ABSL_GUARDED_BY(mu) = false;
  absl::StatusOr<Addresses> result ABSL_GUARDED_BY(mu);
};

absl::StatusOr<Addresses> SystemLookup(const std::string& host,
                                       const std::string& port) {
  return GetAddrInfo(host, port, 0);
}

Resolver& Resolver::System() {
  static Resolver* const kResolver = new Resolver(SystemLookup);
  return *kResolver;
}

Resolver::Resolver(LookupFn lookup, const common::Clock& clock)
    : lookup_(std::move(lookup)), clock_(clock), worker_([this] { Work(); }) {}

Resolver::~Resolver() {
  absl::MutexLock lock(&mu_);
  stopping_ = true;
}  // worker_ joins here, before the members it reads go

void Resolver::Work() {
  while (true) {
    std::shared_ptr<Job> job;
    {
      absl::MutexLock lock(&mu_);
      const auto ready = [this]() ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_) {
        return stopping_ || !queue_.empty();
      };
      mu_.Await(absl::Condition(&ready));
      if (stopping_) return;
      job = std::move(queue_.front());
      queue_.pop_front();
    }
    {
      absl::MutexLock lock(&job->mu);
      if (job->abandoned) continue;
    }
    absl::StatusOr<Addresses> result = lookup_(job->host, job->port);
    absl::MutexLock lock(&job->mu);
    job->result = std::move(result);
    job->done = true;
    const uint64_t one = 1;
    (void)!::write(job->done_fd.get(), &one, sizeof(one));
  }
}

absl::StatusOr<Addresses> Resolver::Resolve(const std::string& host,
                                            const std::string& port,
                                            absl::Time deadline, int wake_fd) {
  // An IP address needs no lookup: getaddrinfo converts it at once.
  if (absl::StatusOr<Addresses> numeric =
          GetAddrInfo(host, port, AI_NUMERICHOST);
      numeric.ok()) {
    return numeric;
  }
  auto job = std::make_shared<Job>(host, port);
  if (!job->done_fd.valid()) {
    return absl::ResourceExhaustedError(
        absl::StrCat("resolve ", host, ": eventfd: ", strerror(errno)));
  }
  {
    absl::MutexLock lock(&mu_);
    queue_.push_back(job);
  }
  const absl::Status waited =
      Wait(job->done_fd.get(), wake_fd, deadline, clock_);
  absl::MutexLock lock(&job->mu);
  if (job->done) return job->result;
  job->abandoned = true;
  return absl::Status(waited.code(),
                      absl::StrCat("resolve ", host, ": ", waited.message()));
}

}  // namespace gpulet::kube
