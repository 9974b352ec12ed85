#include "src/net/kube/resolver.h"

#include <netinet/in.h>
#include <sys/eventfd.h>

#include <atomic>
#include <condition_variable>
#include <memory>
#include <mutex>

#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "src/base/common/unique_fd.h"
#include "src/net/kube/tls_connection.h"

namespace gpulet::kube {
namespace {

using ::testing::HasSubstr;

// A lookup that hangs until the test lets it go, as getaddrinfo does on a
// name server that never answers. Shared with the resolver's worker, which
// may still be inside it when the caller has given up.
struct HungLookup {
  std::mutex mu;
  std::condition_variable cv;
  bool released = false;
  std::atomic<int> calls{0};
  void Release() {
    std::lock_guard lock(mu);
    released = true;
    cv.notify_all();
  }
};

SocketAddress Loopback(uint16_t port) {
  SocketAddress address;
  auto* in = reinterpret_cast<sockaddr_in*>(&address.storage);
  in->sin_family = AF_INET;
  in->sin_port = htons(port);
  in->sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  address.length = sizeof(sockaddr_in);
  return address;
}

// The lookup moves the fake clock past the caller's deadline, then hangs:
// the caller's wait must end on the clock, not on the lookup. (Callers give
// a deadline a millisecond ahead, so their poll wakes soon after the clock
// has moved, however the threads are scheduled.)
LookupFn HangPast(common::FakeClock& clock, std::shared_ptr<HungLookup> hung) {
  return [&clock, hung](const std::string&,
                        const std::string&) -> absl::StatusOr<Addresses> {
    ++hung->calls;
    clock.Advance(absl::Hours(1));
    std::unique_lock lock(hung->mu);
    hung->cv.wait(lock, [&] { return hung->released; });
    return Addresses{Loopback(1)};
  };
}

TEST(ResolverTest, AHungLookupEndsAtTheDeadline) {
  common::FakeClock clock;
  auto hung = std::make_shared<HungLookup>();
  Resolver resolver(HangPast(clock, hung), clock);
  absl::StatusOr<Addresses> got = resolver.Resolve(
      "api.example", "6443", clock.Now() + absl::Milliseconds(1));
  EXPECT_EQ(got.status().code(), absl::StatusCode::kDeadlineExceeded);
  EXPECT_THAT(got.status().message(), HasSubstr("resolve api.example"));
  hung->Release();  // the worker finishes into the job it shares
}

TEST(ResolverTest, AConnectionsDeadlineBoundsItsLookup) {
  common::FakeClock clock;
  auto hung = std::make_shared<HungLookup>();
  Resolver resolver(HangPast(clock, hung), clock);
  TlsConnection conn({.clock = &clock, .resolver = &resolver});
  const absl::Status status = conn.Connect(nullptr, "api.example", "6443",
                                           clock.Now() + absl::Milliseconds(1));
  EXPECT_EQ(status.code(), absl::StatusCode::kDeadlineExceeded);
  EXPECT_THAT(status.message(), HasSubstr("resolve api.example: timed out"));
  hung->Release();
}

TEST(ResolverTest, TheWakeUpFdEndsTheWait) {
  common::FakeClock clock;
  auto hung = std::make_shared<HungLookup>();
  Resolver resolver(
      [hung](const std::string&,
             const std::string&) -> absl::StatusOr<Addresses> {
        std::unique_lock lock(hung->mu);
        hung->cv.wait(lock, [&] { return hung->released; });
        return Addresses{};
      },
      clock);
  const common::UniqueFd wake(::eventfd(1, EFD_CLOEXEC));
  absl::StatusOr<Addresses> got = resolver.Resolve(
      "api.example", "6443", absl::InfiniteFuture(), wake.get());
  EXPECT_EQ(got.status().code(), absl::StatusCode::kCancelled);
  hung->Release();
}

TEST(ResolverTest, ReturnsTheLookupsAnswer) {
  Resolver resolver([](const std::string& host,
                       const std::string& port) -> absl::StatusOr<Addresses> {
    if (host != "api.example" || port != "6443") {
      return absl::UnavailableError("resolve " + host + ": unknown");
    }
    return Addresses{Loopback(6443)};
  });
  absl::StatusOr<Addresses> got =
      resolver.Resolve("api.example", "6443", absl::InfiniteFuture());
  ASSERT_TRUE(got.ok()) << got.status();
  ASSERT_EQ(got->size(), 1u);
  EXPECT_EQ(got->front().length, sizeof(sockaddr_in));
  EXPECT_EQ(resolver.Resolve("nowhere.example", "1", absl::InfiniteFuture())
                .status()
                .code(),
            absl::StatusCode::kUnavailable);
}

TEST(ResolverTest, AnIpAddressNeedsNoLookup) {
  std::atomic<int> calls{0};
  Resolver resolver([&calls](const std::string&,
                             const std::string&) -> absl::StatusOr<Addresses> {
    ++calls;
    return absl::UnavailableError("looked up");
  });
  for (const char* host : {"127.0.0.1", "::1"}) {
    absl::StatusOr<Addresses> got =
        resolver.Resolve(host, "443", absl::InfinitePast());
    ASSERT_TRUE(got.ok()) << host << ": " << got.status();
    EXPECT_EQ(got->size(), 1u) << host;
  }
  EXPECT_EQ(calls.load(), 0);
}

TEST(ResolverTest, SystemLookupResolvesLocalhost) {
  absl::StatusOr<Addresses> got = Resolver::System().Resolve(
      "localhost", "443", common::RealClock::Get().Now() + absl::Seconds(30));
  ASSERT_TRUE(got.ok()) << got.status();
  EXPECT_FALSE(got->empty());
}

}  // namespace
}  // namespace gpulet::kube
