#include "src/base/metrics/registry.h"

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <cstdlib>
#include <set>
#include <utility>

#include "absl/strings/ascii.h"
#include "absl/strings/match.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"
#include "absl/strings/str_join.h"
#include "src/base/common/logging.h"

namespace gpulet::metrics {
namespace {

bool IsNameChar(char c, bool first, bool colon_ok) {
  if (absl::ascii_isalpha(static_cast<unsigned char>(c)) || c == '_') {
    return true;
  }
  if (colon_ok && c == ':') return true;
  return !first && absl::ascii_isdigit(static_cast<unsigned char>(c));
}

bool IsValidName(absl::string_view name, bool colon_ok) {
  if (name.empty()) return false;
  for (size_t i = 0; i < name.size(); ++i) {
    if (!IsNameChar(name[i], i == 0, colon_ok)) return false;
  }
  return true;
}

absl::Status CheckNames(const std::string& name,
                        const std::vector<std::string>& label_names) {
  if (!IsValidName(name, true)) {
    return absl::InvalidArgumentError(absl::StrCat(
        "metric name \"", name, "\" is not [a-zA-Z_:][a-zA-Z0-9_:]*"));
  }
  std::set<std::string> seen;
  for (const std::string& label : label_names) {
    if (!IsValidName(label, false) || absl::StartsWith(label, "__")) {
      return absl::InvalidArgumentError(absl::StrCat(
          name, ": label name \"", label,
          "\" is not [a-zA-Z_][a-zA-Z0-9_]* without a leading \"__\""));
    }
    if (!seen.insert(label).second) {
      return absl::InvalidArgumentError(
          absl::StrCat(name, ": label name \"", label, "\" is repeated"));
    }
  }
  return absl::OkStatus();
}

const char* TypeName(MetricType type) {
  switch (type) {
    case MetricType::kCounter:
      return "counter";
    case MetricType::kGauge:
      return "gauge";
    case MetricType::kHistogram:
      return "histogram";
  }
  return "untyped";
}

absl::Status CheckBuckets(const std::string& name,
                          const std::vector<std::string>& label_names,
                          const std::vector<double>& buckets) {
  for (const std::string& label : label_names) {
    if (label == "le") {
      return absl::InvalidArgumentError(absl::StrCat(
          name, ": a histogram cannot have a label \"le\" of its own"));
    }
  }
  for (size_t i = 0; i < buckets.size(); ++i) {
    if (!std::isfinite(buckets[i]) || (i > 0 && buckets[i] <= buckets[i - 1])) {
      return absl::InvalidArgumentError(
          absl::StrCat(name, ": bucket bounds must be finite and increasing; ",
                       FormatBound(buckets[i]), " at ", i, " is not"));
    }
  }
  return absl::OkStatus();
}

// `name{labels}` of one sample, `extra` (`le="..."`) appended to the labels.
void AppendSeries(absl::string_view name,
                  const std::vector<std::string>& label_names,
                  const LabelValues& values, absl::string_view extra,
                  std::string* out) {
  absl::StrAppend(out, name);
  if (values.empty() && extra.empty()) return;
  absl::StrAppend(out, "{");
  for (size_t i = 0; i < values.size(); ++i) {
    absl::StrAppend(out, i == 0 ? "" : ",", label_names[i], "=\"",
                    EscapeLabelValue(values[i]), "\"");
  }
  if (!extra.empty()) absl::StrAppend(out, values.empty() ? "" : ",", extra);
  absl::StrAppend(out, "}");
}

}  // namespace

std::string EscapeLabelValue(absl::string_view value) {
  std::string out;
  out.reserve(value.size());
  for (char c : value) {
    if (c == '\\') {
      out += "\\\\";
    } else if (c == '"') {
      out += "\\\"";
    } else if (c == '\n') {
      out += "\\n";
    } else {
      out += c;
    }
  }
  return out;
}

std::string EscapeHelp(absl::string_view help) {
  std::string out;
  out.reserve(help.size());
  for (char c : help) {
    if (c == '\\') {
      out += "\\\\";
    } else if (c == '\n') {
      out += "\\n";
    } else {
      out += c;
    }
  }
  return out;
}

std::string FormatValue(double value) {
  if (std::isnan(value)) return "NaN";
  if (std::isinf(value)) return value > 0 ? "+Inf" : "-Inf";
  // Exact integers (every counter in practice) print without a fraction.
  constexpr double kExactLimit = 9007199254740992.0;  // 2^53
  if (value == std::trunc(value) && std::fabs(value) < kExactLimit) {
    return absl::StrCat(static_cast<int64_t>(value));
  }
  return absl::StrFormat("%.17g", value);
}

std::string FormatBound(double bound) {
  if (std::isinf(bound)) return bound > 0 ? "+Inf" : "-Inf";
  // %g would write 30 as 3e+01.
  constexpr double kExactLimit = 9007199254740992.0;  // 2^53
  if (bound == std::trunc(bound) && std::fabs(bound) < kExactLimit) {
    return absl::StrCat(static_cast<int64_t>(bound));
  }
  for (int precision = 1; precision < 17; ++precision) {
    std::string text = absl::StrFormat("%.*g", precision, bound);
    if (std::strtod(text.c_str(), nullptr) == bound) return text;
  }
  return absl::StrFormat("%.17g", bound);
}

Family::Family(std::string name, MetricType type, std::string help,
               std::vector<std::string> label_names,
               std::vector<double> buckets)
    : name_(std::move(name)),
      type_(type),
      help_(std::move(help)),
      label_names_(std::move(label_names)),
      buckets_(std::move(buckets)) {}

bool Family::CheckArity(const LabelValues& values) const {
  if (values.size() == label_names_.size()) return true;
  GPULET_LOG(ERROR) << "metric " << name_ << ": " << values.size()
                    << " label values for " << label_names_.size()
                    << " labels; update ignored";
  return false;
}

Family::Sample* Family::SampleFor(const LabelValues& values) {
  auto it = samples_.find(values);
  if (it != samples_.end()) return &it->second;
  if (samples_.size() >= kMaxSeriesPerFamily) {
    if (!full_logged_) {
      full_logged_ = true;
      GPULET_LOG(WARNING) << "metric " << name_ << " has "
                          << kMaxSeriesPerFamily
                          << " label combinations; new ones are dropped";
    }
    return nullptr;
  }
  Sample fresh;
  if (type_ == MetricType::kHistogram) fresh.in_bucket.resize(buckets_.size());
  return &samples_.emplace(values, std::move(fresh)).first->second;
}

void Family::Add(const LabelValues& values, double delta) {
  if (type_ == MetricType::kHistogram || !CheckArity(values)) return;
  if (type_ == MetricType::kCounter && !(delta >= 0)) return;
  absl::MutexLock lock(&mu_);
  if (Sample* sample = SampleFor(values)) sample->value += delta;
}

void Family::Set(const LabelValues& values, double value) {
  if (type_ != MetricType::kGauge || !CheckArity(values)) return;
  absl::MutexLock lock(&mu_);
  if (Sample* sample = SampleFor(values)) sample->value = value;
}

void Family::Observe(const LabelValues& values, double value) {
  if (type_ != MetricType::kHistogram || std::isnan(value) ||
      !CheckArity(values)) {
    return;
  }
  const size_t bucket =
      std::lower_bound(buckets_.begin(), buckets_.end(), value) -
      buckets_.begin();
  absl::MutexLock lock(&mu_);
  Sample* sample = SampleFor(values);
  if (sample == nullptr) return;
  if (bucket < sample->in_bucket.size()) ++sample->in_bucket[bucket];
  sample->sum += value;
  sample->value += 1;
}

void Family::Remove(const LabelValues& values) {
  absl::MutexLock lock(&mu_);
  samples_.erase(values);
}

void Family::RemoveMatching(absl::string_view label_name,
                            absl::string_view value) {
  size_t index = 0;
  while (index < label_names_.size() && label_names_[index] != label_name) {
    ++index;
  }
  if (index == label_names_.size()) return;
  absl::MutexLock lock(&mu_);
  std::erase_if(samples_, [&](const auto& sample) {
    return sample.first[index] == value;
  });
}

double Family::Value(const LabelValues& values) const {
  absl::MutexLock lock(&mu_);
  auto it = samples_.find(values);
  return it == samples_.end() ? 0 : it->second.value;
}

bool Family::Has(const LabelValues& values) const {
  absl::MutexLock lock(&mu_);
  return samples_.contains(values);
}

size_t Family::size() const {
  absl::MutexLock lock(&mu_);
  return samples_.size();
}

void Family::Render(std::string* out) const {
  absl::StrAppend(out, "# HELP ", name_, " ", EscapeHelp(help_), "\n",
                  "# TYPE ", name_, " ", TypeName(type_), "\n");
  absl::MutexLock lock(&mu_);
  for (const auto& [values, sample] : samples_) {
    if (type_ == MetricType::kHistogram) {
      RenderHistogram(values, sample, out);
      continue;
    }
    AppendSeries(name_, label_names_, values, "", out);
    absl::StrAppend(out, " ", FormatValue(sample.value), "\n");
  }
}

void Family::RenderHistogram(const LabelValues& values, const Sample& sample,
                             std::string* out) const {
  const std::string bucket_name = absl::StrCat(name_, "_bucket");
  uint64_t cumulative = 0;
  for (size_t i = 0; i <= buckets_.size(); ++i) {
    const double bound =
        i < buckets_.size() ? buckets_[i] : HUGE_VAL;  // +Inf last
    if (i < buckets_.size()) cumulative += sample.in_bucket[i];
    const uint64_t count =
        i < buckets_.size() ? cumulative : static_cast<uint64_t>(sample.value);
    AppendSeries(bucket_name, label_names_, values,
                 absl::StrCat("le=\"", FormatBound(bound), "\""), out);
    absl::StrAppend(out, " ", count, "\n");
  }
  AppendSeries(absl::StrCat(name_, "_sum"), label_names_, values, "", out);
  absl::StrAppend(out, " ", FormatValue(sample.sum), "\n");
  AppendSeries(absl::StrCat(name_, "_count"), label_names_, values, "", out);
  absl::StrAppend(out, " ", FormatValue(sample.value), "\n");
}

Registry::Registry() = default;

absl::StatusOr<Family*> Registry::AddCounter(
    const std::string& name, const std::string& help,
    std::vector<std::string> label_names) {
  return Add(name, MetricType::kCounter, help, std::move(label_names));
}

absl::StatusOr<Family*> Registry::AddGauge(
    const std::string& name, const std::string& help,
    std::vector<std::string> label_names) {
  return Add(name, MetricType::kGauge, help, std::move(label_names));
}

absl::StatusOr<Family*> Registry::AddHistogram(
    const std::string& name, const std::string& help,
    std::vector<std::string> label_names, std::vector<double> buckets) {
  if (absl::Status s = CheckBuckets(name, label_names, buckets); !s.ok()) {
    return s;
  }
  return Add(name, MetricType::kHistogram, help, std::move(label_names),
             std::move(buckets));
}

absl::StatusOr<Family*> Registry::Add(const std::string& name, MetricType type,
                                      const std::string& help,
                                      std::vector<std::string> label_names,
                                      std::vector<double> buckets) {
  if (absl::Status s = CheckNames(name, label_names); !s.ok()) return s;
  absl::MutexLock lock(&mu_);
  auto it = families_.find(name);
  if (it != families_.end()) {
    Family& existing = *it->second;
    if (existing.type() != type || existing.label_names() != label_names ||
        existing.buckets() != buckets) {
      return absl::AlreadyExistsError(absl::StrCat(
          "metric ", name, " is already registered as a ",
          TypeName(existing.type()), " with labels {",
          absl::StrJoin(existing.label_names(), ","), "}",
          existing.buckets().empty()
              ? ""
              : absl::StrCat(" and buckets {",
                             absl::StrJoin(existing.buckets(), ",",
                                           [](std::string* out, double b) {
                                             out->append(FormatBound(b));
                                           }),
                             "}")));
    }
    return &existing;
  }
  auto family = std::make_unique<Family>(
      name, type, help, std::move(label_names), std::move(buckets));
  Family* raw = family.get();
  families_.emplace(name, std::move(family));
  return raw;
}

Family* Registry::Find(absl::string_view name) const {
  absl::MutexLock lock(&mu_);
  auto it = families_.find(name);
  return it == families_.end() ? nullptr : it->second.get();
}

std::string Registry::Render() const {
  std::string out;
  absl::MutexLock lock(&mu_);
  for (const auto& [name, family] : families_) family->Render(&out);
  return out;
}

}  // namespace gpulet::metrics
