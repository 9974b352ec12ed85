// The node's DRA ResourceSlices (src/dra/slices/) and the DRA manifests in
// deploy/dra/ against a real kube-apiserver of the pinned version, with its
// default feature gates: the server's validation is the judge of what is
// published (attribute names and types, capacities, counter sets, taints,
// size limits), the pool generation moves only when the devices change,
// `gpulet dra` itself keeps its node's slices published, and the
// DeviceClasses, RBAC and admission policy are accepted as written.
#include <chrono>
#include <cstdlib>
#include <filesystem>
#include <map>
#include <memory>
#include <set>
#include <string>
#include <thread>
#include <vector>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"
#include "absl/strings/str_split.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "src/base/common/clock.h"
#include "src/base/config/yaml_json.h"
#include "src/dra/kubelet/claim_allocation.h"
#include "src/dra/runner/claim_status_writer.h"
#include "src/dra/slices/publisher.h"
#include "src/dra/testing/sim_devices.h"
#include "src/dra/testing/test_claims.h"
#include "src/net/kube/client.h"
#include "test/integration/apiserver_host.h"

namespace gpulet::draslice {
namespace {

using Json = nlohmann::json;

class DraApiServerTest : public gpulet::testing::ApiServerSuite {
 protected:
  std::vector<Json> SlicesOf(const std::string& node) {
    absl::StatusOr<kube::ListResult> listed = admin_.client->List(
        kResourceSlicesPath,
        {.field_selector = NodeSlicesSelector(node, "gpu.nvidia.com")});
    EXPECT_TRUE(listed.ok()) << listed.status();
    return listed.ok() ? listed->items : std::vector<Json>{};
  }

