#include "src/runtime/ldcache_hook.h"

#include <fcntl.h>
#include <spawn.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cerrno>
#include <exception>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "nlohmann/json.hpp"
#include "src/common/errors.h"
#include "src/common/file_util.h"
#include "src/common/logging.h"
#include "src/common/unique_fd.h"
#include "src/runtime/oci_config.h"

extern char** environ;

namespace gpulet::runtime {
namespace {

using nlohmann::json;

bool IsDir(const std::string& path) {
  struct stat st;
  return ::stat(path.c_str(), &st) == 0 && S_ISDIR(st.st_mode);
}

using Fd = common::UniqueFd;

// The image controls everything under the rootfs, so every component is
// opened relative to its parent with O_NOFOLLOW: a symlinked /etc or
// /etc/ld.so.conf.d must not make this host-side write land outside it.
absl::Status WriteConfFile(const std::string& root,
                           const std::vector<std::string>& folders) {
  Fd root_fd(::open(root.c_str(), O_DIRECTORY | O_CLOEXEC));
  if (root_fd.get() < 0) return common::ErrnoToStatus(errno, "open " + root);
  if (::mkdirat(root_fd.get(), "etc", 0755) != 0 && errno != EEXIST) {
    return common::ErrnoToStatus(errno, absl::StrCat("mkdir ", root, "/etc"));
  }
  Fd etc(::openat(root_fd.get(), "etc", O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC));
  if (etc.get() < 0) {
    // A symlinked /etc: leave it to ldconfig, which resolves it chrooted.
    GPULET_LOG(WARNING) << "update-ldcache: " << root
                        << "/etc is not a directory; not writing ld.so.conf.d";
    return absl::OkStatus();
  }
  if (folders.empty()) return absl::OkStatus();
  Fd conf_dir(::openat(etc.get(), "ld.so.conf.d",
                       O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC));
  if (conf_dir.get() < 0) return absl::OkStatus();  // image has none
  Fd file(::openat(conf_dir.get(), "00-gpulet-cdi.conf",
                   O_WRONLY | O_CREAT | O_TRUNC | O_NOFOLLOW | O_CLOEXEC,
                   0644));
  if (file.get() < 0) {
    return common::ErrnoToStatus(
        errno,
        absl::StrCat("create ", root, "/etc/ld.so.conf.d/00-gpulet-cdi.conf"));
  }
  const std::string text = absl::StrCat(absl::StrJoin(folders, "\n"), "\n");
  return common::WriteAll(file.get(), text, "00-gpulet-cdi.conf");
}

absl::Status RunAndWait(std::vector<std::string> argv) {
  std::vector<char*> ptrs;
  for (std::string& arg : argv) ptrs.push_back(arg.data());
  ptrs.push_back(nullptr);
  pid_t pid = -1;
  int rc = ::posix_spawn(&pid, argv[0].c_str(), nullptr, nullptr, ptrs.data(),
                         environ);
  if (rc != 0) return common::ErrnoToStatus(rc, absl::StrCat("run ", argv[0]));
  int status = 0;
  while (::waitpid(pid, &status, 0) < 0) {
    if (errno != EINTR) return common::ErrnoToStatus(errno, "waitpid ldconfig");
  }
  if (!WIFEXITED(status) || WEXITSTATUS(status) != 0) {
    return absl::InternalError(
        absl::StrCat(absl::StrJoin(argv, " "), ": exit status ", status));
  }
  return absl::OkStatus();
}

}  // namespace

absl::StatusOr<std::string> ContainerRootFromState(
    absl::string_view state_json) {
  json state;
  try {
    state = json::parse(state_json.begin(), state_json.end());
  } catch (const std::exception& e) {
    return absl::InvalidArgumentError(
        absl::StrCat("container state on stdin: ", e.what()));
  }
  if (!state.is_object() || !state.contains("bundle") ||
      !state["bundle"].is_string()) {
    return absl::InvalidArgumentError(
        "container state on stdin: bundle missing or not a string");
  }
  const std::string bundle = state["bundle"].get<std::string>();
  const std::string path = absl::StrCat(bundle, "/config.json");
  absl::StatusOr<std::string> text = common::ReadFile(path);
  if (!text.ok()) return text.status();
  absl::StatusOr<json> config = ParseOciConfig(*text, path);
  if (!config.ok()) return config.status();
  std::string root = (*config)["root"]["path"].get<std::string>();
  if (root[0] != '/') root = absl::StrCat(bundle, "/", root);
  if (root == "/" || !IsDir(root)) {
    return absl::FailedPreconditionError(
        absl::StrCat(path, ": root.path ", root, " is not a container root"));
  }
  return root;
}

absl::Status UpdateLdCache(absl::string_view state_json,
                           const std::vector<std::string>& folders,
                           const std::string& ldconfig_path) {
  absl::StatusOr<std::string> root = ContainerRootFromState(state_json);
  if (!root.ok()) return root.status();
  if (::access(ldconfig_path.c_str(), X_OK) != 0) {
    GPULET_LOG(WARNING) << "update-ldcache: no ldconfig at " << ldconfig_path
                        << "; leaving the container's ld cache as it is";
    return absl::OkStatus();
  }
  // ldconfig -r writes <root>/etc/ld.so.cache, so minimal images get an
  // /etc; ldconfig itself chroots before touching any path.
  if (absl::Status s = WriteConfFile(*root, folders); !s.ok()) return s;
  std::vector<std::string> argv = {ldconfig_path, "-r", *root};
  argv.insert(argv.end(), folders.begin(), folders.end());
  return RunAndWait(std::move(argv));
}

}  // namespace gpulet::runtime
