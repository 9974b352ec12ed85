// CDI spec <-> JSON and YAML text, with the reference library's field names
// (specs-go/config.go). Encoding leaves out empty optional fields, as the
// reference library's `omitempty` does, so the output is what the Go library
// itself would write. Decoding is strict like the reference library's
// (yaml.v3 KnownFields): an unknown field, a wrong type or a field gpulet does
// not model (intelRdt, netDevices) is an error naming the field's path.
//
// Thread safety: pure functions.
#pragma once

#include <string>

#include "absl/status/statusor.h"
#include "absl/strings/string_view.h"
#include "nlohmann/json.hpp"
#include "src/model/cdi/spec.h"

namespace gpulet::cdi {

enum class Format { kYaml, kJson };

// "yaml" / "yml" / "json" (any case); InvalidArgument otherwise.
absl::StatusOr<Format> ParseFormat(const std::string& name);
// ".yaml" or ".json".
const char* FormatExtension(Format format);

nlohmann::ordered_json SpecToJsonValue(const Spec& spec);
// Pretty JSON (2-space indent), ending with a newline.
std::string SpecToJson(const Spec& spec);
// Block YAML, ending with a newline.
std::string SpecToYaml(const Spec& spec);
std::string FormatSpec(const Spec& spec, Format format);

// Decodes JSON (text starting with '{') or YAML. Structure only: call
// Validate (validate.h) for the CDI rules. Errors are InvalidArgument
// "<source>: <field path>: <what>", e.g.
// "spec.yaml: devices[1].containerEdits.deviceNodes[0]: unknown field
// \"hostpath\"".
absl::StatusOr<Spec> ParseSpec(absl::string_view text,
                               const std::string& source = "CDI spec");

}  // namespace gpulet::cdi
