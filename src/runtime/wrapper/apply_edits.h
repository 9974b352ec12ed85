// Applying CDI ContainerEdits to an OCI config.json (as nlohmann::json):
//   - device nodes → linux.devices (replacing an entry with the same path)
//     and an allow rule {allow, type, major, minor, access} appended to
//     linux.resources.devices; type/major/minor/fileMode missing from the
//     spec come from stat(2) of the host path;
//   - mounts → mounts (replacing one with the same destination), type
//     "bind" when unset, with "bind" added to the options of a bind mount
//     that has neither bind nor rbind;
//   - env → process.env (replacing the same key);
//   - hooks → hooks.<hookName>, appended; a hook without env gets
//     {cdi::kHookEnv} (never the container's environment);
//   - additional GIDs → process.user.additionalGids (except 0, once each).
// Fields the edits do not concern are left exactly as they were.
//
// Thread safety: pure apart from the HostDeviceLookup the caller passes.
#pragma once

#include <cstdint>
#include <functional>
#include <string>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "nlohmann/json.hpp"
#include "src/model/cdi/spec.h"

namespace gpulet::runtime {

struct HostDevice {
  std::string type;  // "c", "b" or "p"
  int64_t major = 0;
  int64_t minor = 0;
  uint32_t file_mode = 0;  // permission bits only
};

// Looks a device node up on the host; the seam lets unit tests run without
// real device nodes.
using HostDeviceLookup =
    std::function<absl::StatusOr<HostDevice>(const std::string& host_path)>;

// stat(2) of `host_path`; an error names the path; FailedPrecondition when
// it is not a device node or FIFO.
absl::StatusOr<HostDevice> StatHostDevice(const std::string& host_path);

// Applies `edits` to `config`. On error `config` may be partly edited; the
// caller discards it.
absl::Status ApplyEdits(const cdi::ContainerEdits& edits,
                        const HostDeviceLookup& lookup, nlohmann::json& config);

}  // namespace gpulet::runtime
