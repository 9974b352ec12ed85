// The configuration gpulet runs with, in the shape of NVIDIA
// k8s-device-plugin's `version: v1` file (api/config/v1), so an operator's
// existing file, flags and environment variables keep their meaning.
//
// A Config is a plain value. ParseConfig (parser.h) builds one from a file,
// Resolve (resolve.h) merges flags > environment > file > defaults into one,
// Validate (validate.h) checks NVIDIA's rules on one. Default member values
// are NVIDIA's defaults. Resource names held here are fully qualified
// ("nvidia.com/gpu"), as NVIDIA's parser leaves them.
//
// `origins` remembers where each key path got its value ("f.yaml" line 3,
// "flag --mig-strategy", ...) so that every error can point at it.
//
// Thread safety: values; no shared state.
#pragma once

#include <cstdint>
#include <map>
#include <optional>
#include <string>
#include <utility>
#include <vector>

#include "absl/strings/string_view.h"
#include "absl/time/time.h"

namespace gpulet::config {

inline constexpr char kConfigVersion[] = "v1";

enum class MigStrategy { kNone, kSingle, kMixed };
enum class DeviceListStrategy {
  kEnvvar,
  kVolumeMounts,
  kCdiAnnotations,
  kCdiCri
};
enum class DeviceIdStrategy { kUuid, kIndex };
enum class SharedDevicesAllocationPolicy { kDistributed, kPacked };
// NVIDIA also knows "tegra"; gpulet discovers devices through NVML only.
enum class DeviceDiscoveryStrategy { kAuto, kNvml };

// The spelling of each value in flags and files ("none", "volume-mounts",
// ...), in declaration order; the parsers match them exactly.
template <typename E>
using EnumNames = std::vector<std::pair<std::string, E>>;
const EnumNames<MigStrategy>& MigStrategyNames();
const EnumNames<DeviceListStrategy>& DeviceListStrategyNames();
const EnumNames<DeviceIdStrategy>& DeviceIdStrategyNames();
const EnumNames<SharedDevicesAllocationPolicy>& AllocationPolicyNames();
const EnumNames<DeviceDiscoveryStrategy>& DeviceDiscoveryStrategyNames();

std::string ToString(MigStrategy value);
std::string ToString(DeviceListStrategy value);
std::string ToString(DeviceIdStrategy value);
std::string ToString(SharedDevicesAllocationPolicy value);
std::string ToString(DeviceDiscoveryStrategy value);

// Where a value came from: a file position (1-based line and column), or
// a flag or environment variable (line 0). ToString gives
// "f.yaml:3:5", "flag --mig-strategy" or "environment variable X".
struct Origin {
  std::string source;
  int line = 0;
  int column = 0;

  std::string ToString() const;
  bool operator==(const Origin&) const = default;
};

// Key path ("flags.plugin.deviceIDStrategy", "sharing.mps.resources[0].name")
// -> where its value came from. Keys never set have no entry.
using Origins = std::map<std::string, Origin>;

// flags.plugin.* in the file: options only the device plugin reads.
struct PluginFlags {
  bool pass_device_specs = false;
  // A set; kept in the order first given, without repeats. NVIDIA accepts a
  // single string or a list in the file.
  std::vector<DeviceListStrategy> device_list_strategy = {
      DeviceListStrategy::kEnvvar};
  DeviceIdStrategy device_id_strategy = DeviceIdStrategy::kUuid;
  std::string cdi_annotation_prefix = "cdi.k8s.io/";
  std::string nvidia_ctk_path = "/usr/bin/nvidia-ctk";
  std::string container_driver_root = "/driver-root";
  SharedDevicesAllocationPolicy shared_devices_allocation_policy =
      SharedDevicesAllocationPolicy::kDistributed;
  std::string kubelet_socket = "/var/lib/kubelet/device-plugins/kubelet.sock";
  std::vector<std::string> cdi_feature_flags;

  bool operator==(const PluginFlags&) const = default;
};

// flags.* in the file.
struct Flags {
  MigStrategy mig_strategy = MigStrategy::kNone;
  bool fail_on_init_error = true;
  std::string nvidia_driver_root = "/";
  // Empty means "the driver root"; Resolve fills it in, as NVIDIA does.
  std::string nvidia_dev_root;
  std::string mps_root;
  bool gdrcopy_enabled = false;
  bool gds_enabled = false;
  bool mofed_enabled = false;
  DeviceDiscoveryStrategy device_discovery_strategy =
      DeviceDiscoveryStrategy::kAuto;
  PluginFlags plugin;

  bool operator==(const Flags&) const = default;
};

// resources.gpus[] / resources.mig[]: devices whose product name (GPUs) or
// profile (MIG, "1g.5gb") matches `pattern` ('*' is a wildcard) are
// advertised as `name`.
struct Resource {
  std::string pattern;
  std::string name;

  bool operator==(const Resource&) const = default;
};

struct Resources {
  std::vector<Resource> gpus;
  std::vector<Resource> mig;

