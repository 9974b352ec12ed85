// Test-only: the check every code path that writes a CDI spec runs on what
// it wrote: each hook, spec-wide or in a device, has an explicit `env` (a
// hook without one runs with the container's environment; docs/runtime.md,
// "Threat model") that sets no dynamic-loader variable, and a timeout.
// Header-only; stateless.
#pragma once

#include <string>

#include "absl/strings/match.h"
#include "gtest/gtest.h"
#include "src/model/cdi/spec.h"

namespace gpulet::cdi::testing {

inline void ExpectHooksConfined(const ContainerEdits& edits,
                                const std::string& where) {
  for (const Hook& hook : edits.hooks) {
    EXPECT_FALSE(hook.env.empty())
        << where << ": hook " << hook.path << " has no env";
    for (const std::string& entry : hook.env) {
      EXPECT_FALSE(absl::StartsWith(entry, "LD_"))
          << where << ": hook " << hook.path << " env " << entry;
    }
    EXPECT_TRUE(hook.timeout.has_value())
        << where << ": hook " << hook.path << " has no timeout";
  }
}

inline void ExpectEveryHookConfined(const Spec& spec) {
  ExpectHooksConfined(spec.edits, spec.kind + " containerEdits");
  for (const Device& device : spec.devices) {
    ExpectHooksConfined(device.edits, spec.kind + "=" + device.name);
  }
}

}  // namespace gpulet::cdi::testing
