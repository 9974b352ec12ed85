#include "src/base/metrics/registry.h"

#include <cmath>
#include <limits>
#include <string>
#include <thread>
#include <vector>

#include "gmock/gmock.h"
#include "gtest/gtest.h"

namespace gpulet::metrics {
namespace {

using ::testing::HasSubstr;

TEST(RegistryTest, RendersSortedFamiliesAndSamples) {
  Registry registry;
  Family* b = *registry.AddGauge("b_gauge", "A gauge.", {"gpu"});
  Family* a = *registry.AddCounter("a_total", "A counter.", {"x", "y"});
  b->Set({"GPU-2"}, 0);
  b->Set({"GPU-1"}, 1);
  a->Add({"2", "b"}, 3);
  a->Add({"10", "a"});
  a->Add({"10", "a"});
  EXPECT_EQ(registry.Render(),
            "# HELP a_total A counter.\n"
            "# TYPE a_total counter\n"
            "a_total{x=\"10\",y=\"a\"} 2\n"
            "a_total{x=\"2\",y=\"b\"} 3\n"
            "# HELP b_gauge A gauge.\n"
            "# TYPE b_gauge gauge\n"
            "b_gauge{gpu=\"GPU-1\"} 1\n"
            "b_gauge{gpu=\"GPU-2\"} 0\n");
}

TEST(RegistryTest, FamilyWithoutSamplesHasHelpAndType) {
  Registry registry;
  ASSERT_TRUE(registry.AddCounter("restarts_total", "Restarts.").ok());
  EXPECT_EQ(registry.Render(),
            "# HELP restarts_total Restarts.\n"
            "# TYPE restarts_total counter\n");
  registry.Find("restarts_total")->Add({});
  EXPECT_THAT(registry.Render(), HasSubstr("\nrestarts_total 1\n"));
}

TEST(RegistryTest, EscapesLabelValuesAndHelp) {
  Registry registry;
  Family* f = *registry.AddGauge("g", "line1\nback\\slash \"quoted\"", {"l"});
  f->Set({"a\"b\\c\nd"}, 1);
  EXPECT_EQ(registry.Render(),
            "# HELP g line1\\nback\\\\slash \"quoted\"\n"
            "# TYPE g gauge\n"
            "g{l=\"a\\\"b\\\\c\\nd\"} 1\n");
}

TEST(RegistryTest, FormatValue) {
  struct Case {
    double value;
    std::string want;
  } cases[] = {
      {0, "0"},
      {1, "1"},
      {-3, "-3"},
      {1e15, "1000000000000000"},
      {0.5, "0.5"},
      {1.0 / 3, "0.33333333333333331"},
      {1e300, "1.0000000000000001e+300"},
      {std::numeric_limits<double>::infinity(), "+Inf"},
      {-std::numeric_limits<double>::infinity(), "-Inf"},
      {std::nan(""), "NaN"},
  };
  for (const Case& c : cases) EXPECT_EQ(FormatValue(c.value), c.want);
}

TEST(RegistryTest, CounterIgnoresNegativeAndSet) {
  Registry registry;
  Family* c = *registry.AddCounter("c_total", "C.", {"k"});
  c->Add({"v"}, 2);
  c->Add({"v"}, -1);
  c->Add({"v"}, std::nan(""));
  c->Set({"v"}, 100);
  EXPECT_EQ(c->Value({"v"}), 2);
}

TEST(RegistryTest, GaugeSetAddRemove) {
  Registry registry;
  Family* g = *registry.AddGauge("g", "G.", {"resource", "device"});
  g->Set({"nvidia.com/gpu", "GPU-0"}, 1);
  g->Set({"nvidia.com/gpu", "GPU-1"}, 1);
  g->Set({"nvidia.com/mig-1g.5gb", "MIG-0"}, 1);
  g->Add({"nvidia.com/gpu", "GPU-1"}, -1);
  EXPECT_EQ(g->Value({"nvidia.com/gpu", "GPU-1"}), 0);
  EXPECT_TRUE(g->Has({"nvidia.com/gpu", "GPU-1"}));
  g->RemoveMatching("resource", "nvidia.com/gpu");
  EXPECT_EQ(g->size(), 1u);
  EXPECT_FALSE(g->Has({"nvidia.com/gpu", "GPU-0"}));
  g->Remove({"nvidia.com/mig-1g.5gb", "MIG-0"});
  EXPECT_EQ(g->size(), 0u);
  g->RemoveMatching("no_such_label", "x");  // no effect, no crash
}

TEST(RegistryTest, WrongLabelCountIsIgnored) {
  Registry registry;
  Family* g = *registry.AddGauge("g", "G.", {"a", "b"});
  g->Set({"only-one"}, 1);
  g->Add({"1", "2", "3"});
  EXPECT_EQ(g->size(), 0u);
}

TEST(RegistryTest, SeriesAreBounded) {
  Registry registry;
  Family* c = *registry.AddCounter("xid_total", "X.", {"xid"});
  for (size_t i = 0; i < kMaxSeriesPerFamily + 100; ++i) {
    c->Add({std::to_string(i)});
  }
  EXPECT_EQ(c->size(), kMaxSeriesPerFamily);
  c->Add({"0"});  // existing series still count
  EXPECT_EQ(c->Value({"0"}), 2);
}

TEST(RegistryTest, RegisteringAgainReturnsTheSameFamily) {
  Registry registry;
  Family* first = *registry.AddCounter("c_total", "C.", {"k"});
  absl::StatusOr<Family*> again = registry.AddCounter("c_total", "C.", {"k"});
  ASSERT_TRUE(again.ok());
  EXPECT_EQ(*again, first);
  EXPECT_EQ(registry.Find("c_total"), first);
  EXPECT_EQ(registry.Find("nope"), nullptr);
}

TEST(RegistryTest, RejectsBadAndConflictingDefinitions) {
  struct Case {
    std::string name;
    std::vector<std::string> labels;
    std::string want;
  } cases[] = {
      {"", {}, "metric name \"\""},
      {"1abc", {}, "metric name \"1abc\""},
      {"a-b", {}, "metric name \"a-b\""},
      {"ok", {"__reserved"}, "label name \"__reserved\""},
      {"ok", {"a:b"}, "label name \"a:b\""},
      {"ok", {"a", "a"}, "\"a\" is repeated"},
  };
  Registry registry;
  for (const Case& c : cases) {
    absl::StatusOr<Family*> f = registry.AddCounter(c.name, "h", c.labels);
    ASSERT_FALSE(f.ok()) << c.name;
    EXPECT_EQ(f.status().code(), absl::StatusCode::kInvalidArgument);
    EXPECT_THAT(f.status().message(), HasSubstr(c.want));
  }
  ASSERT_TRUE(registry.AddCounter("ns:c_total", "C.", {"k"}).ok());
  absl::StatusOr<Family*> gauge = registry.AddGauge("ns:c_total", "C.", {"k"});
  EXPECT_EQ(gauge.status().code(), absl::StatusCode::kAlreadyExists);
  absl::StatusOr<Family*> labels =
      registry.AddCounter("ns:c_total", "C.", {"other"});
  EXPECT_EQ(labels.status().code(), absl::StatusCode::kAlreadyExists);
  EXPECT_THAT(labels.status().message(), HasSubstr("labels {k}"));
}

// Buckets are cumulative up to +Inf, which equals _count; a value on a
// bound falls in that bound's bucket.
TEST(RegistryTest, RendersHistograms) {
  Registry registry;
  Family* h = *registry.AddHistogram("req_seconds", "Latency.", {"verb"},
                                     {0.005, 0.1, 2.5});
  h->Observe({"GET"}, 0.001);
  h->Observe({"GET"}, 0.1);
  h->Observe({"GET"}, 1);
  h->Observe({"GET"}, 60);
  h->Observe({"PUT"}, 0.5);
  h->Observe({"GET"}, std::nan(""));  // ignored
  h->Add({"GET"}, 5);                 // not a histogram's update: ignored
  EXPECT_EQ(h->Value({"GET"}), 4);
  EXPECT_EQ(registry.Render(),
            "# HELP req_seconds Latency.\n"
            "# TYPE req_seconds histogram\n"
            "req_seconds_bucket{verb=\"GET\",le=\"0.005\"} 1\n"
            "req_seconds_bucket{verb=\"GET\",le=\"0.1\"} 2\n"
            "req_seconds_bucket{verb=\"GET\",le=\"2.5\"} 3\n"
            "req_seconds_bucket{verb=\"GET\",le=\"+Inf\"} 4\n"
            "req_seconds_sum{verb=\"GET\"} 61.100999999999999\n"
            "req_seconds_count{verb=\"GET\"} 4\n"
            "req_seconds_bucket{verb=\"PUT\",le=\"0.005\"} 0\n"
            "req_seconds_bucket{verb=\"PUT\",le=\"0.1\"} 0\n"
            "req_seconds_bucket{verb=\"PUT\",le=\"2.5\"} 1\n"
            "req_seconds_bucket{verb=\"PUT\",le=\"+Inf\"} 1\n"
            "req_seconds_sum{verb=\"PUT\"} 0.5\n"
            "req_seconds_count{verb=\"PUT\"} 1\n");
}

TEST(RegistryTest, HistogramWithoutLabels) {
  Registry registry;
  Family* h = *registry.AddHistogram("h", "H.", {}, {1});
  h->Observe({}, 2);
  EXPECT_EQ(registry.Render(),
            "# HELP h H.\n# TYPE h histogram\n"
            "h_bucket{le=\"1\"} 0\nh_bucket{le=\"+Inf\"} 1\n"
            "h_sum 2\nh_count 1\n");
}

TEST(RegistryTest, HistogramRegistrationErrors) {
  Registry registry;
  EXPECT_EQ(registry.AddHistogram("h", "H.", {}, {1, 1}).status().code(),
            absl::StatusCode::kInvalidArgument);
  EXPECT_EQ(registry.AddHistogram("h", "H.", {}, {2, 1}).status().code(),
            absl::StatusCode::kInvalidArgument);
  EXPECT_EQ(registry.AddHistogram("h", "H.", {}, {HUGE_VAL}).status().code(),
            absl::StatusCode::kInvalidArgument);
  EXPECT_THAT(registry.AddHistogram("h", "H.", {"le"}, {1}).status().message(),
              HasSubstr("\"le\""));
  ASSERT_TRUE(registry.AddHistogram("h", "H.", {"v"}, {1, 2}).ok());
  EXPECT_TRUE(registry.AddHistogram("h", "H.", {"v"}, {1, 2}).ok());
  absl::StatusOr<Family*> other = registry.AddHistogram("h", "H.", {"v"}, {1});
  EXPECT_EQ(other.status().code(), absl::StatusCode::kAlreadyExists);
  EXPECT_THAT(other.status().message(), HasSubstr("buckets {1,2}"));
}

TEST(RegistryTest, FormatBound) {
  EXPECT_EQ(FormatBound(0.005), "0.005");
  EXPECT_EQ(FormatBound(0.025), "0.025");
  EXPECT_EQ(FormatBound(1), "1");
  EXPECT_EQ(FormatBound(15), "15");
  EXPECT_EQ(FormatBound(30), "30");
  EXPECT_EQ(FormatBound(60), "60");
  EXPECT_EQ(FormatBound(1024), "1024");
  EXPECT_EQ(FormatBound(0.1 + 0.2), "0.30000000000000004");
  EXPECT_EQ(FormatBound(HUGE_VAL), "+Inf");
}

TEST(RegistryTest, ConcurrentUpdatesAndRenders) {
  Registry registry;
  Family* c = *registry.AddCounter("c_total", "C.", {"t"});
  std::vector<std::jthread> threads;
  for (int t = 0; t < 4; ++t) {
    threads.emplace_back([&, t] {
      for (int i = 0; i < 1000; ++i) {
        c->Add({std::to_string(t % 2)});
        if (i % 100 == 0) (void)registry.Render();
      }
    });
  }
  threads.clear();
  EXPECT_EQ(c->Value({"0"}) + c->Value({"1"}), 4000);
}

}  // namespace
}  // namespace gpulet::metrics
