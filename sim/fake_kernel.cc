#include "sim/fake_kernel.h"

#include <poll.h>
#include <sys/eventfd.h>
#include <sys/inotify.h>
#include <sys/socket.h>
#include <sys/un.h>

#include <cerrno>
#include <cstdint>
#include <cstring>
#include <filesystem>

#include "absl/strings/numbers.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/strip.h"
#include "src/base/common/errors.h"
#include "src/base/common/file_util.h"
#include "src/base/common/status_macros.h"

namespace gpulet::sim {
namespace {

namespace fs = std::filesystem;

std::string Trimmed(const std::string& path) {
  absl::StatusOr<std::string> text = common::ReadFile(path);
  if (!text.ok()) return "";
  return std::string(absl::StripAsciiWhitespace(*text));
}

uint32_t Hex(const std::string& path) {
  const std::string text = Trimmed(path);
  absl::string_view view = text;
  absl::ConsumePrefix(&view, "0x");
  uint32_t value = 0;
  return absl::SimpleHexAtoi(view, &value) ? value : 0;
}

}  // namespace

absl::StatusOr<std::unique_ptr<FakeKernel>> FakeKernel::Start(
    const SysTree& tree) {
  common::UniqueFd inotify(inotify_init1(IN_NONBLOCK | IN_CLOEXEC));
  if (!inotify.valid()) return common::ErrnoToStatus(errno, "inotify_init1");
  common::UniqueFd wake(eventfd(0, EFD_NONBLOCK | EFD_CLOEXEC));
  if (!wake.valid()) return common::ErrnoToStatus(errno, "eventfd");
  auto kernel = std::make_unique<FakeKernel>(Token{}, tree, std::move(inotify),
                                             std::move(wake));
  std::vector<std::string> dirs = {tree.sys + "/bus/pci"};
  std::error_code ec;
  for (const auto& entry :
       fs::directory_iterator(tree.sys + "/bus/pci/drivers", ec)) {
    dirs.push_back(entry.path().string());
  }
  if (ec) {
    return absl::NotFoundError(absl::StrCat(
        "fake kernel: list ", tree.sys, "/bus/pci/drivers: ", ec.message()));
  }
  for (const std::string& dir : dirs) {
    const int wd =
        inotify_add_watch(kernel->inotify_.get(), dir.c_str(), IN_CLOSE_WRITE);
    if (wd < 0) {
      return common::ErrnoToStatus(errno, "fake kernel: watch " + dir);
    }
    kernel->watches_.emplace_back(wd, dir);
  }
  kernel->thread_ =
      std::jthread([k = kernel.get()](std::stop_token stop) { k->Run(stop); });
  return kernel;
}

FakeKernel::FakeKernel(Token, SysTree tree, common::UniqueFd inotify,
                       common::UniqueFd wake)
    : tree_(std::move(tree)),
      inotify_(std::move(inotify)),
      wake_(std::move(wake)) {}

FakeKernel::~FakeKernel() {
  thread_.request_stop();
  const uint64_t one = 1;
  // A full eventfd counter still wakes the poll; nothing to handle.
  [[maybe_unused]] ssize_t n = ::write(wake_.get(), &one, sizeof(one));
  if (thread_.joinable()) thread_.join();
}

std::vector<std::string> FakeKernel::Errors() const {
  absl::MutexLock lock(&mu_);
  return errors_;
}

void FakeKernel::Run(std::stop_token stop) {
  alignas(inotify_event) char buffer[8192];
  while (!stop.stop_requested()) {
    pollfd fds[2] = {{inotify_.get(), POLLIN, 0}, {wake_.get(), POLLIN, 0}};
    if (::poll(fds, 2, -1) < 0 && errno != EINTR) return;
    if (fds[1].revents != 0) return;
    for (;;) {
      const ssize_t len = ::read(inotify_.get(), buffer, sizeof(buffer));
      if (len <= 0) break;
      for (ssize_t off = 0; off < len;) {
        const auto* event =
            reinterpret_cast<const inotify_event*>(buffer + off);
        off += static_cast<ssize_t>(sizeof(inotify_event) + event->len);
        if (event->len == 0) continue;
        for (const auto& [wd, dir] : watches_) {
          if (wd == event->wd) Handle(dir, event->name);
        }
      }
    }
  }
}

void FakeKernel::Handle(const std::string& dir, const std::string& name) {
  const std::string driver = fs::path(dir).filename().string();
  const std::string bdf = Trimmed(dir + "/" + name);
  if (bdf.empty()) return;
  absl::Status status;
  std::string action, bound;
  if (name == "bind" && driver != "pci") {
    status = BindFunction(tree_, bdf, driver);
    action = "bind", bound = driver;
  } else if (name == "unbind" && driver != "pci") {
    status = UnbindFunction(tree_, bdf, driver);
    action = "unbind";
  } else if (name == "drivers_probe") {
    const std::string fn = FunctionDir(tree_, bdf);
    if (!fs::exists(fn + "/driver")) {
      std::string target = Trimmed(fn + "/driver_override");
      if (target.empty() || target == "(null)") {
        target = NativeDriver(Hex(fn + "/class"),
                              static_cast<uint16_t>(Hex(fn + "/vendor")));
      }
      if (!target.empty()) {
        status = BindFunction(tree_, bdf, target);
        action = "bind", bound = target;
      }
    }
  }
  if (!status.ok()) {
    absl::MutexLock lock(&mu_);
    errors_.emplace_back(status.message());
    return;
  }
  if (!action.empty()) SendUevent(action, bdf, bound);
}

// As the kernel's kobject_uevent: "<action>@<devpath>" then KEY=value
// fields, each NUL-terminated, in one datagram. Nobody listening is fine,
// as it is for the kernel.
void FakeKernel::SendUevent(const std::string& action, const std::string& bdf,
                            const std::string& driver) {
  if (tree_.uevent_socket.empty()) return;
  const std::string devpath =
      absl::StrCat("/devices/pci", bdf.substr(0, 4), ":00/", bdf);
  std::string message = absl::StrCat(action, "@", devpath);
  message.push_back('\0');
  for (const std::string& field :
       {absl::StrCat("ACTION=", action), absl::StrCat("DEVPATH=", devpath),
        std::string("SUBSYSTEM=pci"),
        driver.empty() ? std::string() : absl::StrCat("DRIVER=", driver),
        absl::StrCat("PCI_SLOT_NAME=", bdf),
        absl::StrCat("SEQNUM=", ++seqnum_)}) {
    if (field.empty()) continue;
    message += field;
    message.push_back('\0');
  }
  sockaddr_un address{};
  address.sun_family = AF_UNIX;
  if (tree_.uevent_socket.size() >= sizeof(address.sun_path)) return;
  std::memcpy(address.sun_path, tree_.uevent_socket.data(),
              tree_.uevent_socket.size());
  common::UniqueFd fd(::socket(AF_UNIX, SOCK_DGRAM | SOCK_CLOEXEC, 0));
  if (!fd.valid()) return;
  [[maybe_unused]] ssize_t n =
      ::sendto(fd.get(), message.data(), message.size(), MSG_DONTWAIT,
               reinterpret_cast<const sockaddr*>(&address), sizeof(address));
}

}  // namespace gpulet::sim
