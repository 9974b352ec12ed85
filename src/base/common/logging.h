// Logging in klog's text format (the format of the kubelet and NVIDIA's
// plugin), or one JSON object per line:
//   I1121 23:35:36.123456   4242 plugin.cc:12] registered nvidia.com/gpu
//   {"ts":"2026-11-21T23:35:36.123456Z","level":"info","pid":4242,
//    "caller":"plugin.cc:12","msg":"registered nvidia.com/gpu"}
//
// Use:  GPULET_LOG(INFO) << "text";   GPULET_VLOG(2) << "detail";
// Levels INFO, WARNING, ERROR go to stderr; VLOG(n) only when n <= the
// verbosity set with SetVerbosity (the -v flag).
//
// Thread safety: every function and macro may be used from any thread; each
// message is written with one write(2) so lines never interleave.
#pragma once

#include <atomic>
#include <sstream>
#include <string>

namespace gpulet::common {

enum class LogSeverity { kInfo, kWarning, kError };
enum class LogFormat { kText, kJson };

void SetLogFormat(LogFormat format);
void SetVerbosity(int level);
int Verbosity();
// Redirects output to `fd` (default 2). For tests.
void SetLogFd(int fd);

// Collects one message and writes it when destroyed.
class LogMessage {
 public:
  LogMessage(LogSeverity severity, const char* file, int line);
  ~LogMessage();
  LogMessage(const LogMessage&) = delete;
  LogMessage& operator=(const LogMessage&) = delete;
  std::ostream& stream() { return stream_; }

 private:
  LogSeverity severity_;
  const char* file_;
  int line_;
  std::ostringstream stream_;
};

// Formats one line without writing it; exposed for tests.
std::string FormatLogLine(LogFormat format, LogSeverity severity,
                          const char* file, int line, const std::string& msg);

}  // namespace gpulet::common

#define GPULET_LOG_SEVERITY_INFO ::gpulet::common::LogSeverity::kInfo
#define GPULET_LOG_SEVERITY_WARNING ::gpulet::common::LogSeverity::kWarning
#define GPULET_LOG_SEVERITY_ERROR ::gpulet::common::LogSeverity::kError

#define GPULET_LOG(severity)                                             \
  ::gpulet::common::LogMessage(GPULET_LOG_SEVERITY_##severity, __FILE__, \
                               __LINE__)                                 \
      .stream()

#define GPULET_VLOG(level)                                             \
  if ((level) > ::gpulet::common::Verbosity()) {                       \
  } else                                                               \
    ::gpulet::common::LogMessage(::gpulet::common::LogSeverity::kInfo, \
                                 __FILE__, __LINE__)                   \
        .stream()
