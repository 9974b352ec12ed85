// libFuzzer target: the CDI spec decoder and validator on any text, JSON or
// YAML (gpulet-runtime reads every file in the spec dirs). ParseSpec then
// Validate must return a value or an error, never crash, hang or read out of
// bounds; a spec that validates must encode, and decode again to the same
// value, in both formats.
#include <cstddef>
#include <cstdint>
#include <cstdlib>
#include <string>

#include "src/model/cdi/spec_codec.h"
#include "src/model/cdi/validate.h"

namespace {

void Check(bool ok) {
  if (!ok) std::abort();
}

// Well-formed UTF-8 (no overlong forms, surrogates or values past
// U+10FFFF).
bool IsUtf8(const std::string& s) {
  size_t i = 0;
  while (i < s.size()) {
    const auto c = static_cast<unsigned char>(s[i]);
    const int extra = c < 0x80         ? 0
                      : (c >> 5) == 6  ? 1
                      : (c >> 4) == 14 ? 2
                      : (c >> 3) == 30 ? 3
                                       : -1;
    if (extra < 0) return false;
    uint32_t cp = extra == 0 ? c : c & (0x3f >> extra);
    for (int k = 1; k <= extra; ++k) {
      if (i + k >= s.size()) return false;
      const auto n = static_cast<unsigned char>(s[i + k]);
      if ((n >> 6) != 2) return false;
      cp = (cp << 6) | (n & 0x3f);
    }
    if ((extra == 1 && cp < 0x80) || (extra == 2 && cp < 0x800) ||
        (extra == 3 && cp < 0x10000) || cp > 0x10ffff ||
        (cp >= 0xd800 && cp <= 0xdfff)) {
      return false;
    }
    i += extra + 1;
  }
  return true;
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  const std::string text(reinterpret_cast<const char*>(data), size);
  absl::StatusOr<gpulet::cdi::Spec> spec =
      gpulet::cdi::ParseSpec(text, "fuzz.yaml");
  if (!spec.ok()) return 0;
  if (!gpulet::cdi::Validate(*spec).ok()) return 0;
  // yaml-cpp passes bytes that are not UTF-8 through into the spec's
  // strings, and the encoders (nlohmann's dump) throw on them: encoding is
  // checked for UTF-8 input only until the decoder refuses such text.
  if (!IsUtf8(text)) return 0;
  for (gpulet::cdi::Format format :
       {gpulet::cdi::Format::kJson, gpulet::cdi::Format::kYaml}) {
    absl::StatusOr<gpulet::cdi::Spec> again = gpulet::cdi::ParseSpec(
        gpulet::cdi::FormatSpec(*spec, format), "fuzz.again");
    Check(again.ok());
    Check(*again == *spec);
  }
  return 0;
}
