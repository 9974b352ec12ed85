#include "src/gpu/mps/compute_policy.h"

#include "absl/strings/str_cat.h"
#include "src/base/common/errors.h"
#include "src/gpu/mps/control_process.h"

namespace gpulet::mps {

std::optional<int> TimesliceLevel(const std::string& interval) {
  if (interval == "Default") return 0;
  if (interval == "Short") return 1;
  if (interval == "Medium") return 2;
  if (interval == "Long") return 3;
  return std::nullopt;
}

std::vector<std::string> TimesliceCommand(const std::string& nvidia_smi,
                                          const std::string& uuid, int level) {
  return {nvidia_smi, "compute-policy", "-i", uuid,
          absl::StrCat("--set-timeslice=", level)};
}

absl::Status SetTimeslice(const std::string& nvidia_smi,
                          const std::string& uuid, int level,
                          absl::Duration timeout) {
  absl::Status s = RunTool(TimesliceCommand(nvidia_smi, uuid, level), timeout);
  if (s.ok()) return s;
  return common::Annotate(s, absl::StrCat("set the time-slice of ", uuid));
}

std::vector<std::string> ComputeModeCommand(const std::string& nvidia_smi,
                                            const std::string& uuid,
                                            const std::string& mode) {
  return {nvidia_smi, "-i", uuid, "-c", mode};
}

absl::Status SetComputeMode(const std::string& nvidia_smi,
                            const std::string& uuid, const std::string& mode,
                            absl::Duration timeout) {
  absl::Status s = RunTool(ComputeModeCommand(nvidia_smi, uuid, mode), timeout);
  if (s.ok()) return s;
  return common::Annotate(
      s, absl::StrCat("set the compute mode of ", uuid, " to ", mode));
}

}  // namespace gpulet::mps