  // Publishes `machine`'s devices as node `node` and checks that the server
  // holds them at one generation.
  void PublishMachine(const std::string& machine, const std::string& node,
                      SliceOptions options = {}) {
    absl::StatusOr<NodeDevices> devices = testing::SimNodeDevices(machine);
    ASSERT_TRUE(devices.ok()) << devices.status();
    options.node_name = node;
    Publisher publisher(*admin_.client, options);
    const absl::Status published = publisher.Publish(*devices);
    ASSERT_TRUE(published.ok()) << machine << ": " << published;
    absl::StatusOr<std::vector<Json>> wanted =
        BuildSlices(*devices, options, publisher.generation());
    ASSERT_TRUE(wanted.ok());
    std::vector<Json> stored = SlicesOf(node);
    ASSERT_EQ(stored.size(), wanted->size()) << machine;
    for (size_t i = 0; i < stored.size(); ++i) {
      // The server keeps exactly what was sent (no field dropped by a
      // disabled gate, quantities in the same spelling).
      EXPECT_EQ(ComparableSpec(stored[i]["spec"]),
                ComparableSpec((*wanted)[i]["spec"]))
          << machine << " slice " << i;
    }
  }
};

TEST_F(DraApiServerTest, SimulatedNodesArePublishedAsBuilt) {
  PublishMachine("dgx-h100", "dgx-h100");
  PublishMachine("islands-16", "islands-16");
  PublishMachine("a100-mig", "a100-mig");
  PublishMachine("a100-mig-single", "a100-mig-single");
  PublishMachine("gb200-nvl", "gb200-nvl");
  SliceOptions plain;
  plain.partitionable_mig = false;
  PublishMachine("a100-mig", "a100-mig-plain", plain);
}

TEST_F(DraApiServerTest, GenerationMovesOnlyWhenTheDevicesChange) {
  absl::StatusOr<NodeDevices> devices = testing::SimNodeDevices("dgx-h100");
  ASSERT_TRUE(devices.ok()) << devices.status();
  Publisher publisher(*admin_.client, {.node_name = "gen-node"});
  ASSERT_TRUE(publisher.Publish(*devices).ok());
  const std::vector<Json> first = SlicesOf("gen-node");
  ASSERT_EQ(first.size(), 1u);
  const int64_t g0 = first[0]["spec"]["pool"]["generation"];

  // Unchanged: nothing written, not even by a restarted publisher.
  ASSERT_TRUE(publisher.Publish(*devices).ok());
  Publisher restarted(*admin_.client, {.node_name = "gen-node"});
  ASSERT_TRUE(restarted.Publish(*devices).ok());
  EXPECT_EQ(SlicesOf("gen-node")[0]["metadata"]["resourceVersion"],
            first[0]["metadata"]["resourceVersion"]);

  // An Xid on GPU 3: the device leaves the pool at a new generation.
  NodeDevices sick = *devices;
  sick.unhealthy.insert("gpu-3");
  ASSERT_TRUE(restarted.Publish(sick).ok());
  std::vector<Json> after = SlicesOf("gen-node");
  ASSERT_EQ(after.size(), 1u);
  EXPECT_EQ(after[0]["spec"]["pool"]["generation"], g0 + 1);
  EXPECT_EQ(after[0]["spec"]["devices"].size(), 7u);

  // Tainted instead (DRADeviceTaints, on by default in 1.36).
  Publisher tainting(*admin_.client,
                     {.node_name = "gen-node", .taint_unhealthy = true});
  ASSERT_TRUE(tainting.Publish(sick).ok());
  after = SlicesOf("gen-node");
  EXPECT_EQ(after[0]["spec"]["pool"]["generation"], g0 + 2);
  ASSERT_EQ(after[0]["spec"]["devices"].size(), 8u);
  EXPECT_EQ(after[0]["spec"]["devices"][3]["taints"][0]["key"],
            kUnhealthyTaintKey);

  ASSERT_TRUE(tainting.DeleteAll().ok());
  EXPECT_TRUE(SlicesOf("gen-node").empty());
}

TEST_F(DraApiServerTest, LargePoolsAreSplitWithinTheServersLimits) {
  NodeDevices big;
  big.node.driver_version = "550.54.15";
  big.node.cuda_driver_version = 12040;
  for (unsigned i = 0; i < 300; ++i) {
    device::Gpu gpu;
    gpu.index = gpu.minor = i;
    gpu.uuid = absl::StrCat("GPU-", i);
    gpu.name = "NVIDIA H100 80GB HBM3";
    gpu.bus_id = absl::StrFormat("00000000:%02X:00.0", i % 256);
    gpu.memory_total_bytes = 80ull << 30;
    gpu.cc_major = 9;
    big.node.gpus.push_back(gpu);
  }
  big.unhealthy = {"gpu-5"};
  Publisher publisher(*admin_.client,
                      {.node_name = "big-node", .taint_unhealthy = true});
  const absl::Status published = publisher.Publish(big);
  ASSERT_TRUE(published.ok()) << published;
  EXPECT_EQ(SlicesOf("big-node").size(), 5u);  // 64 per slice with a taint
  ASSERT_TRUE(publisher.DeleteAll().ok());
}

// `gpulet dra` as a process on the simulated dgx-h100: its slices reach the
// API server owned by the Node, and a fatal Xid the simulator injects takes
// the GPU out of the pool at a new generation.
// `gpulet dra` on the simulated dgx-h100 as node `node` (created here),
// against the test's API server; its files in a temporary directory.
struct DraProcess {
  std::string dir;
  std::string node_uid;
  std::unique_ptr<gpulet::testing::LoggedProcess> gpulet;

