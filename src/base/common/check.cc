#include "src/base/common/check.h"

#include <cstdlib>
#include <string>

#include "src/base/common/logging.h"

namespace gpulet::common {

CheckFailure::CheckFailure(const char* file, int line, const char* condition)
    : file_(file), line_(line), condition_(condition) {}

CheckFailure::~CheckFailure() {
  {
    LogMessage log(LogSeverity::kError, file_, line_);
    log.stream() << "check failed: " << condition_;
    const std::string message = stream_.str();
    if (!message.empty()) log.stream() << ": " << message;
  }
  std::abort();
}

}  // namespace gpulet::common
