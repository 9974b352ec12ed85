#include "src/base/metrics/registry.h"

#include <cmath>
#include <cstdint>
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
  return type == MetricType::kCounter ? "counter" : "gauge";
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

Family::Family(std::string name, MetricType type, std::string help,
               std::vector<std::string> label_names)
    : name_(std::move(name)),
      type_(type),
      help_(std::move(help)),
      label_names_(std::move(label_names)) {}

bool Family::CheckArity(const LabelValues& values) const {
  if (values.size() == label_names_.size()) return true;
  GPULET_LOG(ERROR) << "metric " << name_ << ": " << values.size()
                    << " label values for " << label_names_.size()
                    << " labels; update ignored";
  return false;
}

double* Family::Sample(const LabelValues& values) {
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
  return &samples_.emplace(values, 0.0).first->second;
}

void Family::Add(const LabelValues& values, double delta) {
  if (!CheckArity(values)) return;
  if (type_ == MetricType::kCounter && !(delta >= 0)) return;
  absl::MutexLock lock(&mu_);
  if (double* sample = Sample(values)) *sample += delta;
}

void Family::Set(const LabelValues& values, double value) {
  if (type_ != MetricType::kGauge || !CheckArity(values)) return;
  absl::MutexLock lock(&mu_);
  if (double* sample = Sample(values)) *sample = value;
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
  return it == samples_.end() ? 0 : it->second;
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
  for (const auto& [values, value] : samples_) {
    absl::StrAppend(out, name_);
    if (!values.empty()) {
      absl::StrAppend(out, "{");
      for (size_t i = 0; i < values.size(); ++i) {
        absl::StrAppend(out, i == 0 ? "" : ",", label_names_[i], "=\"",
                        EscapeLabelValue(values[i]), "\"");
      }
      absl::StrAppend(out, "}");
    }
    absl::StrAppend(out, " ", FormatValue(value), "\n");
  }
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

absl::StatusOr<Family*> Registry::Add(const std::string& name, MetricType type,
                                      const std::string& help,
                                      std::vector<std::string> label_names) {
  if (absl::Status s = CheckNames(name, label_names); !s.ok()) return s;
  absl::MutexLock lock(&mu_);
  auto it = families_.find(name);
  if (it != families_.end()) {
    Family& existing = *it->second;
    if (existing.type() != type || existing.label_names() != label_names) {
      return absl::AlreadyExistsError(
          absl::StrCat("metric ", name, " is already registered as a ",
                       TypeName(existing.type()), " with labels {",
                       absl::StrJoin(existing.label_names(), ","), "}"));
    }
    return &existing;
  }
  auto family =
      std::make_unique<Family>(name, type, help, std::move(label_names));
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