  ~DraProcess() {
    gpulet.reset();
    std::error_code ignored;
    std::filesystem::remove_all(dir, ignored);
  }
  std::string log() const {
    absl::StatusOr<std::string> text = common::ReadFile(dir + "/gpulet.log");
    return text.ok() ? *text : std::string();
  }
  // Injects a fault through the simulator ("xid --gpu 1 --xid 79").
  void Sim(const std::string& args) const {
    // (The paths hold no characters the shell would interpret.)
    ASSERT_EQ(std::system(absl::StrCat(GPULET_BINARY, " sim --socket ", dir,
                                       "/sim.sock ", args)
                              .c_str()),
              0)
        << args;
  }
};

std::set<std::string> DeviceNamesOf(const Json& slice) {
  std::set<std::string> out;
  for (const Json& d : slice["spec"]["devices"]) out.insert(d["name"]);
  return out;
}

// "key=value:effect" per taint of device `name` ("" when untainted),
// "absent" when the slice does not hold the device.
std::string TaintsOf(const Json& slice, const std::string& name) {
  for (const Json& d : slice["spec"]["devices"]) {
    if (d["name"] != name) continue;
    std::string out;
    for (const Json& t : d.value("taints", Json::array())) {
      absl::StrAppend(&out, out.empty() ? "" : ",", t["key"].get<std::string>(),
                      t.contains("value") ? "=" + t["value"].get<std::string>()
                                          : std::string(),
                      ":", t["effect"].get<std::string>());
    }
    return out;
  }
  return "absent";
}

class GpuletDraTest : public DraApiServerTest {
 protected:
  // Starts gpulet dra with `args` added, `config` as its --config-file when
  // not empty.
  void Start(DraProcess& p, const std::string& node,
             std::vector<std::string> args, const std::string& config = "") {
    absl::StatusOr<Json> made = admin_.client->Create(
        "/api/v1/nodes", {{"apiVersion", "v1"},
                          {"kind", "Node"},
                          {"metadata", {{"name", node}}}});
    ASSERT_TRUE(made.ok()) << made.status();
    p.node_uid = (*made)["metadata"]["uid"];
    char tmpl[] = "/tmp/dra-pub-XXXXXX";
    ASSERT_NE(::mkdtemp(tmpl), nullptr);
    p.dir = tmpl;
    for (const char* sub : {"/reg", "/plug", "/cdi"}) {
      std::filesystem::create_directories(p.dir + sub);
    }
    const config::ApiServerConfig admin = host_->AdminConfig();
    const common::WriteOptions file{.mode = 0600, .durable = false};
    ASSERT_TRUE(
        common::WriteFileAtomic(p.dir + "/ca.crt", admin.ca_pem, file).ok());
    ASSERT_TRUE(
        common::WriteFileAtomic(
            p.dir + "/kubeconfig",
            absl::StrCat("apiVersion: v1\nkind: Config\ncurrent-context: t\n"
                         "clusters:\n- name: c\n  cluster:\n    server: ",
                         admin.server, "\n    certificate-authority: ca.crt\n",
                         "users:\n- name: u\n  user:\n    token: ", admin.token,
                         "\ncontexts:\n- name: t\n  context: {cluster: c, "
                         "user: u}\n"),
            file)
            .ok());
    if (!config.empty()) {
      ASSERT_TRUE(
          common::WriteFileAtomic(p.dir + "/config.yaml", config, file).ok());
      args.push_back("--config-file=" + p.dir + "/config.yaml");
    }
    std::vector<std::string> argv = {
        "/usr/bin/env",
        "GPULET_SIM_MACHINE=dgx-h100",
        "GPULET_SIM_SOCKET=" + p.dir + "/sim.sock",
        GPULET_BINARY,
        "--nvml-lib",
        std::string(GPULET_SIM_LIB_DIR) + "/libnvidia-ml.so.1",
        "dra",
        "--node-name",
        node,
        "--kubeconfig",
        p.dir + "/kubeconfig",
        "--registry-dir",
        p.dir + "/reg",
        "--plugin-dir",
        p.dir + "/plug",
        "--state-dir",
        p.dir + "/plug",
        "--cdi-dir",
        p.dir + "/cdi"};
    argv.insert(argv.end(), args.begin(), args.end());
    p.gpulet = std::make_unique<gpulet::testing::LoggedProcess>(
        argv, p.dir + "/gpulet.log");
  }

