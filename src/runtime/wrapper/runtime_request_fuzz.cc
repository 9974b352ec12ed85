// libFuzzer target: gpulet-runtime's request path on any config.json text,
// as `create` runs it: ParseOciConfig → DetectRequest (default options and
// acceptEnvvarUnprivileged: false) → ResolveEdits against a fixed node (the
// node spec nvidia.com/gpu and one DRA claim spec) → ApplyEdits on the
// config. Beyond not crashing, it checks what the container may not get:
//   - without a CDI annotation or a kubelet mount, every name requested is
//     of the default kind (the image's env never reaches the claim);
//   - no error names the claim's device unless the input did;
//   - the edited config still passes ParseOciConfig.
#include <cstddef>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <string>

#include "absl/strings/match.h"
#include "src/runtime/wrapper/apply_edits.h"
#include "src/runtime/wrapper/oci_config.h"
#include "src/runtime/wrapper/request.h"
#include "src/runtime/wrapper/spec_resolver.h"

namespace {

using gpulet::runtime::GpuRequest;
using gpulet::runtime::LoadedSpecs;
using nlohmann::json;

constexpr char kClaimDevice[] = "c0ffee-secret-gpu-0";

constexpr char kNodeSpec[] = R"({"cdiVersion":"0.7.0","kind":"nvidia.com/gpu",
"devices":[
 {"name":"0","containerEdits":{"deviceNodes":[{"path":"/dev/nvidia0"}]}},
 {"name":"1","containerEdits":{"deviceNodes":[{"path":"/dev/nvidia1"}],
  "env":["GPU=1"]}},
 {"name":"all","containerEdits":{"deviceNodes":[{"path":"/dev/nvidia0"},
  {"path":"/dev/nvidia1"}]}}],
"containerEdits":{"deviceNodes":[{"path":"/dev/nvidiactl"}],
 "env":["NVIDIA_VISIBLE_DEVICES=void"],
 "mounts":[{"hostPath":"/lib/libcuda.so.1","containerPath":"/lib/libcuda.so.1",
  "options":["ro","nosuid","nodev","bind"]}],
 "hooks":[{"hookName":"createContainer","path":"/usr/bin/gpulet-runtime",
  "args":["gpulet-runtime","hook","update-ldcache"],"env":["PATH=/bin"]}],
 "additionalGids":[44]}})";

constexpr char kClaimSpec[] = R"({"cdiVersion":"0.5.0",
"kind":"k8s.gpu.nvidia.com/claim",
"devices":[{"name":"c0ffee-secret-gpu-0","containerEdits":{
 "deviceNodes":[{"path":"/dev/nvidia1"}],
 "mounts":[{"hostPath":"/run/mps/c0ffee","containerPath":"/dev/shm"}]}}]})";

void Check(bool ok) {
  if (!ok) std::abort();
}

const LoadedSpecs& Specs() {
  static const LoadedSpecs* specs = [] {
    auto* loaded = new LoadedSpecs;
    for (const char* text : {kNodeSpec, kClaimSpec}) {
      absl::StatusOr<gpulet::cdi::Spec> spec =
          gpulet::runtime::ParseAndValidateSpec(text, "fixed.json");
      if (!spec.ok()) {
        std::fprintf(stderr, "fixed spec: %s\n",
                     std::string(spec.status().message()).c_str());
      }
      Check(spec.ok());
      loaded->specs.push_back({"fixed.json", *std::move(spec)});
    }
    return loaded;
  }();
  return *specs;
}

absl::StatusOr<gpulet::runtime::HostDevice> FakeLookup(const std::string&) {
  return gpulet::runtime::HostDevice{"c", 195, 0, 0666};
}

bool HasCdiAnnotation(const json& config) {
  auto annotations = config.find("annotations");
  if (annotations == config.end() || !annotations->is_object()) return false;
  for (const auto& [key, value] : annotations->items()) {
    if (absl::StartsWith(key, gpulet::runtime::kCdiAnnotationPrefix)) {
      return true;
    }
  }
  return false;
}

// The claim's device name may appear in an error only when the input wrote
// it.
void CheckError(const absl::Status& status, const std::string& text) {
  Check(!status.ok());
  if (!absl::StrContains(text, kClaimDevice)) {
    Check(!absl::StrContains(status.message(), kClaimDevice));
  }
}

void RunRequest(json config, const GpuRequest& request,
                const std::string& text) {
  absl::StatusOr<std::vector<gpulet::cdi::ContainerEdits>> edits =
      gpulet::runtime::ResolveEdits(Specs(), request, "nvidia.com/gpu");
  if (!edits.ok()) return CheckError(edits.status(), text);
  for (const gpulet::cdi::ContainerEdits& e : *edits) {
    absl::Status s = gpulet::runtime::ApplyEdits(e, FakeLookup, config);
    if (!s.ok()) return CheckError(s, text);
  }
  Check(gpulet::runtime::ParseOciConfig(
            gpulet::runtime::SerializeOciConfig(config), "again")
            .ok());
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  const std::string text(reinterpret_cast<const char*>(data), size);
  absl::StatusOr<json> config =
      gpulet::runtime::ParseOciConfig(text, "config.json");
  if (!config.ok()) return 0;
  const bool kubelet_named_kinds = HasCdiAnnotation(*config);
  for (bool accept_env : {true, false}) {
    gpulet::runtime::RequestOptions options;
    options.accept_envvar_unprivileged = accept_env;
    absl::StatusOr<GpuRequest> request =
        gpulet::runtime::DetectRequest(*config, options);
    if (!request.ok()) {
      CheckError(request.status(), text);
      continue;
    }
    if (!kubelet_named_kinds) {
      for (const std::string& name : request->cdi_names) {
        Check(absl::StartsWith(name, "nvidia.com/gpu="));
      }
    }
    if (!request->empty()) RunRequest(*config, *request, text);
  }
  return 0;
}
