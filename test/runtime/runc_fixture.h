// A fake GPU node for testing gpulet-runtime under real runc: a driver root
// with device nodes made by mknod (NVIDIA's major 195 for /dev/nvidia<N>,
// nvidiactl = 195:255, nvidia-modeset = 195:254; nvidia-uvm's major is
// dynamic on real hosts, 235 here, uvm = 235:0, uvm-tools = 235:1),
// versioned driver libraries and an ld.so.cache built by `ldconfig -r`; a
// CDI spec for it (encoded with the cdi layer's own codec); a busybox
// rootfs; a bundle; and a runtime config pointing gpulet-runtime at it all.
// Used by the ctest tests and by bench/runtime_create_bench.
//
// Ownership: the fixture owns its temporary directory and removes it (and
// any container it started) on destruction. Thread safety: none.
#pragma once

#include <string>
#include <vector>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "nlohmann/json.hpp"
#include "src/model/cdi/spec.h"

namespace gpulet::testing {

inline constexpr int kFakeGpuCount = 4;
inline constexpr int kNvidiaMajor = 195;
inline constexpr int kUvmMajor = 235;
inline constexpr char kFakeLibDir[] = "/usr/lib/x86_64-linux-gnu";
// The NVML simulator's driver version (pcie-t4), so `gpulet cdi generate`
// on the simulator finds these libraries.
inline constexpr char kFakeDriverVersion[] = "535.161.08";

struct FixturePaths {
  std::string gpulet_runtime;  // the binary under test
  std::string fake_lib_dir;    // holds lib<stem>.so.<version> files
};

// True when this process can run runc containers (root, runc on PATH,
// busybox-static present); `why` says what is missing otherwise.
bool CanRunContainers(std::string* why);

class RuncFixture {
 public:
  // Builds everything under a fresh /tmp directory.
  static absl::StatusOr<std::unique_ptr<RuncFixture>> Create(
      const FixturePaths& paths);
  ~RuncFixture();
  RuncFixture(const RuncFixture&) = delete;
  RuncFixture& operator=(const RuncFixture&) = delete;

  const std::string& dir() const { return dir_; }
  std::string driver_root() const { return dir_ + "/driver"; }
  std::string spec_dir() const { return dir_ + "/cdi"; }
  std::string state_root() const { return dir_ + "/state"; }
  std::string runtime_config() const { return dir_ + "/runtime.yaml"; }
  const std::string& runc() const { return runc_; }
  const cdi::Spec& spec() const { return spec_; }

  // Writes the runtime config with `extra` YAML lines appended.
  absl::Status WriteRuntimeConfig(const std::string& extra = "");

  // A fresh bundle <dir>/<name> with its own rootfs copy, whose process
  // runs `args` with `env` added; returns the bundle path.
  absl::StatusOr<std::string> MakeBundle(const std::string& name,
                                         const std::vector<std::string>& args,
                                         const std::vector<std::string>& env);

  // Reads and writes a bundle's config.json.
  absl::StatusOr<nlohmann::json> ReadConfig(const std::string& bundle) const;
  absl::Status WriteConfig(const std::string& bundle,
                           const nlohmann::json& config) const;

  // Container IDs to force-delete on destruction.
  void Track(const std::string& id) { containers_.push_back(id); }

 private:
  RuncFixture(std::string dir, FixturePaths paths)
      : dir_(std::move(dir)), paths_(std::move(paths)) {}
  absl::Status Build();
  absl::Status MakeDriverRoot();
  absl::Status MakeSpec();

  std::string dir_;
  FixturePaths paths_;
  std::string runc_;
  cdi::Spec spec_;
  std::vector<std::string> containers_;
};

// What a container printed: `ls /dev`, the device cgroup's devices.list,
// and `ls` of the library dir, split by marker lines.
struct ContainerView {
  std::vector<std::string> dev;
  std::vector<std::string> cgroup_rules;
  std::vector<std::string> libs;
};
// The shell command that prints a ContainerView.
std::vector<std::string> ViewCommand();
ContainerView ParseView(const std::string& out);

}  // namespace gpulet::testing
