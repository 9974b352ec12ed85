#include "src/base/common/logging.h"

#include <sys/time.h>
#include <unistd.h>

#include <cstring>
#include <ctime>

#include "absl/strings/str_format.h"
#include "nlohmann/json.hpp"

namespace gpulet::common {
namespace {

std::atomic<int> g_verbosity{0};
std::atomic<LogFormat> g_format{LogFormat::kText};
std::atomic<int> g_fd{2};

const char* BaseName(const char* file) {
  const char* slash = std::strrchr(file, '/');
  return slash ? slash + 1 : file;
}

}  // namespace

void SetLogFormat(LogFormat format) { g_format = format; }
void SetVerbosity(int level) { g_verbosity = level; }
int Verbosity() { return g_verbosity.load(std::memory_order_relaxed); }
void SetLogFd(int fd) { g_fd = fd; }

std::string FormatLogLine(LogFormat format, LogSeverity severity,
                          const char* file, int line, const std::string& msg) {
  struct timeval tv;
  ::gettimeofday(&tv, nullptr);
  struct tm tm;
  ::gmtime_r(&tv.tv_sec, &tm);
  if (format == LogFormat::kJson) {
    const char* level = severity == LogSeverity::kInfo      ? "info"
                        : severity == LogSeverity::kWarning ? "warning"
                                                            : "error";
    nlohmann::json j = {
        {"ts", absl::StrFormat("%04d-%02d-%02dT%02d:%02d:%02d.%06dZ",
                               tm.tm_year + 1900, tm.tm_mon + 1, tm.tm_mday,
                               tm.tm_hour, tm.tm_min, tm.tm_sec,
                               static_cast<int>(tv.tv_usec))},
        {"level", level},
        {"pid", static_cast<int>(::getpid())},
        {"caller", absl::StrFormat("%s:%d", BaseName(file), line)},
        {"msg", msg}};
    return j.dump(-1, ' ', false, nlohmann::json::error_handler_t::replace) +
           "\n";
  }
  char letter = severity == LogSeverity::kInfo      ? 'I'
                : severity == LogSeverity::kWarning ? 'W'
                                                    : 'E';
  return absl::StrFormat("%c%02d%02d %02d:%02d:%02d.%06d %7d %s:%d] %s\n",
                         letter, tm.tm_mon + 1, tm.tm_mday, tm.tm_hour,
                         tm.tm_min, tm.tm_sec, static_cast<int>(tv.tv_usec),
                         static_cast<int>(::getpid()), BaseName(file), line,
                         msg);
}

LogMessage::LogMessage(LogSeverity severity, const char* file, int line)
    : severity_(severity), file_(file), line_(line) {}

LogMessage::~LogMessage() {
  std::string out =
      FormatLogLine(g_format.load(), severity_, file_, line_, stream_.str());
  const char* p = out.data();
  size_t left = out.size();
  int fd = g_fd.load();
  while (left > 0) {
    ssize_t n = ::write(fd, p, left);
    if (n <= 0) break;
    p += n;
    left -= static_cast<size_t>(n);
  }
}

}  // namespace gpulet::common
