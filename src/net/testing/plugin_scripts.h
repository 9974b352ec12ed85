// PluginScripts: a temporary directory of small shell scripts a test
// writes to stand in for exec credential plugins (or any child program),
// removed with the object. Header-only, for tests.
//
// Thread safety: none; one test's thread.
#pragma once

#include <signal.h>
#include <stdlib.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>
#include <filesystem>
#include <string>

#include "absl/strings/ascii.h"
#include "absl/strings/numbers.h"
#include "absl/strings/str_cat.h"
#include "gtest/gtest.h"
#include "src/base/common/file_util.h"

namespace gpulet::testing {

class PluginScripts {
 public:
  PluginScripts() {
    char tmpl[] = "/tmp/xplug.XXXXXX";
    dir_ = ::mkdtemp(tmpl) != nullptr ? tmpl : "";
    EXPECT_FALSE(dir_.empty());
  }
  ~PluginScripts() {
    std::error_code ignored;
    std::filesystem::remove_all(dir_, ignored);
  }
  PluginScripts(const PluginScripts&) = delete;
  PluginScripts& operator=(const PluginScripts&) = delete;

  // Writes an executable `#!/bin/sh` script `name` with `body`; its path.
  std::string Script(const std::string& name, const std::string& body) const {
    return Write(name, absl::StrCat("#!/bin/sh\n", body, "\n"), 0755);
  }

  std::string Write(const std::string& name, const std::string& text,
                    int mode = 0644) const {
    const std::string path = absl::StrCat(dir_, "/", name);
    EXPECT_TRUE(
        common::WriteFileAtomic(
            path, text, {.mode = static_cast<unsigned>(mode), .durable = false})
            .ok());
    return path;
  }

  // The contents of `name`, "" when missing.
  std::string Read(const std::string& name) const {
    absl::StatusOr<std::string> text =
        common::ReadFile(absl::StrCat(dir_, "/", name));
    return text.ok() ? *text : "";
  }

  // The PID a script wrote into `name` with `echo $$ > name`; -1 if none.
  pid_t Pid(const std::string& name) const {
    int pid = -1;
    if (!absl::SimpleAtoi(absl::StripAsciiWhitespace(Read(name)), &pid)) {
      return -1;
    }
    return pid;
  }

  const std::string& dir() const { return dir_; }

 private:
  std::string dir_;
};

// True when no process (not even a zombie waiting to be reaped) has `pid`.
inline bool ProcessGone(pid_t pid) {
  return ::kill(pid, 0) != 0 && errno == ESRCH;
}

}  // namespace gpulet::testing
