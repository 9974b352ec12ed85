// gpulet-runtime's cost on the container start path: `gpulet-runtime
// create` against plain `runc create` on the same bundle, on the fake
// driver root of test/runtime (root, runc and busybox-static needed;
// otherwise it says so and exits 0). Each figure is the median of 20 runs;
// the runs of the three variants are interleaved so drift hits all alike.
// Accepts and ignores --benchmark_* flags (scripts/run-benchmarks).
#include <fcntl.h>
#include <spawn.h>
#include <stdlib.h>
#include <sys/wait.h>

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <string>
#include <vector>

#include "absl/strings/str_cat.h"
#include "src/base/common/file_util.h"
#include "src/runtime/wrapper/create.h"
#include "src/runtime/wrapper/runtime_config.h"
#include "test/runtime/runc_fixture.h"

extern char** environ;

namespace {

using gpulet::testing::RuncFixture;
using Clock = std::chrono::steady_clock;
constexpr int kRuns = 20;

// Runs argv with stdio on /dev/null (create's stdio stays with the
// container); returns the exit code.
int Quiet(std::vector<std::string> argv) {
  posix_spawn_file_actions_t actions;
  posix_spawn_file_actions_init(&actions);
  for (int fd = 0; fd < 3; ++fd) {
    posix_spawn_file_actions_addopen(&actions, fd, "/dev/null", O_RDWR, 0);
  }
  std::vector<char*> ptrs;
  for (std::string& a : argv) ptrs.push_back(a.data());
  ptrs.push_back(nullptr);
  pid_t pid = -1;
  int rc = posix_spawn(&pid, argv[0].c_str(), &actions, nullptr, ptrs.data(),
                       environ);
  posix_spawn_file_actions_destroy(&actions);
  if (rc != 0) return -1;
  int status = 0;
  waitpid(pid, &status, 0);
  return WIFEXITED(status) ? WEXITSTATUS(status) : -1;
}

double Median(std::vector<double> v) {
  std::sort(v.begin(), v.end());
  return (v[v.size() / 2] + v[(v.size() - 1) / 2]) / 2;
}

struct Variant {
  std::string name;
  std::string binary;
  std::string bundle;
  std::string pristine;  // config.json restored before every run
  std::vector<double> ms;
};

bool TimeCreate(RuncFixture& fixture, Variant& v, int index, int run) {
  if (!gpulet::common::WriteFileAtomic(v.bundle + "/config.json", v.pristine)
           .ok()) {
    return false;
  }
  const std::string id = absl::StrCat("bench-", run + 1, "-", index);
  const Clock::time_point start = Clock::now();
  int rc = Quiet({v.binary, "--root", fixture.state_root(), "create",
                  "--bundle", v.bundle, id});
  const double ms =
      std::chrono::duration<double, std::milli>(Clock::now() - start).count();
  Quiet({fixture.runc(), "--root", fixture.state_root(), "delete", "--force",
         id});
  if (rc != 0) {
    std::fprintf(stderr, "%s create failed (exit %d)\n", v.name.c_str(), rc);
    return false;
  }
  if (run >= 0) v.ms.push_back(ms);
  return true;
}

double TimePrepareOnly(RuncFixture& fixture, const Variant& gpu) {
  gpulet::runtime::PrepareOptions options;
  options.config.driver_root = fixture.driver_root();
  options.config.spec_dirs = {fixture.spec_dir()};
  std::vector<double> ms;
  for (int i = 0; i < kRuns; ++i) {
    (void)gpulet::common::WriteFileAtomic(gpu.bundle + "/config.json",
                                          gpu.pristine);
    const Clock::time_point start = Clock::now();
    auto result = gpulet::runtime::PrepareBundle(gpu.bundle, options);
    ms.push_back(std::chrono::duration<double, std::milli>(Clock::now() - start)
                     .count());
    if (!result.ok()) return -1;
  }
  return Median(ms);
}

}  // namespace

int main() {
  std::string why;
  if (!gpulet::testing::CanRunContainers(&why)) {
    std::printf("runtime_create_bench: skipped: %s\n", why.c_str());
    return 0;
  }
  auto fixture =
      RuncFixture::Create({GPULET_RUNTIME_BINARY, GPULET_FAKE_LIB_DIR});
  if (!fixture.ok()) {
    std::fprintf(stderr, "fixture: %s\n",
                 std::string(fixture.status().message()).c_str());
    return 1;
  }
  RuncFixture& fx = **fixture;
  setenv(gpulet::config::kRuntimeConfigEnv, fx.runtime_config().c_str(), 1);
  std::vector<Variant> variants = {
      {"runc", fx.runc(), "", "", {}},
      {"gpulet-runtime (no request)", GPULET_RUNTIME_BINARY, "", "", {}},
      {"gpulet-runtime (NVIDIA_VISIBLE_DEVICES=1)",
       GPULET_RUNTIME_BINARY,
       "",
       "",
       {}},
  };
  const std::vector<std::string> sleep_cmd = {"sleep", "1000"};
  for (size_t i = 0; i < variants.size(); ++i) {
    std::vector<std::string> env;
    if (i == 2) env = {"NVIDIA_VISIBLE_DEVICES=1"};
    auto bundle = fx.MakeBundle(absl::StrCat("bundle", i), sleep_cmd, env);
    if (!bundle.ok()) return 1;
    variants[i].bundle = *bundle;
    variants[i].pristine = *gpulet::common::ReadFile(*bundle + "/config.json");
  }
  // runc alone on the config.json gpulet-runtime writes: what the same
  // devices, mounts and ld-cache hook cost without the wrapper (what plain
  // CDI injection in containerd would cost too).
  {
    gpulet::runtime::PrepareOptions options;
    options.config.driver_root = fx.driver_root();
    options.config.spec_dirs = {fx.spec_dir()};
    Variant injected = {
        "runc (config.json already injected)", fx.runc(), "", "", {}};
    auto bundle =
        fx.MakeBundle("bundle3", sleep_cmd, {"NVIDIA_VISIBLE_DEVICES=1"});
    if (!bundle.ok() ||
        !gpulet::runtime::PrepareBundle(*bundle, options).ok()) {
      return 1;
    }
    injected.bundle = *bundle;
    injected.pristine = *gpulet::common::ReadFile(*bundle + "/config.json");
    variants.push_back(std::move(injected));
  }
  for (int run = -1; run < kRuns; ++run) {  // run -1 warms caches up
    for (size_t i = 0; i < variants.size(); ++i) {
      if (!TimeCreate(fx, variants[i], static_cast<int>(i), run)) return 1;
    }
  }
  const double base = Median(variants[0].ms);
  const double injected_base = Median(variants[3].ms);
  std::printf("%-44s %10s %12s\n", "create (median of 20)", "ms",
              "overhead ms");
  for (size_t i = 0; i < variants.size(); ++i) {
    const double m = Median(variants[i].ms);
    // The GPU variant's wrapper overhead is measured against runc on the
    // same injected config; the others against runc on the plain bundle.
    const double against = i == 2 ? injected_base : base;
    std::printf("%-44s %10.2f %12.2f\n", variants[i].name.c_str(), m,
                i == 3 ? m - base : m - against);
  }
  std::printf("%-44s %10.3f\n", "PrepareBundle in process (1 GPU)",
              TimePrepareOnly(fx, variants[2]));
  return 0;
}
