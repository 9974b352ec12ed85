#include "src/plugin/server/list_encoding.h"

#include <gtest/gtest.h>

#include <cstdint>
#include <string>
#include <utility>
#include <vector>

#include "absl/strings/str_cat.h"
#include "src/plugin/server/request_handlers.h"

namespace gpulet::plugin {
namespace {

using pluginapi::Device;
using pluginapi::DeviceSnapshot;

DeviceSnapshot Snapshot(std::vector<Device> devices) {
  DeviceSnapshot s;
  s.version = 1;
  s.devices = std::move(devices);
  return s;
}

Device D(std::string id, bool healthy, std::vector<int64_t> numa_nodes) {
  Device d;
  d.id = std::move(id);
  d.healthy = healthy;
  d.numa_nodes = std::move(numa_nodes);
  return d;
}

// The reference: the message built field by field, serialized by protobuf.
void ExpectSameBytes(const DeviceSnapshot& s) {
  const std::string want = ToListAndWatchResponse(s).SerializeAsString();
  EXPECT_EQ(EncodeListAndWatch(s), want);
  v1beta1::ListAndWatchResponse parsed;
  ASSERT_TRUE(parsed.ParseFromString(EncodeListAndWatch(s)));
  EXPECT_EQ(parsed.devices_size(), static_cast<int>(s.devices.size()));
}

TEST(ListEncodingTest, EmptyListIsNoBytes) {
  EXPECT_EQ(EncodeListAndWatch(Snapshot({})), "");
  ExpectSameBytes(Snapshot({}));
}

TEST(ListEncodingTest, HealthAndNoTopology) {
  ExpectSameBytes(Snapshot({D("GPU-a", true, {}), D("GPU-b", false, {})}));
}

TEST(ListEncodingTest, NumaNodesIncludingZeroAndNegative) {
  // Node 0 is proto3's default (an empty NUMANode); a negative ID takes ten
  // bytes; several nodes per device.
  ExpectSameBytes(
      Snapshot({D("GPU-0", true, {0}), D("GPU-1", true, {1, 0, 300}),
                D("GPU-x", false, {-1})}));
}

TEST(ListEncodingTest, LongIdsNeedTwoByteLengths) {
  // A device longer than 127 bytes and a list longer than 16 KiB exercise
  // multi-byte lengths at every level.
  std::vector<Device> devices;
  for (int i = 0; i < 768; ++i) {
    devices.push_back(D(absl::StrCat("GPU-", std::string(120, 'f'), "::", i),
                        i % 3 != 0, {i % 2}));
  }
  ExpectSameBytes(Snapshot(devices));
}

}  // namespace
}  // namespace gpulet::plugin
