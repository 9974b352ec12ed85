// Passthrough GPUs as the host's sysfs shows them: the PCI functions of
// NVIDIA's vendor ID, the driver each is bound to, their IOMMU groups,
// iommufd character devices, SR-IOV virtual functions and mediated devices
// (vGPU). Read through plain file I/O under configurable roots (never a
// hard-coded /sys), so tests and the simulator's rendered node use the same
// code as a real host.
//
// Discover() does the I/O; CheckViability() and ResourceName() are pure
// over its values (ResourceName reads pci.ids only as its fallback).
//
// Thread safety: stateless functions; values are plain copies.
#pragma once

#include <cstdint>
#include <filesystem>
#include <map>
#include <string>
#include <vector>

#include "absl/status/statusor.h"

namespace gpulet::vfio {

struct Roots {
  std::filesystem::path sys = "/sys";
  std::filesystem::path dev = "/dev";
};

struct PciFunction {
  std::string address;  // "0000:3b:00.0" (domain always present, lowercase)
  uint16_t vendor = 0, device = 0, subsystem_vendor = 0, subsystem_device = 0;
  uint32_t class_code = 0;  // 0x030200 (3D controller), 0x040300 (audio)
  std::string driver;       // basename of the `driver` link; "" when unbound
  int iommu_group = -1;     // -1: no iommu_group link
  int numa_node = -1;

  // PCI bridges (class 0x0604) and the other classes that may stay bound to
  // their host driver inside a group given to a VM.
  bool IsBridge() const;
  // Vendor 0x10de and a display class (0x03xxxx).
  bool IsNvidiaGpu() const;
};

// /sys/bus/pci/devices/<gpu>/mdev_supported_types/<id>.
struct MdevType {
  std::string id;    // "nvidia-558"
  std::string name;  // "GRID H100-4C" (the type's `name` file)
  int available_instances = 0;
};

// /sys/bus/mdev/devices/<uuid>.
struct Mdev {
  std::string uuid;
  std::string type_id;    // basename of the mdev_type link; "" without one
  std::string type_name;  // the type's `name` file ("GRID A100-4C"); "" when
                          // the link or the file is missing
  std::string parent;     // the parent function's address
  int iommu_group = -1;   // -1: no iommu_group link
};

struct Gpu {
  PciFunction function;
  // Every function in its IOMMU group, this one included, sorted by address.
  std::vector<PciFunction> group;
  // "vfio3" when <sys>/bus/pci/devices/<addr>/vfio-dev/vfio3 exists
  // (iommufd; its node is <dev>/vfio/devices/vfio3), else "".
  std::string vfio_cdev;
  std::vector<std::string> virtual_functions;  // SR-IOV VF addresses (virtfnN)
  std::string physfn;                          // parent PF address of a VF
  std::vector<MdevType> mdev_types;
};

struct Inventory {
  std::vector<Gpu> gpus;    // NVIDIA GPU functions (not companions), by address
  std::vector<Mdev> mdevs;  // /sys/bus/mdev/devices/*
  bool iommufd = false;     // <dev>/iommu exists
};

// Reads <sys>/bus/pci/devices and <sys>/bus/mdev/devices. Errors name the
// path that is missing or malformed; a GPU with a broken link is still
// listed when possible (its fields left at their defaults).
absl::StatusOr<Inventory> Discover(const Roots& roots);

struct Viability {
  bool viable = false;
  std::string reason;  // empty when viable
};

// Viable when every function of the GPU's group is bound to vfio-pci or is
// a bridge; else the reason names the function and its driver:
// "IOMMU group 17: 0000:3b:00.1 (audio, 10de:22e8) is bound to
// snd_hda_intel, not vfio-pci". No IOMMU group: not viable.
Viability CheckViability(const Gpu& gpu);

// The suffix of nvidia.com/<NAME> for a GPU's PCI device ID: the override
// for that ID if any, else gpulet's own table, else pci.ids at `pci_ids`
// (may be empty or missing), else "10DE_<DEVICE ID in upper-case hex>".
// Only [A-Z0-9_].
std::string ResourceName(uint16_t device_id,
                         const std::map<uint16_t, std::string>& overrides,
                         const std::filesystem::path& pci_ids);

// The suffix of nvidia.com/<NAME> for an mdev type name, as KubeVirt names
// mediated devices (its `mdevNameSelector` "GRID T4-1Q" goes with the
// resource nvidia.com/GRID_T4-1Q): runs of white space become '_', case and
// '-' are kept, and characters a resource name cannot hold (outside
// [A-Za-z0-9_.-]) are dropped. "" when nothing is left.
std::string MdevResourceName(const std::string& type_name);

// <dev>/vfio/<group>: the group's device node, for Allocate.
std::filesystem::path GroupDevicePath(const Roots& roots, int group);

}  // namespace gpulet::vfio
