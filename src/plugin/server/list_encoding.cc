#include "src/plugin/server/list_encoding.h"

#include <cstddef>
#include <cstdint>
#include <string_view>

#include "src/plugin/server/request_handlers.h"

namespace gpulet::plugin {
namespace {

// Wire types of protobuf's encoding.
constexpr uint8_t kVarint = 0;
constexpr uint8_t kLengthDelimited = 2;

constexpr uint8_t Tag(int field, uint8_t wire_type) {
  return static_cast<uint8_t>(field << 3 | wire_type);
}

size_t VarintSize(uint64_t value) {
  size_t size = 1;
  while (value >= 0x80) {
    value >>= 7;
    ++size;
  }
  return size;
}

void AppendVarint(std::string& out, uint64_t value) {
  while (value >= 0x80) {
    out.push_back(static_cast<char>(value | 0x80));
    value >>= 7;
  }
  out.push_back(static_cast<char>(value));
}

// An int64 goes on the wire as its two's complement (ten bytes when
// negative); proto3 leaves a zero out.
size_t NumaNodeSize(int64_t id) {
  return id == 0 ? 0 : 1 + VarintSize(static_cast<uint64_t>(id));
}

size_t TopologySize(const pluginapi::Device& d) {
  size_t size = 0;
  for (int64_t node : d.numa_nodes) {
    const size_t inner = NumaNodeSize(node);
    size += 1 + VarintSize(inner) + inner;
  }
  return size;
}

size_t StringFieldSize(std::string_view s) {
  return s.empty() ? 0 : 1 + VarintSize(s.size()) + s.size();
}

std::string_view Health(const pluginapi::Device& d) {
  return d.healthy ? kHealthy : kUnhealthy;
}

size_t DeviceSize(const pluginapi::Device& d, size_t topology) {
  size_t size = StringFieldSize(d.id) + StringFieldSize(Health(d));
  if (!d.numa_nodes.empty()) size += 1 + VarintSize(topology) + topology;
  return size;
}

void AppendStringField(std::string& out, int field, std::string_view s) {
  if (s.empty()) return;
  out.push_back(static_cast<char>(Tag(field, kLengthDelimited)));
  AppendVarint(out, s.size());
  out.append(s);
}

void AppendDevice(std::string& out, const pluginapi::Device& d) {
  const size_t topology = TopologySize(d);
  out.push_back(static_cast<char>(Tag(1, kLengthDelimited)));  // devices
  AppendVarint(out, DeviceSize(d, topology));
  AppendStringField(out, 1, d.id);       // ID
  AppendStringField(out, 2, Health(d));  // health
  if (d.numa_nodes.empty()) return;
  out.push_back(static_cast<char>(Tag(3, kLengthDelimited)));  // topology
  AppendVarint(out, topology);
  for (int64_t node : d.numa_nodes) {
    out.push_back(static_cast<char>(Tag(1, kLengthDelimited)));  // nodes
    AppendVarint(out, NumaNodeSize(node));
    if (node == 0) continue;
    out.push_back(static_cast<char>(Tag(1, kVarint)));  // ID
    AppendVarint(out, static_cast<uint64_t>(node));
  }
}

}  // namespace

std::string EncodeListAndWatch(const pluginapi::DeviceSnapshot& snapshot) {
  size_t total = 0;
  for (const pluginapi::Device& d : snapshot.devices) {
    const size_t size = DeviceSize(d, TopologySize(d));
    total += 1 + VarintSize(size) + size;
  }
  std::string out;
  out.reserve(total);
  for (const pluginapi::Device& d : snapshot.devices) AppendDevice(out, d);
  return out;
}

}  // namespace gpulet::plugin
