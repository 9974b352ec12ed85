#include "src/net/kube/token_source.h"

#include <utility>

#include "absl/strings/ascii.h"
#include "absl/strings/str_cat.h"
#include "src/base/common/file_util.h"
#include "src/base/common/logging.h"

namespace gpulet::kube {

TokenSource::TokenSource(std::string token, std::string file,
                         const common::Clock& clock, absl::Duration refresh)
    : static_token_(std::move(token)),
      file_(std::move(file)),
      clock_(clock),
      refresh_(refresh) {}

absl::StatusOr<std::string> TokenSource::Token() {
  if (file_.empty()) return static_token_;
  absl::MutexLock lock(&mu_);
  const absl::Time now = clock_.Now();
  if (!cached_.empty() && now - read_at_ < refresh_) return cached_;
  absl::StatusOr<std::string> text = common::ReadFile(file_);
  std::string token =
      text.ok() ? std::string(absl::StripAsciiWhitespace(*text)) : "";
  if (!token.empty()) {
    cached_ = std::move(token);
    read_at_ = now;
    return cached_;
  }
  absl::Status error = text.ok() ? absl::FailedPreconditionError(absl::StrCat(
                                       "token file ", file_, " is empty"))
                                 : text.status();
  if (cached_.empty()) return error;
  // Keep serving the last token; try the file again after `refresh_`.
  read_at_ = now;
  GPULET_LOG(WARNING) << "keeping the previous API token: " << error;
  return cached_;
}

void TokenSource::Invalidate() {
  absl::MutexLock lock(&mu_);
  read_at_ = absl::InfinitePast();
}

}  // namespace gpulet::kube
