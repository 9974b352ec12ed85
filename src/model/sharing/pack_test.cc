#include "src/model/sharing/pack.h"

#include <string>
#include <vector>

#include "gmock/gmock.h"
#include "gtest/gtest.h"

namespace gpulet::sharing {
namespace {

using ::testing::ElementsAre;
using ::testing::HasSubstr;

std::vector<GpuSpace> Gpus(std::vector<int64_t> free_units) {
  std::vector<GpuSpace> out;
  for (size_t i = 0; i < free_units.size(); ++i) {
    out.push_back(GpuSpace{.uuid = "GPU-" + std::to_string(i),
                           .index = static_cast<int>(i),
                           .units = 16,
                           .used = 16 - free_units[i]});
  }
  return out;
}

std::vector<Request> Reqs(std::vector<int64_t> units) {
  std::vector<Request> out;
  for (size_t i = 0; i < units.size(); ++i) {
    out.push_back(
        Request{.key = "ns/p/c" + std::to_string(i), .units = units[i]});
  }
  return out;
}

TEST(FreeUnits, UnhealthyAndOverusedHaveNone) {
  EXPECT_EQ(FreeUnits({.units = 8, .used = 3}), 5);
  EXPECT_EQ(FreeUnits({.units = 8, .used = 3, .healthy = false}), 0);
  EXPECT_EQ(FreeUnits({.units = 8, .used = 9}), 0);
}

TEST(Pack, NoRequestsFitNoGpus) {
  auto r = Pack(Gpus({}), Reqs({}));
  ASSERT_TRUE(r.ok()) << r.status();
  EXPECT_TRUE(r->empty());
}

TEST(Pack, FirstFitDecreasing) {
  auto r = Pack(Gpus({8, 8}), Reqs({2, 6, 8}));
  ASSERT_TRUE(r.ok()) << r.status();
  EXPECT_THAT(*r, ElementsAre(1, 1, 0)) << "8 to GPU 0, then 6 and 2 to GPU 1";
}

TEST(Pack, ExactSearchWhereFirstFitFails) {
  // First fit decreasing: 5+4 | 4+3+2 and no room for the last 2. The exact
  // answer is 5+3+2 | 4+4+2.
  auto gpus = Gpus({10, 10});
  auto reqs = Reqs({5, 4, 4, 3, 2, 2});
  auto r = Pack(gpus, reqs);
  ASSERT_TRUE(r.ok()) << r.status();
  std::vector<int64_t> load(gpus.size(), 0);
  for (size_t i = 0; i < reqs.size(); ++i) load[(*r)[i]] += reqs[i].units;
  EXPECT_THAT(load, ElementsAre(10, 10));
}

TEST(Pack, RequestMustBeWholeOnOneGpu) {
  auto r = Pack(Gpus({4, 4}), Reqs({6}));
  EXPECT_EQ(r.status().code(), absl::StatusCode::kNotFound);
}

TEST(Pack, UnhealthyGpuTakesNothing) {
  auto gpus = Gpus({8, 8});
  gpus[0].healthy = false;
  EXPECT_TRUE(Pack(gpus, Reqs({8})).ok());
  EXPECT_EQ(Pack(gpus, Reqs({8, 1})).status().code(),
            absl::StatusCode::kNotFound);
}

TEST(Pack, ZeroUnitRequestIsRefusedByKey) {
  auto r = Pack(Gpus({8}), Reqs({0}));
  EXPECT_EQ(r.status().code(), absl::StatusCode::kInvalidArgument);
  EXPECT_THAT(r.status().message(), HasSubstr("ns/p/c0"));
}

TEST(Pack, BudgetExhaustedIsNotAFit) {
  auto gpus = Gpus({10, 10});
  auto reqs = Reqs({5, 4, 4, 3, 2, 2});
  auto r = Pack(gpus, reqs, {.budget = 1});
  EXPECT_EQ(r.status().code(), absl::StatusCode::kResourceExhausted)
      << r.status();
  EXPECT_THAT(r.status().message(), HasSubstr("budget"));
}

TEST(Pack, SymmetricGpusKeepTheSearchSmall) {
  // Eight GPUs of 10 free and four copies of the set above: first fit
  // fails, the exact search finds 5+3+2 | 4+4+2 on every pair.
  std::vector<int64_t> units;
  for (int i = 0; i < 4; ++i) units.insert(units.end(), {5, 4, 4, 3, 2, 2});
  auto r = Pack(Gpus(std::vector<int64_t>(8, 10)), Reqs(units));
  EXPECT_TRUE(r.ok()) << r.status();
}

TEST(ChooseGpu, BinpackTakesTheFullestThatFits) {
  auto c = ChooseGpu(Gpus({8, 3, 5}), {}, 3);
  ASSERT_TRUE(c.ok()) << c.status();
  EXPECT_EQ(c->gpu, 1);
  EXPECT_TRUE(c->pending_fits);
  EXPECT_FALSE(c->matched_pending);
}

TEST(ChooseGpu, SpreadTakesTheEmptiest) {
  auto c = ChooseGpu(Gpus({8, 3, 5}), {}, 3, Policy::kSpread);
  ASSERT_TRUE(c.ok()) << c.status();
  EXPECT_EQ(c->gpu, 0);
}

TEST(ChooseGpu, KeepsTheOtherPendingRequestsFitting) {
  // Pending: 4 (this one), 6 and 6. Binpack alone would put the 4 on GPU 1
  // (6 free) and leave room for one 6 only; the rule puts it on GPU 0.
  auto c = ChooseGpu(Gpus({10, 6}), Reqs({4, 6, 6}), 4);
  ASSERT_TRUE(c.ok()) << c.status();
  EXPECT_EQ(c->gpu, 0);
  EXPECT_TRUE(c->matched_pending);
  EXPECT_TRUE(c->pending_fits);
}

TEST(ChooseGpu, UnmatchedSizeKeepsAllPendingFitting) {
  auto c = ChooseGpu(Gpus({10, 6}), Reqs({6, 6}), 4);
  ASSERT_TRUE(c.ok()) << c.status();
  EXPECT_FALSE(c->matched_pending);
  EXPECT_EQ(c->gpu, 0);
  EXPECT_TRUE(c->pending_fits);
}

TEST(ChooseGpu, NoGpuKeepsPendingFittingStillAnswers) {
  auto c = ChooseGpu(Gpus({6, 6}), Reqs({6, 6}), 4);
  ASSERT_TRUE(c.ok()) << c.status();
  EXPECT_FALSE(c->pending_fits);
  EXPECT_EQ(c->gpu, 0);
}

TEST(ChooseGpu, NoRoomIsNotFound) {
  auto c = ChooseGpu(Gpus({3, 2}), {}, 4);
  EXPECT_EQ(c.status().code(), absl::StatusCode::kNotFound);
  EXPECT_EQ(ChooseGpu(Gpus({3}), {}, 0).status().code(),
            absl::StatusCode::kInvalidArgument);
}

}  // namespace
}  // namespace gpulet::sharing
