// libFuzzer target: the CDI spec decoder and validator on any text, JSON or
// YAML (gpulet-runtime reads every file in the spec dirs). ParseSpec then
// Validate must return a value or an error, never crash, hang or read out of
// bounds; a spec that validates must encode, and decode again to the same
// value, in both formats.
#include <cstddef>
#include <cstdint>
#include <cstdlib>
#include <string>

#include "src/cdi/spec_codec.h"
#include "src/cdi/validate.h"

namespace {

void Check(bool ok) {
  if (!ok) std::abort();
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  const std::string text(reinterpret_cast<const char*>(data), size);
  absl::StatusOr<gpulet::cdi::Spec> spec =
      gpulet::cdi::ParseSpec(text, "fuzz.yaml");
  if (!spec.ok()) return 0;
  if (!gpulet::cdi::Validate(*spec).ok()) return 0;
  for (gpulet::cdi::Format format :
       {gpulet::cdi::Format::kJson, gpulet::cdi::Format::kYaml}) {
    absl::StatusOr<gpulet::cdi::Spec> again = gpulet::cdi::ParseSpec(
        gpulet::cdi::FormatSpec(*spec, format), "fuzz.again");
    Check(again.ok());
    Check(*again == *spec);
  }
  return 0;
}
