#include "src/base/config/flag_table.h"

#include <algorithm>
#include <utility>

#include "absl/strings/ascii.h"
#include "absl/strings/numbers.h"
#include "absl/strings/str_cat.h"
#include "src/base/config/config_errors.h"

namespace gpulet::config {
namespace {

using Apply = decltype(FlagSpec::apply);
template <typename T>
using Accessor = std::function<T*(Config&)>;

using internal::Quote;

// The last value counts; a bare boolean flag ("") means true.
absl::Status ParseBool(absl::string_view text, bool* out) {
  std::string s = absl::AsciiStrToLower(absl::StripAsciiWhitespace(text));
  if (s.empty() || s == "true" || s == "1" || s == "t" || s == "yes" ||
      s == "on") {
    *out = true;
  } else if (s == "false" || s == "0" || s == "f" || s == "no" || s == "off") {
    *out = false;
  } else {
    return absl::InvalidArgumentError(
        absl::StrCat("expected true or false, got ", Quote(text)));
  }
  return absl::OkStatus();
}

Apply Bool(Accessor<bool> at) {
  return [at](const std::vector<std::string>& v, Config* c) {
    return v.empty() ? absl::OkStatus() : ParseBool(v.back(), at(*c));
  };
}

Apply String(Accessor<std::string> at) {
  return [at](const std::vector<std::string>& v, Config* c) {
    if (!v.empty()) *at(*c) = v.back();
    return absl::OkStatus();
  };
}

template <typename E>
Apply Enum(Accessor<E> at, const EnumNames<E>& (*names)()) {
  return [at, names](const std::vector<std::string>& v,
                     Config* c) -> absl::Status {
    if (v.empty()) return absl::OkStatus();
    for (const auto& [name, value] : names()) {
      if (name == v.back()) {
        *at(*c) = value;
        return absl::OkStatus();
      }
    }
    return absl::InvalidArgumentError(
        internal::UnknownValue(v.back(), internal::NamesOf(names())));
  };
}

Apply DeviceListStrategies() {
  return [](const std::vector<std::string>& v, Config* c) -> absl::Status {
    std::vector<DeviceListStrategy> out;
    for (const std::string& item : v) {
      auto match = std::find_if(
          DeviceListStrategyNames().begin(), DeviceListStrategyNames().end(),
          [&](const auto& entry) { return entry.first == item; });
      if (match == DeviceListStrategyNames().end()) {
        return absl::InvalidArgumentError(internal::UnknownValue(
            item, internal::NamesOf(DeviceListStrategyNames())));
      }
      if (std::find(out.begin(), out.end(), match->second) == out.end()) {
        out.push_back(match->second);
      }
    }
    c->flags.plugin.device_list_strategy = std::move(out);
    return absl::OkStatus();
  };
}

Apply StringList(Accessor<std::vector<std::string>> at) {
  return [at](const std::vector<std::string>& v, Config* c) {
    *at(*c) = v;
    return absl::OkStatus();
  };
}

Apply IntList(Accessor<std::vector<int>> at) {
  return [at](const std::vector<std::string>& v, Config* c) -> absl::Status {
    std::vector<int> out;
    for (const std::string& item : v) {
      int n = 0;
      if (!absl::SimpleAtoi(item, &n)) {
        return absl::InvalidArgumentError(
            absl::StrCat("expected an integer, got ", Quote(item)));
      }
      out.push_back(n);
    }
    *at(*c) = std::move(out);
    return absl::OkStatus();
  };
}

// flags.* shared with GPU feature discovery in NVIDIA's file.
void AddCommonFlags(std::vector<FlagSpec>& t) {
  t.push_back(
      {"mig-strategy",
       {},
       {"MIG_STRATEGY"},
       FlagKind::kString,
       "none",
       "flags.migStrategy",
       "How MIG devices are advertised: none, single or mixed",
       Enum<MigStrategy>([](Config& c) { return &c.flags.mig_strategy; },
                         MigStrategyNames)});
  t.push_back({"fail-on-init-error",
               {},
               {"FAIL_ON_INIT_ERROR"},
               FlagKind::kBool,
               "true",
               "flags.failOnInitError",
               "Exit when initialisation fails (no driver, no GPU); when "
               "false, log the error and wait",
               Bool([](Config& c) { return &c.flags.fail_on_init_error; })});
  t.push_back({"driver-root",
               {"nvidia-driver-root"},
               {"NVIDIA_DRIVER_ROOT"},
               FlagKind::kString,
               "/",
               "flags.nvidiaDriverRoot",
               "Root of the NVIDIA driver installation on the host ('/' or "
               "'/run/nvidia/driver')",
               String([](Config& c) { return &c.flags.nvidia_driver_root; })});
  t.push_back({"dev-root",
               {"nvidia-dev-root"},
               {"NVIDIA_DEV_ROOT"},
               FlagKind::kString,
               "the driver root",
               "flags.nvidiaDevRoot",
               "Root of the NVIDIA device nodes on the host; defaults to the "
               "driver root",
               String([](Config& c) { return &c.flags.nvidia_dev_root; })});
}

// flags.plugin.*: options only the device plugin reads.
void AddPluginFlags(std::vector<FlagSpec>& t) {
  t.push_back(
      {"pass-device-specs",
       {},
       {"PASS_DEVICE_SPECS"},
       FlagKind::kBool,
       "false",
       "flags.plugin.passDeviceSpecs",
       "Return the /dev/nvidia* device nodes in Allocate responses",
       Bool([](Config& c) { return &c.flags.plugin.pass_device_specs; })});
  t.push_back({"device-list-strategy",
               {},
               {"DEVICE_LIST_STRATEGY"},
               FlagKind::kList,
               "envvar",
               "flags.plugin.deviceListStrategy",
               "How allocated devices reach the container runtime, one or "
               "more of envvar, volume-mounts, cdi-annotations, cdi-cri",
               DeviceListStrategies()});
  t.push_back({"device-id-strategy",
               {},
               {"DEVICE_ID_STRATEGY"},
               FlagKind::kString,
               "uuid",
               "flags.plugin.deviceIDStrategy",
               "How devices are named to the container runtime: uuid or "
               "index",
               Enum<DeviceIdStrategy>(
                   [](Config& c) { return &c.flags.plugin.device_id_strategy; },
                   DeviceIdStrategyNames)});
}

// What containers get besides their devices.
void AddContainerFlags(std::vector<FlagSpec>& t) {
  t.push_back({"gdrcopy-enabled",
               {},
               {"GDRCOPY_ENABLED"},
               FlagKind::kBool,
               "false",
               "flags.gdrcopyEnabled",
               "Start containers with GDRCopy support (NVIDIA_GDRCOPY=enabled)",
               Bool([](Config& c) { return &c.flags.gdrcopy_enabled; })});
  t.push_back({"gds-enabled",
               {},
               {"GDS_ENABLED"},
               FlagKind::kBool,
               "false",
               "flags.gdsEnabled",
               "Start containers with GPUDirect Storage support "
               "(NVIDIA_GDS=enabled)",
               Bool([](Config& c) { return &c.flags.gds_enabled; })});
  t.push_back({"mofed-enabled",
               {},
               {"MOFED_ENABLED"},
               FlagKind::kBool,
               "false",
               "flags.mofedEnabled",
               "Start containers with MOFED support (NVIDIA_MOFED=enabled)",
               Bool([](Config& c) { return &c.flags.mofed_enabled; })});
  t.push_back({"cdi-annotation-prefix",
               {},
               {"CDI_ANNOTATION_PREFIX"},
               FlagKind::kString,
               "cdi.k8s.io/",
               "flags.plugin.cdiAnnotationPrefix",
               "Prefix of the CDI annotation keys (cdi-annotations strategy)",
               String([](Config& c) {
                 return &c.flags.plugin.cdi_annotation_prefix;
               })});
  t.push_back(
      {"nvidia-cdi-hook-path",
       {"nvidia-ctk-path"},
       {"NVIDIA_CDI_HOOK_PATH", "NVIDIA_CTK_PATH"},
       FlagKind::kString,
       "/usr/bin/nvidia-ctk",
       "flags.plugin.nvidiaCTKPath",
       "Path of the NVIDIA CDI hook (nvidia-ctk) in generated CDI specs",
       String([](Config& c) { return &c.flags.plugin.nvidia_ctk_path; })});
  t.push_back({"driver-root-ctr-path",
               {"container-driver-root"},
               {"DRIVER_ROOT_CTR_PATH", "CONTAINER_DRIVER_ROOT"},
               FlagKind::kString,
               "/driver-root",
               "flags.plugin.containerDriverRoot",
               "Where the driver root is mounted inside gpulet's own "
               "container; used for generating CDI specs",
               String([](Config& c) {
                 return &c.flags.plugin.container_driver_root;
               })});
}

void AddSharingFlags(std::vector<FlagSpec>& t) {
  t.push_back({"mps-root",
               {},
               {"MPS_ROOT"},
               FlagKind::kString,
               "",
               "flags.mpsRoot",
               "Host directory of the MPS control daemons' pipes and logs; "
               "required by sharing.mps and sharing.memory.mps",
               String([](Config& c) { return &c.flags.mps_root; })});
  t.push_back({"shared-devices-allocation-policy",
               {},
               {"SHARED_DEVICES_ALLOCATION_POLICY"},
               FlagKind::kString,
               "distributed",
               "flags.plugin.sharedDevicesAllocationPolicy",
               "How replicas of shared devices are chosen: distributed "
               "(spread over GPUs) or packed (fill one GPU first)",
               Enum<SharedDevicesAllocationPolicy>(
                   [](Config& c) {
                     return &c.flags.plugin.shared_devices_allocation_policy;
                   },
                   AllocationPolicyNames)});
  t.push_back({"device-discovery-strategy",
               {},
               {"DEVICE_DISCOVERY_STRATEGY"},
               FlagKind::kString,
               "auto",
               "flags.deviceDiscoveryStrategy",
               "How devices are found: auto or nvml (both use NVML; NVIDIA's "
               "tegra is not supported)",
               Enum<DeviceDiscoveryStrategy>(
                   [](Config& c) { return &c.flags.device_discovery_strategy; },
                   DeviceDiscoveryStrategyNames)});
}

void AddProcessFlags(std::vector<FlagSpec>& t) {
  t.push_back(
      {"kubelet-socket",
       {},
       {"KUBELET_SOCKET"},
       FlagKind::kString,
       "/var/lib/kubelet/device-plugins/kubelet.sock",
       "flags.plugin.kubeletSocket",
       "The kubelet's registration socket; plugin sockets are created "
       "in its directory",
       String([](Config& c) { return &c.flags.plugin.kubelet_socket; })});
  t.push_back({"cdi-feature-flags",
               {},
               {"CDI_FEATURE_FLAGS"},
               FlagKind::kList,
               "",
               "flags.plugin.cdiFeatureFlags",
               "Feature flags for CDI spec generation",
               StringList([](Config& c) {
                 return &c.flags.plugin.cdi_feature_flags;
               })});
  t.push_back({"imex-channel-ids",
               {},
               {"IMEX_CHANNEL_IDS"},
               FlagKind::kList,
               "",
               "imex.channelIDs",
               "IMEX channels to inject into containers: none, or 0",
               IntList([](Config& c) { return &c.imex.channel_ids; })});
  t.push_back({"imex-required",
               {},
               {"IMEX_REQUIRED"},
               FlagKind::kBool,
               "false",
               "imex.required",
               "Fail start-up when a requested IMEX channel is missing",
               Bool([](Config& c) { return &c.imex.required; })});
  t.push_back({"metrics-address",
               {},
               {"METRICS_ADDRESS"},
               FlagKind::kString,
               "",
               "metrics.address",
               "host:port to serve Prometheus metrics on (GET /metrics), "
               "e.g. :9400; empty: no metrics server",
               String([](Config& c) { return &c.metrics.address; })});
  t.push_back({"metrics-tls-cert-file",
               {},
               {"METRICS_TLS_CERT_FILE"},
               FlagKind::kString,
               "",
               "metrics.tlsCertFile",
               "PEM certificate chain to serve /metrics over TLS with (needs "
               "--metrics-tls-key-file); empty: plain HTTP",
               String([](Config& c) { return &c.metrics.tls_cert_file; })});
  t.push_back({"metrics-tls-key-file",
               {},
               {"METRICS_TLS_KEY_FILE"},
               FlagKind::kString,
               "",
               "metrics.tlsKeyFile",
               "PEM private key of --metrics-tls-cert-file",
               String([](Config& c) { return &c.metrics.tls_key_file; })});
  t.push_back({"metrics-client-ca-file",
               {},
               {"METRICS_CLIENT_CA_FILE"},
               FlagKind::kString,
               "",
               "metrics.clientCAFile",
               "PEM CAs of the client certificates /metrics requires "
               "(mutual TLS; needs --metrics-tls-cert-file)",
               String([](Config& c) { return &c.metrics.client_ca_file; })});
  t.push_back({kConfigFileFlag,
               {},
               {"CONFIG_FILE"},
               FlagKind::kString,
               "",
               "",
               "Path of a `version: v1` config file; flags and variables "
               "override its values",
               nullptr});
}

std::vector<FlagSpec> BuildTable() {
  std::vector<FlagSpec> t;
  AddCommonFlags(t);
  AddPluginFlags(t);
  AddContainerFlags(t);
  AddSharingFlags(t);
  AddProcessFlags(t);
  return t;
}

}  // namespace

const std::vector<FlagSpec>& FlagTable() {
  static const std::vector<FlagSpec> table = BuildTable();
  return table;
}

const FlagSpec* FindFlag(absl::string_view name) {
  for (const FlagSpec& spec : FlagTable()) {
    if (spec.name == name) return &spec;
    for (const std::string& alias : spec.aliases) {
      if (alias == name) return &spec;
    }
  }
  return nullptr;
}

}  // namespace gpulet::config