  bool operator==(const Resources&) const = default;
};

// Which devices of a resource are shared: all, the first `count`, or the
// listed ones (GPU index "0", MIG index "0:1", GPU-/MIG- UUIDs; see
// ClassifyDeviceRef in names.h).
struct ReplicaDevices {
  enum class Kind { kAll, kCount, kList };
  Kind kind = Kind::kAll;
  int count = 0;
  std::vector<std::string> list;

  bool operator==(const ReplicaDevices&) const = default;
};

struct ReplicatedResource {
  std::string name;
  // Advertised name of the shared resource; empty keeps `name`. The parser
  // fills in "<name>.shared" when renameByDefault is set, as NVIDIA does.
  std::string rename;
  ReplicaDevices devices;
  int replicas = 0;

  bool operator==(const ReplicatedResource&) const = default;
};

// sharing.timeSlicing and sharing.mps.
struct ReplicatedResources {
  bool rename_by_default = false;
  // The parser defaults this to true for sharing.mps when the key is absent
  // (NVIDIA's behaviour) and to false for sharing.timeSlicing.
  bool fail_requests_greater_than_one = false;
  std::vector<ReplicatedResource> resources;

  bool operator==(const ReplicatedResources&) const = default;
};

// sharing.memory.policy: which GPU a container's memory units come from
// when several keep the pending pods fitting (docs/sharing.md).
enum class MemoryPolicy { kBinpack, kSpread };
const EnumNames<MemoryPolicy>& MemoryPolicyNames();
std::string ToString(MemoryPolicy value);

// sharing.memory: GPUs advertised as memory units instead of whole GPUs
// (docs/sharing.md). gpulet's own section; NVIDIA's file has none.
struct MemoryShares {
  // Fully qualified ("nvidia.com/gpu-memory", "aliyun.com/gpu-mem"); a name
  // without a domain gets "nvidia.com/".
  std::string resource_name = "nvidia.com/gpu-memory";
  int64_t unit_mib = 1024;  // "GiB", "MiB", "512MiB", "2GiB"
  // Which GPUs: all, the first `count`, or GPU indexes and GPU UUIDs.
  ReplicaDevices devices;
  // At most this many memory units on the node, all GPUs together.
  int max_devices_per_node = 4096;
  // A pending pod the kubelet has not admitted after this long is dropped
  // from the pending annotation.
  absl::Duration pending_timeout = absl::Minutes(5);
  // How often the node annotation is rewritten even when nothing signalled
  // a change.
  absl::Duration resync_period = absl::Minutes(5);
  MemoryPolicy policy = MemoryPolicy::kBinpack;
  // sharing.memory.mps.enabled: gpulet runs one MPS control daemon per GPU
  // sharing memory (under flags.mpsRoot) and limits each container's pinned
  // device memory to its share through it.
  bool mps = false;
  // sharing.memory.mps.computeByShare: each container may also use only
  // its share of the GPU's threads (CUDA_MPS_ACTIVE_THREAD_PERCENTAGE).
  bool mps_compute_by_share = false;

  bool operator==(const MemoryShares&) const = default;
};

enum class SharingStrategy { kNone, kTimeSlicing, kMps };

struct Sharing {
  std::optional<ReplicatedResources> time_slicing;
  std::optional<ReplicatedResources> mps;
  // Independent of the two above: it takes whole GPUs out of nvidia.com/gpu
  // (or its renamed resources) before they replicate the rest.
  std::optional<MemoryShares> memory;

  // MPS when configured, else time-slicing when configured, else none.
  SharingStrategy Strategy() const;
  // The section Strategy() names; null for kNone.
  const ReplicatedResources* Active() const;

  bool operator==(const Sharing&) const = default;
};

// imex.*: IMEX channels injected into every container.
struct Imex {
  std::vector<int> channel_ids;
  bool required = false;

  bool operator==(const Imex&) const = default;
};

// health.xids[].action: what an Xid does to its GPU (docs/health.md).
enum class XidAction {
  kIgnore,     // no change
  kUnhealthy,  // unhealthy; recovers after the quiet period
  kReset,      // unhealthy; recovers only after the GPU was lost and is back
};
const EnumNames<XidAction>& XidActionNames();
std::string ToString(XidAction value);

// health.xids[]: one action for a list of Xids.
struct XidRule {
  std::vector<uint64_t> codes;
  XidAction action = XidAction::kUnhealthy;

  bool operator==(const XidRule&) const = default;
};

// health.*: gpulet's own section (NVIDIA's file has none). The health
// monitor's policy; DP_DISABLE_HEALTHCHECKS, DP_ENABLE_HEALTHCHECKS and
// GPULET_HEALTH_QUIET_PERIOD override it (health::OptionsFromConfig).
struct Health {
  // No health checks at all (as DP_DISABLE_HEALTHCHECKS=all).
  bool disabled = false;
  // Recovery quiet period; unset: the monitor's default (5 minutes).
  std::optional<absl::Duration> quiet_period;
  // Xids ignored in addition to NVIDIA's defaults (13, 31, 43, 45, 68, 109).
  std::vector<uint64_t> ignored_xids;
  // Per-Xid actions; each Xid in at most one rule.
  std::vector<XidRule> xids;

