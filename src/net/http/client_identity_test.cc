#include "src/net/http/client_identity.h"

#include "gtest/gtest.h"

namespace gpulet::http {
namespace {

TEST(ClientAllowed, ByCommonNameOrDnsName) {
  ClientIdentity scheduler{.verified = true,
                           .common_name = "system:kube-scheduler",
                           .dns_names = {"Scheduler.Example.com"}};
  EXPECT_TRUE(ClientAllowed(scheduler, {}));
  EXPECT_TRUE(ClientAllowed(scheduler, {"system:kube-scheduler"}));
  EXPECT_TRUE(ClientAllowed(scheduler, {"other", "scheduler.example.com"}));
  EXPECT_FALSE(ClientAllowed(scheduler, {"System:Kube-Scheduler"}));
  EXPECT_FALSE(ClientAllowed(scheduler, {"example.com"}));
  ClientIdentity unverified = scheduler;
  unverified.verified = false;
  EXPECT_FALSE(ClientAllowed(unverified, {}));
  EXPECT_FALSE(ClientAllowed(unverified, {"system:kube-scheduler"}));
  // An empty common name matches nothing, not even an empty entry.
  ClientIdentity nameless{.verified = true};
  EXPECT_FALSE(ClientAllowed(nameless, {""}));
  EXPECT_EQ(scheduler.Describe(),
            "CN=system:kube-scheduler, DNS=Scheduler.Example.com");
}

}  // namespace
}  // namespace gpulet::http
