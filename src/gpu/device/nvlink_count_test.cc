#include "src/gpu/device/nvlink_count.h"

#include <string>
#include <vector>

#include "absl/strings/str_format.h"
#include "gtest/gtest.h"

namespace gpulet::device {
namespace {

std::string Bus(unsigned bus) {
  return absl::StrFormat("00000000:%02X:00.0", bus);
}

NvLinkEnd ToGpu(unsigned bus) {
  return {NVML_NVLINK_DEVICE_TYPE_GPU, Bus(bus)};
}
NvLinkEnd ToSwitch(unsigned bus) {
  return {NVML_NVLINK_DEVICE_TYPE_SWITCH, Bus(bus)};
}

// `n` links from one GPU to each switch in `switch_buses`.
std::vector<NvLinkEnd> SwitchLinks(std::vector<unsigned> switch_buses,
                                   unsigned n) {
  std::vector<NvLinkEnd> links;
  for (unsigned bus : switch_buses) {
    for (unsigned i = 0; i < n; ++i) links.push_back(ToSwitch(bus));
  }
  return links;
}

PairLinks Pair(LinkKind kind, unsigned direct, unsigned switched) {
  return {kind, direct + switched, direct, switched};
}

TEST(CountNvLinksTest, EmptyAndSingle) {
  EXPECT_TRUE(CountNvLinks({}).empty());
  auto one = CountNvLinks({{Bus(1), {ToGpu(1)}}});
  ASSERT_EQ(one.size(), 1u);
  EXPECT_EQ(one[0][0], PairLinks{});
}

struct Case {
  const char* name;
  std::vector<GpuLinks> gpus;
  // Expected (a, b, links) for a < b; unlisted pairs expect no links.
  std::vector<std::tuple<int, int, PairLinks>> want;
};

std::vector<Case> Cases() {
  return {
      {"no links", {{Bus(1), {}}, {Bus(2), {}}}, {}},
      {"direct bonded pair",
       {{Bus(1), {ToGpu(2), ToGpu(2), ToGpu(2), ToGpu(2)}},
        {Bus(2), {ToGpu(1), ToGpu(1), ToGpu(1), ToGpu(1)}}},
       {{0, 1, Pair(LinkKind::kDirect, 4, 0)}}},
      {"direct one-sided report is not trusted",
       {{Bus(1), {ToGpu(2), ToGpu(2)}}, {Bus(2), {ToGpu(1)}}},
       {{0, 1, Pair(LinkKind::kDirect, 1, 0)}}},
      {"hybrid cube mesh fragment",
       {{Bus(1), {ToGpu(2), ToGpu(2), ToGpu(3)}},
        {Bus(2), {ToGpu(1), ToGpu(1)}},
        {Bus(3), {ToGpu(1)}}},
       {{0, 1, Pair(LinkKind::kDirect, 2, 0)},
        {0, 2, Pair(LinkKind::kDirect, 1, 0)}}},
      {"link to an unknown GPU bus is ignored",
       {{Bus(1), {ToGpu(9)}}, {Bus(2), {ToGpu(9)}}},
       {}},
      {"DGX A100: 12 links over 6 switches",
       {{Bus(1), SwitchLinks({0xA0, 0xA1, 0xA2, 0xA3, 0xA4, 0xA5}, 2)},
        {Bus(2), SwitchLinks({0xA0, 0xA1, 0xA2, 0xA3, 0xA4, 0xA5}, 2)},
        {Bus(3), SwitchLinks({0xA0, 0xA1, 0xA2, 0xA3, 0xA4, 0xA5}, 2)}},
       {{0, 1, Pair(LinkKind::kNvSwitch, 0, 12)},
        {0, 2, Pair(LinkKind::kNvSwitch, 0, 12)},
        {1, 2, Pair(LinkKind::kNvSwitch, 0, 12)}}},
      {"DGX H100: 18 links over 4 switches (5+4+4+5)",
       {{Bus(1),
         [] {
           auto l = SwitchLinks({0xB0, 0xB3}, 5);
           auto m = SwitchLinks({0xB1, 0xB2}, 4);
           l.insert(l.end(), m.begin(), m.end());
           return l;
         }()},
        {Bus(2),
         [] {
           auto l = SwitchLinks({0xB0, 0xB3}, 5);
           auto m = SwitchLinks({0xB1, 0xB2}, 4);
           l.insert(l.end(), m.begin(), m.end());
           return l;
         }()}},
       {{0, 1, Pair(LinkKind::kNvSwitch, 0, 18)}}},
      {"switch counts differ: minimum wins",
       {{Bus(1), SwitchLinks({0xA0, 0xA1}, 6)},
        {Bus(2), SwitchLinks({0xA0, 0xA1}, 3)}},
       {{0, 1, Pair(LinkKind::kNvSwitch, 0, 6)}}},
      {"two islands: disjoint switches do not connect",
       {{Bus(1), SwitchLinks({0xA0, 0xA1}, 2)},
        {Bus(2), SwitchLinks({0xA0, 0xA1}, 2)},
        {Bus(3), SwitchLinks({0xC0, 0xC1}, 2)},
        {Bus(4), SwitchLinks({0xC0, 0xC1}, 2)}},
       {{0, 1, Pair(LinkKind::kNvSwitch, 0, 4)},
        {2, 3, Pair(LinkKind::kNvSwitch, 0, 4)}}},
      {"partially shared switches count only the shared ones",
       {{Bus(1), SwitchLinks({0xA0, 0xA1, 0xA2}, 2)},
        {Bus(2), SwitchLinks({0xA1, 0xA2, 0xA3}, 2)}},
       {{0, 1, Pair(LinkKind::kNvSwitch, 0, 4)}}},
      {"direct plus switched: NvSwitch kind, counts add",
       {{Bus(1),
         [] {
           auto l = SwitchLinks({0xA0}, 2);
           l.push_back(ToGpu(2));
           return l;
         }()},
        {Bus(2),
         [] {
           auto l = SwitchLinks({0xA0}, 2);
           l.push_back(ToGpu(1));
           return l;
         }()}},
       {{0, 1, Pair(LinkKind::kNvSwitch, 1, 2)}}},
      {"unknown remote type is ignored",
       {{Bus(1),
         {{NVML_NVLINK_DEVICE_TYPE_UNKNOWN, Bus(2)},
          {NVML_NVLINK_DEVICE_TYPE_IBMNPU, Bus(2)}}},
        {Bus(2), {{NVML_NVLINK_DEVICE_TYPE_UNKNOWN, Bus(1)}}}},
       {}},
  };
}

TEST(CountNvLinksTest, Table) {
  for (const Case& c : Cases()) {
    SCOPED_TRACE(c.name);
    auto got = CountNvLinks(c.gpus);
    const size_t n = c.gpus.size();
    ASSERT_EQ(got.size(), n);
    for (size_t a = 0; a < n; ++a) {
      ASSERT_EQ(got[a].size(), n);
      for (size_t b = 0; b < n; ++b) {
        PairLinks want;
        for (const auto& [wa, wb, links] : c.want) {
          if ((static_cast<size_t>(wa) == a && static_cast<size_t>(wb) == b) ||
              (static_cast<size_t>(wa) == b && static_cast<size_t>(wb) == a)) {
            want = links;
          }
        }
        EXPECT_EQ(got[a][b], want)
            << "pair " << a << "," << b << ": got "
            << LinkKindName(got[a][b].kind) << " " << got[a][b].count;
      }
    }
  }
}

TEST(LinkKindNameTest, Names) {
  EXPECT_STREQ(LinkKindName(LinkKind::kNone), "none");
  EXPECT_STREQ(LinkKindName(LinkKind::kDirect), "direct");
  EXPECT_STREQ(LinkKindName(LinkKind::kNvSwitch), "nvswitch");
}

}  // namespace
}  // namespace gpulet::device
