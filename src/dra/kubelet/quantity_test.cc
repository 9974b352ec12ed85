#include "src/dra/kubelet/quantity.h"

#include <utility>

#include "absl/strings/str_cat.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"

namespace gpulet::dra {
namespace {

TEST(ParseQuantityTest, TakesTheApiServersSpellings) {
  const std::pair<const char*, int64_t> cases[] = {
      {"0", 0},
      {"4Gi", int64_t{4} << 30},
      {"9984Mi", int64_t{9984} << 20},
      {"1k", 1000},
      {"1500M", 1'500'000'000},
      {"2e3", 2000},
      {"2E3", 2000},
      {"0.5Gi", int64_t{1} << 29},
      {"1.5", 2},  // rounded up, as Quantity.Value()
      {"+7", 7},
      {"1E", 1'000'000'000'000'000'000},
      {"7Ei", int64_t{7} << 60},
  };
  for (const auto& [text, want] : cases) {
    absl::StatusOr<int64_t> got = ParseQuantity(text);
    ASSERT_TRUE(got.ok()) << text << ": " << got.status();
    EXPECT_EQ(*got, want) << text;
  }
}

TEST(ParseQuantityTest, RefusesWhatIsNoWholeNonNegativeQuantity) {
  for (const char* text :
       {"", "Gi", "-1", "1.2.3", "4GB", "8Ei", "1e19", "abc", "1e", "1 Gi"}) {
    absl::StatusOr<int64_t> got = ParseQuantity(text);
    EXPECT_EQ(got.status().code(), absl::StatusCode::kInvalidArgument) << text;
    EXPECT_THAT(got.status().message(),
                ::testing::HasSubstr(absl::StrCat("\"", text, "\"")));
  }
}

}  // namespace
}  // namespace gpulet::dra
