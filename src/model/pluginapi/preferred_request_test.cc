#include "src/model/pluginapi/preferred_request.h"

#include <string>
#include <vector>

#include "gmock/gmock.h"
#include "gtest/gtest.h"

namespace gpulet::pluginapi {
namespace {

using ::testing::ElementsAre;
using ::testing::HasSubstr;

DeviceSnapshot FourGpus() {
  DeviceSnapshot s;
  for (int i = 0; i < 4; ++i) {
    Device& d = s.devices.emplace_back();
    d.id = "GPU-" + std::to_string(i);
    d.gpu_index = i;
  }
  s.BuildIndex();
  return s;
}

TEST(ValidatePreferredTest, DropsDuplicatesKeepingTheFirst) {
  auto r = ValidatePreferred(FourGpus(), {"GPU-2", "GPU-0", "GPU-2"},
                             {"GPU-0", "GPU-0"}, 2);
  ASSERT_TRUE(r.ok()) << r.status();
  EXPECT_THAT(r->available, ElementsAre("GPU-2", "GPU-0"));
  EXPECT_THAT(r->must_include, ElementsAre("GPU-0"));
  EXPECT_EQ(r->size, 2);
}

TEST(ValidatePreferredTest, RejectsWhatCannotBeMetNamingTheCause) {
  struct Case {
    std::vector<std::string> available, must;
    int size;
    std::string message;
  } cases[] = {
      {{"GPU-0"}, {}, 0, "allocation_size must be at least 1, got 0"},
      {{"GPU-0", "GPU-9"}, {}, 1, "unknown device: GPU-9"},
      {{"GPU-0"}, {"GPU-1"}, 1, "GPU-1 is not in available_deviceIDs"},
      {{"GPU-0"}, {"GPU-9"}, 1, "(unknown device)"},
      {{"GPU-0", "GPU-1"},
       {"GPU-0", "GPU-1"},
       1,
       "holds 2 devices, more than allocation_size 1"},
      {{"GPU-0", "GPU-1"}, {}, 3, "allocation_size 3 exceeds the 2 available"},
  };
  for (const Case& c : cases) {
    auto r = ValidatePreferred(FourGpus(), c.available, c.must, c.size);
    ASSERT_FALSE(r.ok()) << c.message;
    EXPECT_EQ(r.status().code(), absl::StatusCode::kInvalidArgument);
    EXPECT_THAT(r.status().message(), HasSubstr(c.message));
  }
}

TEST(CheckPreferredAnswerTest, AcceptsOnlyExactlySizeDistinctAvailableIds) {
  PreferredRequest request{{"GPU-0", "GPU-1", "GPU-2"}, {"GPU-1"}, 2};
  EXPECT_TRUE(CheckPreferredAnswer(request, {"GPU-1", "GPU-2"}).ok());
  struct Case {
    std::vector<std::string> answer;
    std::string message;
  } cases[] = {
      {{"GPU-1"}, "chose 1 devices, not 2"},
      {{"GPU-1", "GPU-3"}, "chose unavailable device GPU-3"},
      {{"GPU-1", "GPU-1"}, "chose GPU-1 twice"},
      {{"GPU-0", "GPU-2"}, "left out must-include device GPU-1"},
  };
  for (const Case& c : cases) {
    absl::Status s = CheckPreferredAnswer(request, c.answer);
    EXPECT_EQ(s.code(), absl::StatusCode::kInternal) << c.message;
    EXPECT_THAT(s.message(), HasSubstr(c.message));
  }
}

}  // namespace
}  // namespace gpulet::pluginapi
