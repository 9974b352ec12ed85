// DraServer over real unix sockets, called through the generated gRPC
// clients as the kubelet calls it.
#include "src/dra/kubelet/dra_server.h"

#include <grpcpp/client_context.h>
#include <grpcpp/create_channel.h>
#include <grpcpp/security/credentials.h>
#include <stdlib.h>
#include <sys/stat.h>

#include <chrono>
#include <filesystem>
#include <memory>
#include <string>
#include <thread>

#include "dra/v1/api.grpc.pb.h"
#include "dra/v1beta1/api.grpc.pb.h"
#include "drahealth/v1alpha1/api.grpc.pb.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "pluginregistration/v1/api.grpc.pb.h"
#include "src/dra/testing/test_claims.h"

namespace gpulet::dra {
namespace {

using ::testing::ElementsAre;
using ::testing::HasSubstr;
using testing_claims::FakeApi;
using testing_claims::kPool;
using testing_claims::Ref;
namespace v1 = ::k8s::io::kubelet::pkg::apis::dra::v1;
namespace v1beta1 = ::k8s::io::kubelet::pkg::apis::dra::v1beta1;

class DraServerTest : public ::testing::Test {
 protected:
  void SetUp() override {
    char tmpl[] = "/tmp/dra-srv-XXXXXX";
    ASSERT_NE(mkdtemp(tmpl), nullptr);
    dir_ = tmpl;
    std::filesystem::create_directories(dir_ + "/registry");
    std::filesystem::create_directories(dir_ + "/plugin");
    PreparerOptions o;
    o.driver = "gpu.nvidia.com";
    o.pool = kPool;
    o.checkpoint_path = dir_ + "/checkpoint.json";
    o.cdi_dir = dir_ + "/cdi";
    auto p = ClaimPreparer::Create(o, api_.Getter());
    ASSERT_TRUE(p.ok()) << p.status();
    preparer_ = *std::move(p);
    preparer_->SetNode(testing_claims::TestNode(), testing_claims::TestSpec());
    DraServerOptions so;
    so.driver = "gpu.nvidia.com";
    so.pool = kPool;
    so.registry_dir = dir_ + "/registry";
    so.plugin_dir = dir_ + "/plugin";
    so.on_registration = [this](bool ok, const std::string& error) {
      absl::MutexLock lock(&mu_);
      verdicts_.push_back(ok ? "ok" : error);
    };
    server_ = std::make_unique<DraServer>(so, *preparer_, board_);
    ASSERT_TRUE(server_->Start().ok());
  }
  void TearDown() override {
    server_.reset();
    std::filesystem::remove_all(dir_);
  }
  std::shared_ptr<grpc::Channel> Dial(const std::string& path) {
    return grpc::CreateChannel("unix:" + path,
                               grpc::InsecureChannelCredentials());
  }

