// Test-only: a temporary directory standing in for a driver root, dev root
// or spec directory, removed with everything in it when the object goes.
// Paths are short (/tmp/gcdi-XXXXXX). Not thread-safe.
#pragma once

#include <fcntl.h>
#include <stdlib.h>
#include <sys/stat.h>
#include <sys/sysmacros.h>
#include <unistd.h>

#include <filesystem>
#include <fstream>
#include <string>

#include "gtest/gtest.h"

namespace gpulet::cdi::testing {

class TempRoot {
 public:
  TempRoot() {
    char tmpl[] = "/tmp/gcdi-XXXXXX";
    char* made = ::mkdtemp(tmpl);
    EXPECT_NE(made, nullptr);
    path_ = made == nullptr ? "/nonexistent" : made;
  }
  ~TempRoot() {
    std::error_code ignored;
    std::filesystem::remove_all(path_, ignored);
  }
  TempRoot(const TempRoot&) = delete;
  TempRoot& operator=(const TempRoot&) = delete;

  const std::string& path() const { return path_; }
  // `rel` is absolute-looking ("/etc/x"), placed under the root.
  std::string Under(const std::string& rel) const { return path_ + rel; }

  void MakeDir(const std::string& rel) const {
    std::filesystem::create_directories(Under(rel));
  }
  void Write(const std::string& rel, const std::string& contents) const {
    MakeParent(rel);
    std::ofstream out(Under(rel), std::ios::binary);
    out << contents;
  }
  void Copy(const std::string& from, const std::string& rel) const {
    MakeParent(rel);
    std::filesystem::copy_file(
        from, Under(rel), std::filesystem::copy_options::overwrite_existing);
  }
  // A character device node; needs root (callers skip otherwise).
  bool Mknod(const std::string& rel, unsigned major, unsigned minor) const {
    MakeParent(rel);
    return ::mknod(Under(rel).c_str(), S_IFCHR | 0666, makedev(major, minor)) ==
               0 &&
           ::chmod(Under(rel).c_str(), 0666) == 0;
  }

 private:
  void MakeParent(const std::string& rel) const {
    std::filesystem::create_directories(
        std::filesystem::path(Under(rel)).parent_path());
  }
  std::string path_;
};

inline bool IsRoot() { return ::geteuid() == 0; }

}  // namespace gpulet::cdi::testing
