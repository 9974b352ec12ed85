// The fixture of the MemoryPublisher tests (memory_publisher_test.cc,
// memory_publisher_placement_test.cc): a publisher of node n1 against a
// scripted API server (kube's FakeTransport) and a fake kubelet serving
// PodResources on a unix socket, where ns/p holds two units of GPU-a and
// the node has 8 units on each of GPU-a and GPU-b; and the Node objects
// and annotations the tests script.
//
// Not thread-safe; one test at a time.
#pragma once

#include <cstdint>
#include <memory>
#include <string>
#include <tuple>
#include <vector>

#include "absl/time/time.h"
#include "gtest/gtest.h"
#include "nlohmann/json.hpp"
#include "src/base/common/clock.h"
#include "src/base/metrics/registry.h"
#include "src/model/sharing/annotations.h"
#include "src/net/kube/client.h"
#include "src/net/podresources/client.h"
#include "src/net/testing/fake_kubelet.h"
#include "src/net/testing/fake_transport.h"
#include "src/plugin/memshares/memory_publisher.h"

namespace gpulet::nodeagent {

// The time of every test: the fake clock's and the annotations'.
inline const absl::Time kNow = absl::FromUnixSeconds(1795496400);
inline const std::vector<std::string> kB0To3 = {"GPU-b::m0", "GPU-b::m1",
                                                "GPU-b::m2", "GPU-b::m3"};

inline std::string NodeJson(const std::string& resource_version,
                            const std::string& pending) {
  nlohmann::json node = {
      {"kind", "Node"},
      {"metadata", {{"name", "n1"}, {"resourceVersion", resource_version}}}};
  if (!pending.empty()) {
    node["metadata"]["annotations"][std::string(sharing::kPendingAnnotation)] =
        pending;
  }
  return node.dump();
}

inline std::string PendingJson(
    const std::vector<std::tuple<std::string, std::string, int64_t>>& pods) {
  sharing::Pending p;
  for (const auto& [uid, name, units] : pods) {
    p.pods.push_back({.uid = uid,
                      .ns = "ns",
                      .name = name,
                      .time = kNow - absl::Seconds(10),
                      .containers = {{"c", units}}});
  }
  return sharing::EncodePending(p);
}

class PublisherTest : public ::testing::Test {
 protected:
  PublisherTest()
      : api_(transport_, clock_,
             {.qps = 1000, .burst = 1000, .max_attempts = 1}),
        kubelet_client_(fake_kubelet_.socket_path()) {}

  void SetUp() override {
    ASSERT_FALSE(fake_kubelet_.socket_path().empty());
    // ns/p holds two units of GPU-a; the node has 8 on each of two GPUs.
    v1::ListPodResourcesResponse list;
    v1::PodResources* pod = list.add_pod_resources();
    pod->set_namespace_("ns");
    pod->set_name("p");
    v1::ContainerResources* c = pod->add_containers();
    c->set_name("c");
    v1::ContainerDevices* d = c->add_devices();
    d->set_resource_name("nvidia.com/gpu-memory");
    d->add_device_ids("GPU-a::m0");
    d->add_device_ids("GPU-a::m1");
    v1::ContainerDevices* other = c->add_devices();
    other->set_resource_name("nvidia.com/gpu");
    other->add_device_ids("GPU-z");
    v1::AllocatableResourcesResponse allocatable;
    v1::ContainerDevices* a = allocatable.add_devices();
    a->set_resource_name("nvidia.com/gpu-memory");
    for (const char* gpu : {"GPU-a", "GPU-b"}) {
      for (int k = 0; k < 8; ++k) {
        a->add_device_ids(std::string(gpu) + "::m" + std::to_string(k));
      }
    }
    fake_kubelet_.Set(list, allocatable);
    PublisherOptions options;
    options.node_name = "n1";
    options.clock = &wall_;
    options.kubelet_grace = absl::ZeroDuration();
    auto metrics = PublisherMetrics::Register(registry_);
    ASSERT_TRUE(metrics.ok()) << metrics.status();
    publisher_ = std::make_unique<MemoryPublisher>(api_, kubelet_client_,
                                                   options, *metrics);
    publisher_->SetGpus({{.uuid = "GPU-a", .index = 0, .units = 99},
                         {.uuid = "GPU-b", .index = 1, .units = 99}});
  }

  // The body of the n-th request, parsed.
  nlohmann::json Body(size_t n) const {
    return nlohmann::json::parse(transport_.requests().at(n).body);
  }
  std::vector<std::string> Calls() const {
    std::vector<std::string> out;
    for (const kube::Request& r : transport_.requests()) {
      out.push_back(r.method + " " + r.path);
    }
    return out;
  }

  common::FakeClock clock_;
  kube::FakeTransport transport_;
  kube::Client api_;
  podresources::FakeKubelet fake_kubelet_;
  podresources::Client kubelet_client_;
  metrics::Registry registry_;
  common::FakeClock wall_{kNow};  // the annotations' time
  std::unique_ptr<MemoryPublisher> publisher_;
};

// The node annotation a patch body writes.
inline sharing::NodeMemory Written(const nlohmann::json& patch) {
  auto node = sharing::ParseNodeMemory(
      patch["metadata"]["annotations"][std::string(sharing::kNodeAnnotation)]
          .get<std::string>());
  EXPECT_TRUE(node.ok()) << node.status();
  return node.ok() ? *node : sharing::NodeMemory{};
}

// A Node whose gpulet.dev/gpu-memory has GPU-a (8 units, 2 used by ns/p)
// and GPU-b (8 units, none used), and `pending` as pending annotation.
inline std::string NodeWithMemory(const std::string& resource_version,
                                  const std::string& pending) {
  sharing::NodeMemory memory{
      .resource = "nvidia.com/gpu-memory",
      .observed = kNow,
      .gpus = {{.uuid = "GPU-a", .index = 0, .units = 8, .used = 2},
               {.uuid = "GPU-b", .index = 1, .units = 8}},
      .pods = {{.ns = "ns", .name = "p", .containers = {{"c", "GPU-a", 2}}}}};
  nlohmann::json node =
      nlohmann::json::parse(NodeJson(resource_version, pending));
  node["metadata"]["annotations"][std::string(sharing::kNodeAnnotation)] =
      sharing::EncodeNodeMemory(memory);
  return node.dump();
}

}  // namespace gpulet::nodeagent
