// The mediated-device half of PlanPassthrough (passthrough.h), apart so
// that each file keeps to one kind of device. Internal to resources.
//
// Thread safety: pure functions, apart from the group-node probes.
#pragma once

#include <filesystem>
#include <map>
#include <string>

#include "src/base/config/config.h"
#include "src/gpu/vfio/vfio.h"
#include "src/model/resources/passthrough.h"
#include "src/model/resources/resources.h"

namespace gpulet::resources::internal {

// Whether `path` exists (stat), following links.
bool Exists(const std::filesystem::path& path);

// Adds the inventory's mdevs to `by_name` (one resource per type name) and
// to plan's health, mdev_resources, mdev_ids and selected (their parents);
// an mdev without a type is left out with a message in plan.errors.
void PlanMdevs(const vfio::Inventory& inventory,
               const config::Passthrough& config,
               const std::string& socket_prefix,
               std::map<std::string, ResourceSpec>& by_name,
               PassthroughPlan& plan);

}  // namespace gpulet::resources::internal