  std::string dir_;
  FakeApi api_;
  std::unique_ptr<ClaimPreparer> preparer_;
  DeviceHealthBoard board_;
  std::unique_ptr<DraServer> server_;
  absl::Mutex mu_;
  std::vector<std::string> verdicts_ ABSL_GUARDED_BY(mu_);
};

TEST_F(DraServerTest, RegistrationSaysWhereAndWhatItServes) {
  EXPECT_EQ(server_->registration_socket(),
            dir_ + "/registry/gpu.nvidia.com-reg.sock");
  EXPECT_EQ(server_->dra_socket(), dir_ + "/plugin/dra.sock");
  struct stat st;
  ASSERT_EQ(stat(server_->dra_socket().c_str(), &st), 0);
  EXPECT_EQ(st.st_mode & 0777, 0600u);
  auto stub = ::pluginregistration::Registration::NewStub(
      Dial(server_->registration_socket()));
  grpc::ClientContext ctx;
  ::pluginregistration::PluginInfo info;
  ASSERT_TRUE(stub->GetInfo(&ctx, {}, &info).ok());
  EXPECT_EQ(info.type(), "DRAPlugin");
  EXPECT_EQ(info.name(), "gpu.nvidia.com");
  EXPECT_EQ(info.endpoint(), server_->dra_socket());
  EXPECT_THAT(info.supported_versions(),
              ElementsAre("v1.DRAPlugin", "v1beta1.DRAPlugin"));
  grpc::ClientContext ctx2;
  ::pluginregistration::RegistrationStatus status;
  status.set_plugin_registered(false);
  status.set_error("nope");
  ::pluginregistration::RegistrationStatusResponse resp;
  ASSERT_TRUE(stub->NotifyRegistrationStatus(&ctx2, status, &resp).ok());
  absl::MutexLock lock(&mu_);
  EXPECT_THAT(verdicts_, ElementsAre("nope"));
}

TEST_F(DraServerTest, V1PreparesAndUnprepares) {
  api_.Add(Ref("a"), {"gpu-0"});
  auto stub = v1::DRAPlugin::NewStub(Dial(server_->dra_socket()));
  v1::NodePrepareResourcesRequest req;
  auto* c = req.add_claims();
  c->set_namespace_("ns");
  c->set_name("a");
  c->set_uid("uid-a");
  auto* bad = req.add_claims();
  bad->set_namespace_("ns");
  bad->set_name("missing");
  bad->set_uid("uid-missing");
  v1::NodePrepareResourcesResponse resp;
  grpc::ClientContext ctx;
  ASSERT_TRUE(stub->NodePrepareResources(&ctx, req, &resp).ok());
  ASSERT_EQ(resp.claims().size(), 2u);
  const auto& a = resp.claims().at("uid-a");
  EXPECT_EQ(a.error(), "");
  ASSERT_EQ(a.devices_size(), 1);
  EXPECT_EQ(a.devices(0).device_name(), "gpu-0");
  EXPECT_EQ(a.devices(0).pool_name(), kPool);
  EXPECT_THAT(a.devices(0).request_names(), ElementsAre("req"));
  EXPECT_THAT(a.devices(0).cdi_device_ids(),
              ElementsAre("k8s.gpu.nvidia.com/claim=uid-a-gpu-0"));
  EXPECT_FALSE(a.devices(0).has_share_id());
  EXPECT_THAT(resp.claims().at("uid-missing").error(), HasSubstr("not found"));

  v1::NodeUnprepareResourcesRequest ureq;
  *ureq.add_claims() = *c;
  v1::NodeUnprepareResourcesResponse uresp;
  grpc::ClientContext uctx;
  ASSERT_TRUE(stub->NodeUnprepareResources(&uctx, ureq, &uresp).ok());
  EXPECT_EQ(uresp.claims().at("uid-a").error(), "");
  EXPECT_TRUE(preparer_->Prepared().empty());
}

TEST_F(DraServerTest, V1beta1AnswersTheSame) {
  api_.Add(Ref("b"), {"gpu-1-mig-9-0-4"});
  auto stub = v1beta1::DRAPlugin::NewStub(Dial(server_->dra_socket()));
  v1beta1::NodePrepareResourcesRequest req;
  auto* c = req.add_claims();
  c->set_namespace_("ns");
  c->set_name("b");
  c->set_uid("uid-b");
  v1beta1::NodePrepareResourcesResponse resp;
  grpc::ClientContext ctx;
  ASSERT_TRUE(stub->NodePrepareResources(&ctx, req, &resp).ok());
  ASSERT_EQ(resp.claims().at("uid-b").devices_size(), 1);
  EXPECT_EQ(resp.claims().at("uid-b").devices(0).device_name(),
            "gpu-1-mig-9-0-4");
}

TEST_F(DraServerTest, HealthStreamsEverythingThenChanges) {
  board_.Set({{.device = "gpu-0",
               .healthy = true,
               .message = "",
               .updated_unix = 1,
               .fault = {}}});
  auto stub =
      ::v1alpha1::DRAResourceHealth::NewStub(Dial(server_->dra_socket()));
  grpc::ClientContext ctx;
  auto reader = stub->NodeWatchResources(&ctx, {});
  ::v1alpha1::NodeWatchResourcesResponse msg;
  ASSERT_TRUE(reader->Read(&msg));
  ASSERT_EQ(msg.devices_size(), 1);
  EXPECT_EQ(msg.devices(0).device().device_name(), "gpu-0");
  EXPECT_EQ(msg.devices(0).device().pool_name(), kPool);
  EXPECT_EQ(msg.devices(0).health(), ::v1alpha1::HEALTHY);
  board_.Set({{.device = "gpu-0",
               .healthy = false,
               .message = "Xid 79",
               .updated_unix = 2,
               .fault = {}}});
  ASSERT_TRUE(reader->Read(&msg));
  ASSERT_EQ(msg.devices_size(), 1);
  EXPECT_EQ(msg.devices(0).health(), ::v1alpha1::UNHEALTHY);
  EXPECT_EQ(msg.devices(0).message(), "Xid 79");
  ctx.TryCancel();
  while (reader->Read(&msg)) {
  }
}

// The API server holds the read of claim ns/held: that prepare ends with
// DEADLINE_EXCEEDED naming the claim before the kubelet's deadline, while
// the health stream and another prepare on the same socket go on.
TEST_F(DraServerTest, AClaimReadThatHangsHoldsUpNothingAndEndsInTime) {
  api_.hung.insert("ns/held");
  api_.Add(Ref("other"), {"gpu-0"});
  board_.Set({{.device = "gpu-0",
               .healthy = true,
               .message = "",
               .updated_unix = 1,
               .fault = {}}});
  auto channel = Dial(server_->dra_socket());
  auto stub = v1::DRAPlugin::NewStub(channel);
  grpc::Status held;
  std::jthread held_call([&] {
    v1::NodePrepareResourcesRequest req;
    auto* c = req.add_claims();
    c->set_namespace_("ns");
    c->set_name("held");
    c->set_uid("uid-held");
    v1::NodePrepareResourcesResponse resp;
    grpc::ClientContext ctx;
    ctx.set_deadline(std::chrono::system_clock::now() +
                     std::chrono::seconds(4));
    held = stub->NodePrepareResources(&ctx, req, &resp);
  });
  ASSERT_TRUE(api_.WaitHeld(1));

  auto health = ::v1alpha1::DRAResourceHealth::NewStub(channel);
  grpc::ClientContext watch;
  auto reader = health->NodeWatchResources(&watch, {});
  ::v1alpha1::NodeWatchResourcesResponse msg;
  ASSERT_TRUE(reader->Read(&msg));
  board_.Set({{.device = "gpu-0",
               .healthy = false,
               .message = "Xid 79",
               .updated_unix = 2,
               .fault = {}}});
  ASSERT_TRUE(reader->Read(&msg));
  EXPECT_EQ(msg.devices(0).health(), ::v1alpha1::UNHEALTHY);

  v1::NodePrepareResourcesRequest req;
  auto* c = req.add_claims();
  c->set_namespace_("ns");
  c->set_name("other");
  c->set_uid("uid-other");
  v1::NodePrepareResourcesResponse resp;
  grpc::ClientContext ctx;
  ASSERT_TRUE(stub->NodePrepareResources(&ctx, req, &resp).ok());
  EXPECT_EQ(resp.claims().at("uid-other").error(), "");

  held_call.join();
  EXPECT_EQ(held.error_code(), grpc::StatusCode::DEADLINE_EXCEEDED);
  // The server's own answer, not the client's timeout.
  EXPECT_THAT(held.error_message(),
              HasSubstr("claim ns/held (node " + std::string(kPool) +
                        "): the ResourceClaim was not read"));
  EXPECT_FALSE(preparer_->Prepared().contains("uid-held"));
  watch.TryCancel();
  while (reader->Read(&msg)) {
  }
}

TEST_F(DraServerTest, StopRemovesBothSocketsAndStartsAgain) {
  server_->Stop();
  EXPECT_FALSE(std::filesystem::exists(server_->dra_socket()));
  EXPECT_FALSE(std::filesystem::exists(server_->registration_socket()));
  ASSERT_TRUE(server_->Start().ok());
  EXPECT_TRUE(server_->running());
  EXPECT_EQ(server_->Start().code(), absl::StatusCode::kFailedPrecondition);
}

}  // namespace
}  // namespace gpulet::dra
