// Test support: a temporary directory holding a sysfs/dev tree, rendered
// from a simulator profile or built by hand.
#pragma once

#include <stdlib.h>

#include <filesystem>
#include <fstream>
#include <string>

#include "gtest/gtest.h"
#include "sim/node_render.h"
#include "sim/profiles.h"
#include "src/gpu/vfio/vfio.h"

namespace gpulet::vfio::testing {

class TestTree {
 public:
  TestTree() {
    char tmpl[] = "/tmp/gpulet-vfio-XXXXXX";
    const char* made = ::mkdtemp(tmpl);
    EXPECT_NE(made, nullptr);
    root_ = made == nullptr ? "/nonexistent" : made;
  }
  ~TestTree() {
    std::error_code ec;
    std::filesystem::remove_all(root_, ec);
  }
  TestTree(const TestTree&) = delete;
  TestTree& operator=(const TestTree&) = delete;

  // Renders a built-in profile (device nodes as files).
  void Render(const std::string& profile) {
    absl::StatusOr<sim::Machine> m = sim::LoadMachine(profile);
    ASSERT_TRUE(m.ok()) << m.status();
    sim::RenderOptions options;
    options.root = root_;
    options.dev_nodes = sim::DevNodes::kFiles;
    absl::Status s = sim::RenderNode(*m, options);
    ASSERT_TRUE(s.ok()) << s;
  }

  Roots roots() const { return {root_ + "/sys", root_ + "/dev"}; }
  const std::string& root() const { return root_; }
  std::string Pci(const std::string& bdf) const {
    return root_ + "/sys/bus/pci/devices/" + bdf;
  }
  void Write(const std::string& path, const std::string& text) const {
    std::ofstream(path, std::ios::trunc) << text;
  }

 private:
  std::string root_;
};

}  // namespace gpulet::vfio::testing
