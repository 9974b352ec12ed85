// Output of `gpulet devices`: a human table and a stable JSON document for
// a device::Node. Pure formatting; the command wiring is in
// devices_command.cc.
//
// JSON schema (field names are stable; new fields may be added):
//   {"driverVersion": str, "nvmlVersion": str, "cudaDriverVersion": int,
//    "cudaVersion": "12.4",
//    "gpus": [{"index", "uuid", "name", "serial", "minor", "busId",
//              "pciDeviceId" "0x233010DE", "memoryTotalBytes",
//              "numaNode" (int|null), "cpuAffinity" "0-55,112-167" (Linux
//              cpulist format, "N/A" if unknown), "computeCapability" "9.0",
//              "architecture", "brand", "migCapable", "migEnabled",
//              "migDevices": [{"index" "0:1", "uuid", "parentIndex",
//                              "migIndex", "gpuInstanceId",
//                              "computeInstanceId", "profile", "memoryBytes",
//                              "gpuInstanceSliceCount",
//                              "computeInstanceSliceCount",
//                              "multiprocessorCount"}]}]}
//
// Thread safety: pure functions.
#pragma once

#include <string>

#include "src/gpu/device/gpu.h"

namespace gpulet::cli {

// Version header line, then one row per GPU with its MIG devices indented
// beneath it.
std::string FormatDevicesTable(const device::Node& node);

// Pretty-printed JSON (two-space indent), ending in '\n'.
std::string FormatDevicesJson(const device::Node& node);

}  // namespace gpulet::cli
