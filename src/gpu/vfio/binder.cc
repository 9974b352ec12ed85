#include "src/gpu/vfio/binder.h"

#include <fcntl.h>
#include <unistd.h>

#include <cerrno>
#include <thread>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "absl/strings/strip.h"
#include "src/base/common/errors.h"
#include "src/base/common/file_util.h"
#include "src/base/common/status_macros.h"
#include "src/base/common/unique_fd.h"

namespace gpulet::vfio {
namespace {

namespace fs = std::filesystem;
using Clock = std::chrono::steady_clock;

// How often a wait looks again; the kernel has answered long before.
constexpr std::chrono::milliseconds kPoll{2};

std::string DriverOf(const Roots& roots, const std::string& address) {
  std::error_code ec;
  const fs::path target =
      fs::read_symlink(roots.sys / "bus/pci/devices" / address / "driver", ec);
  return ec ? "" : target.filename().string();
}

// A sysfs attribute is written in place: never created, never renamed.
absl::Status WriteAttribute(const fs::path& path, const std::string& value) {
  common::UniqueFd fd(::open(path.c_str(), O_WRONLY | O_TRUNC | O_CLOEXEC));
  if (!fd.valid()) return common::ErrnoToStatus(errno, "open " + path.string());
  return common::WriteAll(fd.get(), value + "\n", path.string());
}

std::string Shown(const std::string& value) {
  return value.empty() ? "''" : value;
}

}  // namespace

Binder::Binder(Roots roots, Options options, std::ostream& out)
    : roots_(std::move(roots)), options_(std::move(options)), out_(out) {}

absl::Status Binder::Bind(const Gpu& gpu) {
  GPULET_ASSIGN_OR_RETURN(BindPlan plan, PlanBind(roots_, gpu));
  if (plan.writes.empty()) {
    out_ << "GPU " << plan.gpu << ": IOMMU group " << plan.group
         << " is on vfio-pci already; nothing to do\n";
    return absl::OkStatus();
  }
  if (!options_.dry_run) GPULET_RETURN_IF_ERROR(Remember(plan));
  GPULET_RETURN_IF_ERROR(Perform(plan));
  if (options_.dry_run) return absl::OkStatus();
  GPULET_RETURN_IF_ERROR(WaitForGroupNode(plan, true));
  out_ << "GPU " << plan.gpu << ": IOMMU group " << plan.group
       << " bound to vfio-pci (" << GroupDevicePath(roots_, plan.group).string()
       << ")\n";
  return absl::OkStatus();
}

absl::Status Binder::Unbind(const Gpu& gpu) {
  const BindPlan plan = PlanUnbind(roots_, gpu, Remembered(gpu));
  if (plan.writes.empty()) {
    out_ << "GPU " << plan.gpu << ": nothing in IOMMU group " << plan.group
         << " is on vfio-pci; nothing to do\n";
    return absl::OkStatus();
  }
  GPULET_RETURN_IF_ERROR(Perform(plan));
  if (options_.dry_run) return absl::OkStatus();
  Forget(plan);
  std::vector<std::string> now;
  for (const auto& [address, unused] : plan.previous) {
    const std::string driver = DriverOf(roots_, address);
    now.push_back(
        absl::StrCat(address, " on ", driver.empty() ? "no driver" : driver));
  }
  out_ << "GPU " << plan.gpu << ": IOMMU group " << plan.group
       << " unbound from vfio-pci: " << absl::StrJoin(now, ", ") << "\n";
  return absl::OkStatus();
}

absl::Status Binder::Perform(const BindPlan& plan) {
  for (const std::string& note : plan.notes) {
    out_ << "GPU " << plan.gpu << ": " << note << "\n";
  }
  for (const SysfsWrite& write : plan.writes) {
    if (options_.dry_run) {
      out_ << "echo " << Shown(write.value) << " > " << write.path.string()
           << "\n";
      continue;
    }
    GPULET_RETURN_IF_ERROR(Apply(plan, write));
  }
  return absl::OkStatus();
}

absl::Status Binder::Apply(const BindPlan& plan, const SysfsWrite& write) {
  if (absl::Status s = WriteAttribute(write.path, write.value); !s.ok()) {
    return absl::Status(
        s.code(), absl::StrCat("GPU ", plan.gpu, ": write ", Shown(write.value),
                               " to ", s.message()));
  }
  if (!write.wait) return absl::OkStatus();
  const Clock::time_point deadline = Clock::now() + options_.timeout;
  for (;;) {
    const std::string driver = DriverOf(roots_, write.function);
    if (write.any_driver ? !driver.empty() : driver == write.expect_driver) {
      return absl::OkStatus();
    }
    if (Clock::now() >= deadline) {
      // A probe nothing answers leaves the function unbound; say so after.
      if (write.any_driver) return absl::OkStatus();
      return absl::DeadlineExceededError(absl::StrCat(
          "GPU ", plan.gpu, ": after writing ", write.value, " to ",
          write.path.string(), ", ", write.function, " is bound to ",
          driver.empty() ? "no driver" : driver, ", not ",
          write.expect_driver.empty() ? "unbound" : write.expect_driver,
          " (see dmesg)"));
    }
    std::this_thread::sleep_for(kPoll);
  }
}

absl::Status Binder::WaitForGroupNode(const BindPlan& plan, bool present) {
  const fs::path node = GroupDevicePath(roots_, plan.group);
  const Clock::time_point deadline = Clock::now() + options_.timeout;
  std::error_code ec;
  while (fs::exists(node, ec) != present) {
    if (Clock::now() >= deadline) {
      return absl::DeadlineExceededError(absl::StrCat(
          "GPU ", plan.gpu, ": every function of IOMMU group ", plan.group,
          " is on vfio-pci, but ", node.string(), " did not appear"));
    }
    std::this_thread::sleep_for(kPoll);
  }
  return absl::OkStatus();
}

absl::Status Binder::Remember(const BindPlan& plan) {
  std::error_code ec;
  fs::create_directories(options_.state_dir, ec);
  if (ec) {
    return absl::InternalError(absl::StrCat("GPU ", plan.gpu, ": create ",
                                            options_.state_dir.string(), ": ",
                                            ec.message()));
  }
  for (const auto& [address, driver] : plan.previous) {
    const fs::path file = options_.state_dir / address;
    // An earlier, interrupted bind already recorded the original driver.
    if (fs::exists(file, ec)) continue;
    GPULET_RETURN_IF_ERROR(
        common::WriteFileAtomic(file.string(), driver + "\n"));
  }
  return absl::OkStatus();
}

std::map<std::string, std::string> Binder::Remembered(const Gpu& gpu) const {
  std::map<std::string, std::string> out;
  for (const PciFunction& fn : gpu.group) {
    absl::StatusOr<std::string> text =
        common::ReadFile((options_.state_dir / fn.address).string());
    if (text.ok())
      out[fn.address] = std::string(absl::StripAsciiWhitespace(*text));
  }
  return out;
}

void Binder::Forget(const BindPlan& plan) const {
  std::error_code ec;
  for (const auto& [address, unused] : plan.previous) {
    fs::remove(options_.state_dir / address, ec);
  }
}

}  // namespace gpulet::vfio
