// PreparedResource: one resource as the daemon's configuration apply is
// about to serve it: its spec (devices with their base health), its
// Allocate and preferred-allocation handlers, and its role, which tells
// device-health composition (health_composition.h) which sources apply to
// its devices. A value; no thread-safety concerns of its own.
#pragma once

#include "src/model/pluginapi/handlers.h"
#include "src/model/resources/resources.h"
#include "src/plugin/daemon/health_composition.h"

namespace gpulet::daemon {

struct PreparedResource {
  resources::ResourceSpec spec;
  pluginapi::AllocateHandler allocate;
  // Null: the preferred handler every resource shares.
  pluginapi::PreferredHandler preferred = nullptr;
  ResourceRole role = ResourceRole::kGpus;
};

}  // namespace gpulet::daemon
