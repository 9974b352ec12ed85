// A temporary directory for the runtime's unit tests, removed with its
// contents on destruction. Test-only.
#pragma once

#include <stdlib.h>

#include <filesystem>
#include <fstream>
#include <string>

namespace gpulet::runtime::testing {

class TempDir {
 public:
  TempDir() {
    char tmpl[] = "/tmp/rtXXXXXX";
    path_ = ::mkdtemp(tmpl) != nullptr ? tmpl : "";
  }
  ~TempDir() {
    std::error_code ec;
    std::filesystem::remove_all(path_, ec);
  }
  TempDir(const TempDir&) = delete;
  TempDir& operator=(const TempDir&) = delete;

  const std::string& path() const { return path_; }
  std::string Write(const std::string& rel, const std::string& text) const {
    const std::string full = path_ + "/" + rel;
    std::filesystem::create_directories(
        std::filesystem::path(full).parent_path());
    std::ofstream(full, std::ios::binary) << text;
    return full;
  }

 private:
  std::string path_;
};

}  // namespace gpulet::runtime::testing
