#include "src/gpu/nvml/library_search.h"

#include <set>
#include <string>
#include <vector>

#include "gmock/gmock.h"
#include "gtest/gtest.h"

namespace gpulet::nvml {
namespace {

using ::testing::ElementsAre;
using ::testing::IsEmpty;

IsFileFn FilesAre(std::set<std::string> files) {
  return [files = std::move(files)](const std::string& path) {
    return files.count(path) > 0;
  };
}

TEST(CandidatePaths, HostRootInNvidiaOrder) {
  EXPECT_THAT(CandidatePaths("/"),
              ElementsAre("/usr/lib64/libnvidia-ml.so.1",
                          "/usr/lib/x86_64-linux-gnu/libnvidia-ml.so.1",
                          "/usr/lib/aarch64-linux-gnu/libnvidia-ml.so.1",
                          "/lib64/libnvidia-ml.so.1",
                          "/lib/x86_64-linux-gnu/libnvidia-ml.so.1",
                          "/lib/aarch64-linux-gnu/libnvidia-ml.so.1",
                          "/glibc/lib/libnvidia-ml.so.1"));
}

TEST(CandidatePaths, DriverRootIsPrefixedWithoutDoubleSlash) {
  const std::vector<std::string> plain = CandidatePaths("/run/nvidia/driver");
  const std::vector<std::string> slashed =
      CandidatePaths("/run/nvidia/driver//");
  EXPECT_EQ(plain, slashed);
  ASSERT_EQ(plain.size(), 7u);
  EXPECT_EQ(plain[0], "/run/nvidia/driver/usr/lib64/libnvidia-ml.so.1");
  EXPECT_EQ(plain[6], "/run/nvidia/driver/glibc/lib/libnvidia-ml.so.1");
}

TEST(PlanLibrarySearch, ExplicitPathWinsAndIsNotSearched) {
  LoadOptions options;
  options.driver_root = "/run/nvidia/driver";
  options.library_path = "/opt/sim/libnvidia-ml.so.1";
  bool consulted = false;
  const SearchPlan plan = PlanLibrarySearch(options, [&](const std::string&) {
    consulted = true;
    return true;
  });
  EXPECT_THAT(plan.attempts, ElementsAre("/opt/sim/libnvidia-ml.so.1"));
  EXPECT_THAT(plan.searched, ElementsAre("/opt/sim/libnvidia-ml.so.1"));
  EXPECT_FALSE(consulted);
}

TEST(PlanLibrarySearch, HostRootAsksTheDynamicLinkerFirst) {
  LoadOptions options;  // driver_root "/"
  const SearchPlan plan = PlanLibrarySearch(
      options, FilesAre({"/lib/x86_64-linux-gnu/libnvidia-ml.so.1"}));
  EXPECT_THAT(plan.attempts,
              ElementsAre("libnvidia-ml.so.1",
                          "/lib/x86_64-linux-gnu/libnvidia-ml.so.1"));
  EXPECT_EQ(plan.searched.size(), 8u);
  EXPECT_EQ(plan.searched[0], "libnvidia-ml.so.1 (dynamic linker search path)");
}

TEST(PlanLibrarySearch, HostRootWithNothingFoundStillTriesTheLinker) {
  LoadOptions options;
  options.driver_root = "";
  const SearchPlan plan = PlanLibrarySearch(options, FilesAre({}));
  EXPECT_THAT(plan.attempts, ElementsAre("libnvidia-ml.so.1"));
}

TEST(PlanLibrarySearch, DriverRootTriesExistingCandidatesInOrder) {
  LoadOptions options;
  options.driver_root = "/run/nvidia/driver";
  const SearchPlan plan = PlanLibrarySearch(
      options,
      FilesAre({"/run/nvidia/driver/lib64/libnvidia-ml.so.1",
                "/run/nvidia/driver/usr/lib/x86_64-linux-gnu/libnvidia-ml.so.1",
                "/usr/lib64/libnvidia-ml.so.1"}));
  EXPECT_THAT(
      plan.attempts,
      ElementsAre(
          "/run/nvidia/driver/usr/lib/x86_64-linux-gnu/libnvidia-ml.so.1",
          "/run/nvidia/driver/lib64/libnvidia-ml.so.1"));
  EXPECT_EQ(plan.searched, CandidatePaths("/run/nvidia/driver"));
}

TEST(PlanLibrarySearch, DriverRootNeverFallsBackToTheContainersLibraries) {
  LoadOptions options;
  options.driver_root = "/run/nvidia/driver";
  const SearchPlan plan =
      PlanLibrarySearch(options, FilesAre({"/usr/lib64/libnvidia-ml.so.1"}));
  EXPECT_THAT(plan.attempts, IsEmpty());
  EXPECT_EQ(plan.searched.size(), 7u);
}

TEST(IsRegularFile, FilesYesDirectoriesAndMissingNo) {
  EXPECT_TRUE(IsRegularFile("/proc/self/status"));
  EXPECT_FALSE(IsRegularFile("/tmp"));
  EXPECT_FALSE(IsRegularFile("/nonexistent/gpulet/libnvidia-ml.so.1"));
}

}  // namespace
}  // namespace gpulet::nvml
