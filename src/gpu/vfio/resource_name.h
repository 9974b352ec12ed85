// The pieces of ResourceName() (vfio.h) that tests and documentation look
// at on their own: gpulet's table of NVIDIA data-centre device IDs and the
// rule that turns a pci.ids product name into a resource name.
//
// Thread safety: immutable data and pure functions.
#pragma once

#include <cstdint>
#include <map>
#include <string>

#include "absl/strings/string_view.h"

namespace gpulet::vfio {

// Device ID -> its product name as the PCI ID database spells it
// ("GH100 [H100 SXM5 80GB]"). Fixed in gpulet, so resource names do not
// change with the host's pci.ids.
const std::map<uint16_t, absl::string_view>& NvidiaDeviceTable();

// The rule KubeVirt's NVIDIA device plugin applies to a pci.ids name, so
// that existing permittedHostDevices entries keep matching: upper case;
// '/', '.' and runs of white space become '_'; '-' becomes '_' (resource
// names here keep to [A-Z0-9_]); everything else outside [A-Z0-9_] (the
// brackets) is dropped. "GH100 [H100 SXM5 80GB]" -> "GH100_H100_SXM5_80GB".
std::string DeriveResourceName(absl::string_view pci_ids_name);

// The name of NVIDIA device `device_id` in a pci.ids text, "" if absent.
std::string FindInPciIds(absl::string_view pci_ids_text, uint16_t device_id);

}  // namespace gpulet::vfio
