// Test helpers for the machine parser's tests (machine_parser_test.cc,
// machine_parser_reject_test.cc): machine-file text with one or two GPUs,
// each GPU entry taking extra lines.
#pragma once

#include <string>

#include "absl/strings/str_cat.h"

namespace gpulet::sim::test_yaml {

inline constexpr char kUuid0[] = "GPU-00000000-0000-4000-8000-000000000000";
inline constexpr char kUuid1[] = "GPU-11111111-1111-4111-8111-111111111111";

// One GPU entry (list item at two spaces) with `extra` lines appended.
inline std::string GpuEntry(const std::string& uuid, const std::string& bus,
                            const std::string& extra = "") {
  return absl::StrCat("  - uuid: ", uuid, "\n    busId: \"", bus,
                      "\"\n    name: Test GPU\n    memory: 16GiB\n", extra);
}

// A machine file of two GPUs (kUuid0, kUuid1), with extra lines for each.
inline std::string TwoGpus(const std::string& extra0 = "",
                           const std::string& extra1 = "") {
  return absl::StrCat("gpus:\n", GpuEntry(kUuid0, "0000:07:00.0", extra0),
                      GpuEntry(kUuid1, "0000:0F:00.0", extra1));
}

}  // namespace gpulet::sim::test_yaml
