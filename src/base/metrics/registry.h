// Registry: gpulet's counters, gauges and histograms, with labels, rendered
// in the Prometheus text exposition format 0.0.4 for GET /metrics.
//
// A Registry owns its metric families; a Family is one metric name with a
// fixed list of label names, holding one sample per combination of label
// values (for a histogram: its bucket counts, sum and count, rendered as
// <name>_bucket{...,le="..."} cumulative counts up to le="+Inf", <name>_sum
// and <name>_count). Families are created once (AddCounter / AddGauge) and live
// as long as the registry, so callers keep the returned pointer. Render()
// writes families sorted by name and samples sorted by label values, so the
// output is deterministic.
//
// Memory is bounded: a family holds at most kMaxSeriesPerFamily label
// combinations; updates for new combinations beyond that are dropped (logged
// once per family), so a flood of odd Xid codes cannot grow the process.
//
// Thread safety: every method of Registry and Family may be called from any
// thread; each family has its own lock, the registry one for its map.
#pragma once

#include <cstddef>
#include <cstdint>
#include <map>
#include <memory>
#include <string>
#include <vector>

#include "absl/base/thread_annotations.h"
#include "absl/status/statusor.h"
#include "absl/strings/string_view.h"
#include "absl/synchronization/mutex.h"

namespace gpulet::metrics {

enum class MetricType { kCounter, kGauge, kHistogram };

using LabelValues = std::vector<std::string>;

inline constexpr size_t kMaxSeriesPerFamily = 4096;

class Family {
 public:
  // `buckets`: a histogram's upper bounds, increasing, without +Inf (the
  // registry checks them).
  Family(std::string name, MetricType type, std::string help,
         std::vector<std::string> label_names,
         std::vector<double> buckets = {});
  Family(const Family&) = delete;
  Family& operator=(const Family&) = delete;

  const std::string& name() const { return name_; }
  MetricType type() const { return type_; }
  const std::string& help() const { return help_; }
  const std::vector<std::string>& label_names() const { return label_names_; }
  const std::vector<double>& buckets() const { return buckets_; }

  // Adds `delta` to the sample for `values` (created at 0). A counter only
  // goes up: a negative or NaN delta is ignored. `values` must have one
  // entry per label name; otherwise the call is ignored (and logged).
  void Add(const LabelValues& values, double delta = 1);
  // Sets a gauge's sample. Ignored on a counter or histogram.
  void Set(const LabelValues& values, double value);
  // Counts `value` into a histogram's sample: the first bucket whose bound
  // is >= value (else only +Inf), the sum and the count. Ignored on a
  // counter or gauge, and for NaN.
  void Observe(const LabelValues& values, double value);
  // Removes one sample (a device that is gone).
  void Remove(const LabelValues& values);
  // Removes every sample whose label `label_name` equals `value`, e.g. all
  // devices of one resource before its list is published again.
  void RemoveMatching(absl::string_view label_name, absl::string_view value);
  // The sample's value (a histogram's: its count); 0 when it does not
  // exist.
  double Value(const LabelValues& values) const;
  bool Has(const LabelValues& values) const;
  size_t size() const;

  // Appends the HELP and TYPE lines and every sample.
  void Render(std::string* out) const;

 private:
  struct Sample {
    double value = 0;  // a histogram's count
    // A histogram's: observations per bucket (not cumulative), and their sum.
    std::vector<uint64_t> in_bucket{};
    double sum = 0;
  };

  bool CheckArity(const LabelValues& values) const;
  // Returns the sample for `values`, creating it when there is room.
  Sample* SampleFor(const LabelValues& values)
      ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_);
  void RenderHistogram(const LabelValues& values, const Sample& sample,
                       std::string* out) const ABSL_SHARED_LOCKS_REQUIRED(mu_);

  const std::string name_;
  const MetricType type_;
  const std::string help_;
  const std::vector<std::string> label_names_;
  const std::vector<double> buckets_;
  mutable absl::Mutex mu_;
  std::map<LabelValues, Sample> samples_ ABSL_GUARDED_BY(mu_);
  bool full_logged_ ABSL_GUARDED_BY(mu_) = false;
};

class Registry {
 public:
  Registry();
  Registry(const Registry&) = delete;
  Registry& operator=(const Registry&) = delete;

  // Creates the family, or returns the existing one when a family of the
  // same name, type and label names exists (so a daemon reload can register
  // again). Errors (InvalidArgument, naming the metric): a name that is not
  // [a-zA-Z_:][a-zA-Z0-9_:]*, a label name that is not [a-zA-Z_][a-zA-Z0-9_]*
  // or starts with "__", a repeated label name; AlreadyExists when the name
  // is taken with another type or other labels.
  absl::StatusOr<Family*> AddCounter(const std::string& name,
                                     const std::string& help,
                                     std::vector<std::string> label_names = {});
  absl::StatusOr<Family*> AddGauge(const std::string& name,
                                   const std::string& help,
                                   std::vector<std::string> label_names = {});
  // A histogram with the given bucket bounds (finite, strictly increasing;
  // +Inf is implied). InvalidArgument, naming the metric, for other bounds
  // or a label called "le"; AlreadyExists as above, or when the name is
  // taken with other bounds.
  absl::StatusOr<Family*> AddHistogram(const std::string& name,
                                       const std::string& help,
                                       std::vector<std::string> label_names,
                                       std::vector<double> buckets);

  // The family called `name`, or nullptr.
  Family* Find(absl::string_view name) const;

  // Every family in the text exposition format 0.0.4, sorted by name.
  std::string Render() const;

 private:
  absl::StatusOr<Family*> Add(const std::string& name, MetricType type,
                              const std::string& help,
                              std::vector<std::string> label_names,
                              std::vector<double> buckets = {});

  mutable absl::Mutex mu_;
  std::map<std::string, std::unique_ptr<Family>, std::less<>> families_
      ABSL_GUARDED_BY(mu_);
};

// Helpers of the exposition format, exposed for tests.
// A label value with backslash, double quote and line feed escaped.
std::string EscapeLabelValue(absl::string_view value);
// A HELP text with backslash and line feed escaped.
std::string EscapeHelp(absl::string_view help);
// A sample value: integers without a fraction, others with full precision,
// "+Inf", "-Inf", "NaN".
std::string FormatValue(double value);
// A histogram bound for its le label: the shortest text that reads back as
// the same double ("0.005", "1", "2.5", "+Inf").
std::string FormatBound(double bound);

}  // namespace gpulet::metrics