  // Polls the node's slices until `done` holds for the one slice; a guard
  // against a hang, not a timing assertion.
  template <typename Done>
  Json Await(const DraProcess& p, const std::string& node, Done done) {
    for (int i = 0; i < 1200; ++i) {
      if (!p.gpulet->Running()) break;
      std::vector<Json> slices = SlicesOf(node);
      if (slices.size() == 1 && done(slices[0])) return slices[0];
      std::this_thread::sleep_for(std::chrono::milliseconds(50));
    }
    ADD_FAILURE() << "gpulet dra log:\n" << p.log();
    return Json();
  }
};

TEST_F(GpuletDraTest, PublishesAndAnXidTakesTheGpuOut) {
  const std::string node = "dra-node";
  DraProcess p;
  Start(p, node, {});
  const Json first = Await(p, node, [](const Json& slice) {
    return DeviceNamesOf(slice).size() == 8;
  });
  ASSERT_FALSE(first.is_null());
  EXPECT_EQ(first["metadata"]["ownerReferences"][0]["uid"], p.node_uid);
  EXPECT_TRUE(DeviceNamesOf(first).contains("gpu-1"));
  const int64_t g0 = first["spec"]["pool"]["generation"];

  p.Sim("xid --gpu 1 --xid 79");
  const Json after = Await(p, node, [](const Json& slice) {
    return !DeviceNamesOf(slice).contains("gpu-1");
  });
  ASSERT_FALSE(after.is_null());
  EXPECT_GT(after["spec"]["pool"]["generation"].get<int64_t>(), g0);
  EXPECT_EQ(DeviceNamesOf(after).size(), 7u);

  // A stop leaves the slices for the scheduler (docs/dra.md).
  p.gpulet.reset();
  EXPECT_EQ(SlicesOf(node).size(), 1u);
}

// Taint mode from the config file: a lost GPU is tainted NoExecute while
// lost and untainted once back (after the file's quiet period); an Xid that
// needs a reset taints its GPU with the Xid; a reload back to drop mode
// (SIGHUP) takes that GPU out; every other device stays untainted.
TEST_F(GpuletDraTest, TaintModeTaintsALostGpuAndUntaintsItWhenBack) {
  const std::string node = "taint-node";
  DraProcess p;
  const std::string config =
      "version: v1\n"
      "health: {quietPeriod: 1s}\n"
      "dra:\n"
      "  unhealthyDevices: taint\n"
      "  taints: {unhealthy: NoSchedule}\n";
  Start(p, node, {"--lost-taint-effect=NoExecute"}, config);
  const Json first = Await(p, node, [](const Json& slice) {
    return DeviceNamesOf(slice).size() == 8;
  });
  ASSERT_FALSE(first.is_null());
  for (int i = 0; i < 8; ++i) {
    EXPECT_EQ(TaintsOf(first, absl::StrCat("gpu-", i)), "") << i;
  }

  p.Sim("lose --gpu 1");
  const Json lost = Await(p, node, [](const Json& slice) {
    return TaintsOf(slice, "gpu-1") != "";
  });
  ASSERT_FALSE(lost.is_null());
  EXPECT_EQ(TaintsOf(lost, "gpu-1"), "gpu.nvidia.com/unreachable:NoExecute");
  EXPECT_EQ(DeviceNamesOf(lost).size(), 8u);
  EXPECT_FALSE(lost["spec"]["devices"][1]["taints"][0]["timeAdded"].is_null());

  p.Sim("xid --gpu 2 --xid 48");
  const Json xid = Await(p, node, [](const Json& slice) {
    return TaintsOf(slice, "gpu-2") != "";
  });
  ASSERT_FALSE(xid.is_null());
  EXPECT_EQ(TaintsOf(xid, "gpu-2"), "gpu.nvidia.com/xid=48:NoSchedule");

  p.Sim("restore --gpu 1");
  const Json back = Await(p, node, [](const Json& slice) {
    return TaintsOf(slice, "gpu-1") == "";
  });
  ASSERT_FALSE(back.is_null());
  EXPECT_EQ(TaintsOf(back, "gpu-2"), "gpu.nvidia.com/xid=48:NoSchedule");
  for (int i : {0, 3, 4, 5, 6, 7}) {
    EXPECT_EQ(TaintsOf(back, absl::StrCat("gpu-", i)), "") << i;
  }

  ASSERT_TRUE(common::WriteFileAtomic(p.dir + "/config.yaml",
                                      "dra: {unhealthyDevices: drop}\n",
                                      {.mode = 0600, .durable = false})
                  .ok());
  p.gpulet->Signal(SIGHUP);
  const Json dropped = Await(p, node, [](const Json& slice) {
    return TaintsOf(slice, "gpu-2") == "absent";
  });
  ASSERT_FALSE(dropped.is_null());
  EXPECT_EQ(DeviceNamesOf(dropped).size(), 7u);
  EXPECT_EQ(TaintsOf(dropped, "gpu-1"), "");
}

// Memory shares (DRAConsumableCapacity, beta and on in 1.36): the server
// keeps the shareable GPUs as published, takes a claim asking for a memory
// amount, and an allocation of a share of gpu-0 as the scheduler writes it
// (shareID, consumedCapacity), which gpulet dra reads back as a 4 GiB share.
TEST_F(DraApiServerTest, MemorySharesAreAcceptedAndReadBack) {
  SliceOptions options;
  options.memory_share_step = uint64_t{1} << 30;
  PublishMachine("dgx-h100", "share-node", options);
  const Json gpu = SlicesOf("share-node")[0]["spec"]["devices"][0];
  EXPECT_EQ(gpu["allowMultipleAllocations"], true);
  EXPECT_EQ(gpu["capacity"]["memory"]["requestPolicy"]["validRange"]["step"],
            "1Gi");

  const std::string claims =
      "/apis/resource.k8s.io/v1/namespaces/default/resourceclaims";
  absl::StatusOr<Json> made = admin_.client->Create(claims, Json::parse(R"json({
    "apiVersion": "resource.k8s.io/v1", "kind": "ResourceClaim",
    "metadata": {"name": "gpu-memory-4gi"},
    "spec": {"devices": {"requests": [{"name": "share", "exactly": {
      "deviceClassName": "gpu.nvidia.com",
      "capacity": {"requests": {"memory": "4Gi"}}}}]}}})json"));
  ASSERT_TRUE(made.ok()) << made.status();
  EXPECT_EQ((*made)["spec"]["devices"]["requests"][0]["exactly"]["capacity"],
            Json::parse(R"({"requests": {"memory": "4Gi"}})"));

  const std::string share = "5f3b7f3e-8c2a-4d43-9a51-0c6f2d1e7a10";
  Json claim = *made;
  claim["status"] = {
      {"allocation",
       {{"devices",
         {{"results",
           Json::array({{{"request", "share"},
                         {"driver", "gpu.nvidia.com"},
                         {"pool", "share-node"},
                         {"device", "gpu-0"},
                         {"shareID", share},
                         {"consumedCapacity", {{"memory", "4Gi"}}}}})}}},
        {"nodeSelector",
         {{"nodeSelectorTerms",
           Json::array({{{"matchFields",
                          Json::array({{{"key", "metadata.name"},
                                        {"operator", "In"},
                                        {"values", {"share-node"}}}})}}})}}}}}};
  absl::StatusOr<Json> allocated =
      admin_.client->Replace(claims + "/gpu-memory-4gi/status", claim);
  ASSERT_TRUE(allocated.ok()) << allocated.status();
  const dra::ClaimRef ref{.namespace_name = "default",
                          .name = "gpu-memory-4gi",
                          .uid = (*made)["metadata"]["uid"]};
  absl::StatusOr<dra::ClaimAllocation> read =
      dra::ReadAllocation(*allocated, ref, "gpu.nvidia.com", "share-node");
  ASSERT_TRUE(read.ok()) << read.status();
  ASSERT_EQ(read->devices.size(), 1u);
  EXPECT_EQ(read->devices[0].device, "gpu-0");
  EXPECT_EQ(read->devices[0].share_id, share);
  EXPECT_EQ(read->devices[0].consumed_memory, int64_t{4} << 30);

  // A share ID that is not a UUID is refused by the server.
  claim = *allocated;
  claim["status"]["allocation"]["devices"]["results"][0]["shareID"] = "s1";
  EXPECT_FALSE(
      admin_.client->Replace(claims + "/gpu-memory-4gi/status", claim).ok());
}

// status.devices (KEP-4817) as gpulet dra writes it: the server takes the
// entries (they match the allocation results), keeps another driver's
// entry, takes ours away again on unprepare, and a deleted claim is
// forgotten.
TEST_F(DraApiServerTest, ClaimStatusDevicesAreWrittenAndRemoved) {
  const std::string claims =
      "/apis/resource.k8s.io/v1/namespaces/default/resourceclaims";
  absl::StatusOr<Json> made = admin_.client->Create(claims, Json::parse(R"json({
    "apiVersion": "resource.k8s.io/v1", "kind": "ResourceClaim",
    "metadata": {"name": "status-claim"},
    "spec": {"devices": {"requests": [
      {"name": "gpu", "exactly": {"deviceClassName": "gpu.nvidia.com"}},
      {"name": "mig", "exactly": {"deviceClassName": "mig.nvidia.com"}}]}}})json"));
  ASSERT_TRUE(made.ok()) << made.status();
  Json claim = *made;
  auto result = [](const std::string& request, const std::string& driver,
                   const std::string& device) {
    return Json{{"request", request},
                {"driver", driver},
                {"pool", "status-node"},
                {"device", device}};
  };
  claim["status"] = {
      {"allocation",
       {{"devices",
         {{"results",
           Json::array({result("gpu", "gpu.nvidia.com", "gpu-0"),
                        result("mig", "gpu.nvidia.com", "gpu-1-mig-19-6-1"),
                        result("gpu", "net.example.com", "nic-0")})}}},
        {"nodeSelector",
         {{"nodeSelectorTerms",
           Json::array({{{"matchFields",
                          Json::array({{{"key", "metadata.name"},
                                        {"operator", "In"},
                                        {"values", {"status-node"}}}})}}})}}}}},
      {"devices", Json::array({{{"driver", "net.example.com"},
                                {"pool", "status-node"},
                                {"device", "nic-0"},
                                {"data", {{"mac", "02:00:00:00:00:01"}}}}})}};
  absl::StatusOr<Json> allocated =
      admin_.client->Replace(claims + "/status-claim/status", claim);
  ASSERT_TRUE(allocated.ok()) << allocated.status();
  const dra::ClaimRef ref{.namespace_name = "default",
                          .name = "status-claim",
                          .uid = (*made)["metadata"]["uid"]};

  device::Node node = dra::testing_claims::TestNode();
  node.gpus[1].mig_devices[0].profile = "1g.10gb";
  dra::PreparedDevice gpu;
  gpu.pool = "status-node";
  gpu.device = "gpu-0";
  gpu.uuid = "GPU-0000";
  dra::PreparedDevice mig = gpu;
  mig.device = "gpu-1-mig-19-6-1";
  mig.uuid = "MIG-aaaa";
  daemon::ClaimStatusWriter writer(*admin_.client, "gpu.nvidia.com",
                                   "status-node", node, nullptr);
  // Polls the claim until `done` holds; a guard against a hang.
  auto await = [&](auto done) -> Json {
    for (int i = 0; i < 1200; ++i) {
      absl::StatusOr<Json> got = admin_.client->Get(claims + "/status-claim");
      if (got.ok() && done(*got) && writer.Pending() == 0) return *got;
      std::this_thread::sleep_for(std::chrono::milliseconds(50));
    }
    ADD_FAILURE() << "status.devices never as wanted";
    return Json();
  };
  writer.Set(ref, {gpu, mig});
  Json written = await([](const Json& c) {
    return c["status"].value("devices", Json::array()).size() == 3;
  });
  ASSERT_FALSE(written.is_null());
  std::map<std::string, Json> by_device;
  for (const Json& d : written["status"]["devices"]) {
    by_device[d["device"].get<std::string>()] = d;
  }
  EXPECT_EQ(by_device["nic-0"]["data"]["mac"], "02:00:00:00:00:01");
  EXPECT_EQ(by_device["gpu-0"]["data"], Json({{"uuid", "GPU-0000"}}));
  EXPECT_EQ(by_device["gpu-1-mig-19-6-1"]["data"],
            Json::parse(R"({"uuid": "MIG-aaaa", "parentUUID": "GPU-1111",
                            "profile": "1g.10gb",
                            "placement": {"start": 6, "size": 1}})"));

  // Unprepared: our entries go, the other driver's stays.
  writer.Set(ref, {});
  Json removed = await([](const Json& c) {
    return c["status"].value("devices", Json::array()).size() == 1;
  });
  ASSERT_FALSE(removed.is_null());
  EXPECT_EQ(removed["status"]["devices"][0]["device"], "nic-0");

  // A claim deleted before its write is forgotten.
  ASSERT_TRUE(admin_.client->Delete(claims + "/status-claim").ok());
  writer.Set(ref, {gpu});
  for (int i = 0; i < 1200 && writer.Pending() != 0; ++i) {
    std::this_thread::sleep_for(std::chrono::milliseconds(50));
  }
  EXPECT_EQ(writer.Pending(), 0u);
}

// deploy/dra/*.yaml, every document created as written.
TEST_F(DraApiServerTest, DeployManifestsAreAccepted) {
  const std::map<std::string, std::string> paths = {
      {"ClusterRole", "/apis/rbac.authorization.k8s.io/v1/clusterroles"},
      {"ClusterRoleBinding",
       "/apis/rbac.authorization.k8s.io/v1/clusterrolebindings"},
      {"DaemonSet", "/apis/apps/v1/namespaces/kube-system/daemonsets"},
      {"DeviceClass", "/apis/resource.k8s.io/v1/deviceclasses"},
      {"ServiceAccount", "/api/v1/namespaces/kube-system/serviceaccounts"},
      {"ValidatingAdmissionPolicy",
       "/apis/admissionregistration.k8s.io/v1/validatingadmissionpolicies"},
      {"ValidatingAdmissionPolicyBinding",
       "/apis/admissionregistration.k8s.io/v1/"
       "validatingadmissionpolicybindings"},
      {"Deployment", "/apis/apps/v1/namespaces/kube-system/deployments"},
      {"Service", "/api/v1/namespaces/kube-system/services"},
      // Checked without being stored (dryRun): stored, it would have the
      // API server call a Service address, off the loopback, for the
      // suite's later claims (WebhookRefusesABadClaimAtCreation points
      // it at 127.0.0.1 instead).
      {"ValidatingWebhookConfiguration",
       "/apis/admissionregistration.k8s.io/v1/"
       "validatingwebhookconfigurations?dryRun=All"},
  };
  std::set<std::string> created;
  for (const auto& entry : std::filesystem::directory_iterator(
           std::string(GPULET_SOURCE_DIR) + "/deploy/dra")) {
    if (entry.path().extension() != ".yaml") continue;
    absl::StatusOr<std::string> text = common::ReadFile(entry.path());
    ASSERT_TRUE(text.ok()) << text.status();
    for (absl::string_view doc : absl::StrSplit(*text, "\n---\n")) {
      absl::StatusOr<nlohmann::ordered_json> object =
          config::YamlToJson(doc, entry.path().string());
      ASSERT_TRUE(object.ok()) << entry.path() << ": " << object.status();
      if (!object->is_object() || !object->contains("kind")) continue;
      const std::string kind = (*object)["kind"];
      ASSERT_TRUE(paths.contains(kind)) << entry.path() << ": " << kind;
      absl::StatusOr<Json> made =
          admin_.client->Create(paths.at(kind), Json::parse(object->dump()));
      EXPECT_TRUE(made.ok()) << entry.path() << ": " << made.status();
      const std::string name = (*object)["metadata"]["name"];
      created.insert(name);
      created.insert(absl::StrCat(kind, "/", name));
    }
  }
  EXPECT_TRUE(created.contains("gpu.nvidia.com"));
  EXPECT_TRUE(created.contains("mig.nvidia.com"));
  EXPECT_TRUE(created.contains("gpulet-own-resourceslices"));
  EXPECT_TRUE(created.contains("gpulet-own-claim-device-status"));
  EXPECT_TRUE(created.contains("DaemonSet/gpulet-dra"));
  EXPECT_TRUE(created.contains("Deployment/gpulet-dra-webhook"));
  EXPECT_TRUE(created.contains(
      "ValidatingWebhookConfiguration/gpulet-dra-claim-configs"));
}

// The claims docs/dra.md shows: the server compiles their CEL against the
// attribute types and checks the constraint's attribute name.
TEST_F(DraApiServerTest, DocumentedClaimsAreAccepted) {
  const Json claim = Json::parse(R"json({
    "apiVersion": "resource.k8s.io/v1", "kind": "ResourceClaimTemplate",
    "metadata": {"name": "two-linked-big-gpus"},
    "spec": {"spec": {"devices": {
      "requests": [{"name": "gpus", "exactly": {
        "deviceClassName": "gpu.nvidia.com", "count": 2,
        "selectors": [{"cel": {"expression":
          "device.capacity['gpu.nvidia.com'].memory.compareTo(quantity('40Gi')) >= 0 && device.attributes['gpu.nvidia.com'].cudaComputeCapability.compareTo(semver('9.0.0')) >= 0"}}]}}],
      "constraints": [{"requests": ["gpus"],
                       "matchAttribute": "gpu.nvidia.com/nvlinkDomain"}]}}}})json");
  absl::StatusOr<Json> made = admin_.client->Create(
      "/apis/resource.k8s.io/v1/namespaces/default/resourceclaimtemplates",
      claim);
  EXPECT_TRUE(made.ok()) << made.status();

  const Json share = Json::parse(R"json({
    "apiVersion": "resource.k8s.io/v1", "kind": "ResourceClaimTemplate",
    "metadata": {"name": "gpu-memory-4gi-mps"},
    "spec": {"spec": {"devices": {
      "requests": [{"name": "share", "exactly": {
        "deviceClassName": "gpu.nvidia.com",
        "capacity": {"requests": {"memory": "4Gi"}}}}],
      "config": [{"requests": ["share"], "opaque": {
        "driver": "gpu.nvidia.com",
        "parameters": {"apiVersion": "resource.nvidia.com/v1beta1",
                       "kind": "GpuConfig",
                       "sharing": {"strategy": "MPS", "mpsConfig": {
                         "defaultActiveThreadPercentage": 25}}}}}]}}}})json");
  made = admin_.client->Create(
      "/apis/resource.k8s.io/v1/namespaces/default/resourceclaimtemplates",
      share);
  EXPECT_TRUE(made.ok()) << made.status();
}

}  // namespace
}  // namespace gpulet::draslice
