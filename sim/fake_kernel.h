// FakeKernel: the kernel's reaction to PCI driver-binding writes, for a
// rendered sysfs tree (sysfs_tree.h). A thread watches the tree with inotify
// and, when a writer closes
//   <sys>/bus/pci/drivers/<driver>/unbind   unbinds the function written,
//   <sys>/bus/pci/drivers/<driver>/bind     binds it to <driver>,
//   <sys>/bus/pci/drivers_probe             binds it to its driver_override,
//                                           else to its native driver,
// moving the `driver` links and making or removing /dev/vfio/<group> and
// the iommufd cdevs as the kernel does. Each bind and unbind is announced as
// the kernel announces it on NETLINK_KOBJECT_UEVENT ("unbind@<devpath>",
// ACTION, DEVPATH, SUBSYSTEM=pci, DRIVER, PCI_SLOT_NAME, SEQNUM), sent to
// the tree's uevent_socket when it has one and someone listens there. So
// `gpulet vfio bind` runs unchanged against the simulated node: its writes are
// plain file writes that land in the tree, and what it reads back is what the
// kernel would show. Unlike the kernel, the reaction follows the write
// (asynchronously); readers wait for the links to move, as they may on a real
// host too.
//
// Writes the kernel would refuse (binding a bound function, an unknown
// address) change nothing and are recorded in Errors().
//
// Thread safety: Errors() may be called from any thread. The watcher thread
// is owned and joined by the destructor.
#pragma once

#include <memory>
#include <string>
#include <thread>
#include <vector>

#include "absl/base/thread_annotations.h"
#include "absl/status/statusor.h"
#include "absl/synchronization/mutex.h"
#include "sim/sysfs_tree.h"
#include "src/base/common/unique_fd.h"

namespace gpulet::sim {

class FakeKernel {
 public:
  // Watches the tree rendered at `tree`. Errors name the path that cannot be
  // watched (a tree that was not rendered).
  static absl::StatusOr<std::unique_ptr<FakeKernel>> Start(const SysTree& tree);
  ~FakeKernel();

  // Only Start() makes one (Token is private).
  struct Token {
   private:
    friend class FakeKernel;
    Token() = default;
  };
  FakeKernel(Token, SysTree tree, common::UniqueFd inotify,
             common::UniqueFd wake);

  FakeKernel(const FakeKernel&) = delete;
  FakeKernel& operator=(const FakeKernel&) = delete;

  // The writes refused so far, one message each.
  std::vector<std::string> Errors() const;

 private:
  void Run(std::stop_token stop);
  void Handle(const std::string& dir, const std::string& name);
  void SendUevent(const std::string& action, const std::string& bdf,
                  const std::string& driver);

  const SysTree tree_;
  common::UniqueFd inotify_;
  common::UniqueFd wake_;  // eventfd: the destructor's stop signal
  std::vector<std::pair<int, std::string>> watches_;  // wd -> directory
  uint64_t seqnum_ = 0;                               // the watcher thread's
  mutable absl::Mutex mu_;
  std::vector<std::string> errors_ ABSL_GUARDED_BY(mu_);
  std::jthread thread_;
};

}  // namespace gpulet::sim