  bool operator==(const Health&) const = default;
};

// metrics.*: the Prometheus endpoint (docs/metrics.md).
struct Metrics {
  // "host:port" to serve /metrics on; empty: no metrics server.
  std::string address;
  // TLS for that server (PEM chain and key, set together; empty: plain
  // HTTP), and the CAs of client certificates /metrics then requires.
  std::string tls_cert_file;
  std::string tls_key_file;
  std::string client_ca_file;

  bool operator==(const Metrics&) const = default;
};

// The effect of a device taint (resource.k8s.io/v1 DeviceTaint.effect,
// KEP-5055): "None" (informational), "NoSchedule" (no new allocation of the
// device to a claim that does not tolerate it) or "NoExecute" (also evicts
// the pods of such claims that already use it).
enum class TaintEffect { kNone, kNoSchedule, kNoExecute };
const EnumNames<TaintEffect>& TaintEffectNames();
std::string ToString(TaintEffect value);

// dra.unhealthyDevices: what `gpulet dra` does with a device the health
// monitor marked unhealthy.
enum class UnhealthyDevices {
  kDrop,   // "drop": left out of the ResourceSlices
  kTaint,  // "taint": published with a device taint
};
const EnumNames<UnhealthyDevices>& UnhealthyDevicesNames();
std::string ToString(UnhealthyDevices value);

// dra.*: gpulet's own section, read by `gpulet dra` only (docs/dra.md).
struct Dra {
  UnhealthyDevices unhealthy_devices = UnhealthyDevices::kDrop;
  // dra.taints.unhealthy: the effect on a device made unhealthy by an Xid,
  // an ECC error or a failed query; dra.taints.lost: on a device whose GPU
  // is lost (fallen off the bus).
  TaintEffect unhealthy_effect = TaintEffect::kNoSchedule;
  TaintEffect lost_effect = TaintEffect::kNoExecute;

  bool operator==(const Dra&) const = default;
};

// passthrough.devices[]: which GPUs are given whole to virtual machines
// and Kata containers through VFIO instead of to containers through NVML.
struct PassthroughSelector {
  enum class Kind {
    kVfioBound,   // "vfio-pci": every GPU bound to vfio-pci
    kPciAddress,  // "0000:3b:00.0" (domain optional in the file)
    kDeviceId,    // "10de:2330": every GPU with this PCI device ID
  };
  Kind kind = Kind::kVfioBound;
  std::string pci_address;  // kPciAddress: "0000:3b:00.0", lower case
  uint16_t device_id = 0;   // kDeviceId

  bool operator==(const PassthroughSelector&) const = default;
};

// passthrough.*: gpulet's own section (NVIDIA's file has none); see
// docs/passthrough.md. Present (even empty) turns passthrough on.
struct Passthrough {
  std::vector<PassthroughSelector> devices = {PassthroughSelector{}};
  // Advertise the mediated devices (vGPU instances) under
  // <sys>/bus/mdev/devices, one resource per mdev type.
  bool mdevs = false;
  // PCI device ID -> the <NAME> of nvidia.com/<NAME>, as written;
  // vfio::ResourceName normalises it ("h100 vm" -> "H100_VM").
  std::map<uint16_t, std::string> resource_names;
  std::string sys_root = "/sys";  // where this process sees the host's /sys
  std::string dev_root = "/dev";  // where this process sees the host's /dev
  // The host path of dev_root, for Allocate's DeviceSpecs; empty: dev_root.
  std::string host_dev_root;
  // pci.ids, the fallback for device IDs gpulet's table does not know.
  std::string pci_ids = "/usr/share/misc/pci.ids";
  // How often the bindings are re-read on a timer as well. Unset: only
  // when kernel uevents cannot be had (a user namespace), every 30 s
  // (health::PassthroughWatcher::kFallbackResync); with uevents, never.
  std::optional<absl::Duration> resync_period;
  // A unix datagram socket to read uevents from instead of the kernel's
  // netlink socket (the simulator's fake kernel sends there); empty: the
  // kernel's.
  std::string uevent_socket;

  bool operator==(const Passthrough&) const = default;
};

struct Config {
  std::string version = kConfigVersion;
  Flags flags;
  Resources resources;
  Sharing sharing;
  Imex imex;
  // Keys NVIDIA's file allows that gpulet accepts and ignores (for example
  // flags.gfd.*, read by GPU feature discovery), for a start-up warning.
  std::vector<std::string> ignored_keys;
  Origins origins;
  Health health;
  Metrics metrics;
  std::optional<Passthrough> passthrough;
  Dra dra;
};

// The name `resource` is advertised under: its rename, else
// "<name>.shared" under renameByDefault, else its name.
std::string AdvertisedName(const ReplicatedResources& section,
                           const ReplicatedResource& resource);

}  // namespace gpulet::config
