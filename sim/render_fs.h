// File-system steps of node rendering (node_render.h), each idempotent:
// running it again with the same arguments changes nothing, with other
// arguments replaces what is there. Errors name the path.
//
// Thread safety: stateless; touches only the paths given.
#pragma once

#include <sys/types.h>

#include <functional>
#include <string>

#include "absl/status/status.h"
#include "absl/strings/string_view.h"
#include "sim/node_render.h"

namespace gpulet::sim::render {

// mkdir -p.
absl::Status EnsureDir(const std::string& path);

// Writes `contents` atomically (temporary file + rename) with `mode`,
// unless the file already holds exactly these bytes and mode.
absl::Status WriteFile(const std::string& path, absl::string_view contents,
                       mode_t mode = 0644);

// Makes `path` a symbolic link to `target`, replacing whatever is there
// (through a temporary link and rename, so readers never see it missing).
absl::Status Symlink(const std::string& target, const std::string& path);

// A character device major:minor (or, for DevNodes::kFiles, an empty
// regular file) at `path`, replacing anything else there.
absl::Status CharDevice(const std::string& path, unsigned major, unsigned minor,
                        DevNodes how);

// Removes every entry of `dir` whose name `stale` accepts (recursively).
// A missing dir is fine.
absl::Status RemoveStale(const std::string& dir,
                         const std::function<bool(const std::string&)>& stale);

}  // namespace gpulet::sim::render
