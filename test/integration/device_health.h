// Which device IDs a ListAndWatch message advertises Healthy and which
// Unhealthy, and the device IDs a simulated machine must be advertised
// with. The expected IDs come from the simulator's own model of the machine
// (sim::LoadMachine on the profile), never from what gpulet advertised, so
// a test that injects a fault can say exactly which devices must go
// Unhealthy and which must stay Healthy: a fault attributed to the
// neighbouring GPU, or a reload that marks the right number of the wrong
// devices, fails it.
//
// Thread safety: pure functions.
#pragma once

#include <map>
#include <string>
#include <vector>

#include "deviceplugin/v1beta1/api.pb.h"

namespace gpulet::testing {

// device ID -> "Healthy" or "Unhealthy".
using HealthById = std::map<std::string, std::string>;

// What one ListAndWatch message advertises.
HealthById AdvertisedHealth(const v1beta1::ListAndWatchResponse& list);

// Every ID of `all` Healthy but those of `unhealthy`.
HealthById ExpectedHealth(const std::vector<std::string>& all,
                          const std::vector<std::string>& unhealthy = {});

// The differences, one per line ("<id>: advertised Healthy, want
// Unhealthy", "<id>: not advertised, want Healthy", ...); empty when equal.
std::string HealthDiff(const HealthById& got, const HealthById& want);

// The UUIDs of a built-in profile's GPUs, by NVML index (as the simulator
// enumerates them). Empty, with a test failure, for an unknown profile.
std::vector<std::string> ProfileGpuUuids(const std::string& profile);

// The UUIDs of a profile's MIG devices of one MIG profile ("1g.5gb"), on
// the GPU at NVML index `gpu`, or on every GPU when `gpu` is negative.
std::vector<std::string> ProfileMigUuids(const std::string& profile,
                                         const std::string& mig_profile,
                                         int gpu = -1);

// The time-slicing replica IDs <uuid>::0 .. <uuid>::<replicas - 1> of each
// UUID, in order.
std::vector<std::string> ReplicaIds(const std::vector<std::string>& uuids,
                                    int replicas);

}  // namespace gpulet::testing
