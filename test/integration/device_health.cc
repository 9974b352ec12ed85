#include "test/integration/device_health.h"

#include "absl/status/statusor.h"
#include "absl/strings/str_cat.h"
#include "gtest/gtest.h"
#include "sim/machine.h"
#include "sim/profiles.h"

namespace gpulet::testing {
namespace {

sim::Machine Load(const std::string& profile) {
  absl::StatusOr<sim::Machine> machine = sim::LoadMachine(profile);
  EXPECT_TRUE(machine.ok()) << machine.status();
  return machine.ok() ? *std::move(machine) : sim::Machine{};
}

// NVIDIA's name of a MIG device: its GPU instance profile ("1g.5gb"), with
// the compute slices in front when the compute instance takes only part of
// it ("1c.2g.10gb").
std::string MigProfileName(const sim::Gpu& gpu, const sim::MigDevice& mig) {
  std::string gi_name;
  unsigned gi_slices = 0;
  for (const sim::GpuInstanceProfile& p : gpu.gi_profiles) {
    if (p.id == mig.gpu_instance_profile_id) {
      gi_name = p.name;
      gi_slices = p.slice_count;
    }
  }
  for (const sim::ComputeInstanceProfile& p : gpu.ci_profiles) {
    if (p.id == mig.compute_instance_profile_id && p.slice_count != gi_slices) {
      return absl::StrCat(p.slice_count, "c.", gi_name);
    }
  }
  return gi_name;
}

}  // namespace

HealthById AdvertisedHealth(const v1beta1::ListAndWatchResponse& list) {
  HealthById out;
  for (const v1beta1::Device& d : list.devices()) out[d.id()] = d.health();
  return out;
}

HealthById ExpectedHealth(const std::vector<std::string>& all,
                          const std::vector<std::string>& unhealthy) {
  HealthById out;
  for (const std::string& id : all) out[id] = "Healthy";
  for (const std::string& id : unhealthy) {
    EXPECT_TRUE(out.contains(id)) << id << " is not one of the devices";
    out[id] = "Unhealthy";
  }
  return out;
}

std::string HealthDiff(const HealthById& got, const HealthById& want) {
  std::string out;
  for (const auto& [id, health] : want) {
    auto it = got.find(id);
    if (it == got.end()) {
      absl::StrAppend(&out, id, ": not advertised, want ", health, "\n");
    } else if (it->second != health) {
      absl::StrAppend(&out, id, ": advertised ", it->second, ", want ", health,
                      "\n");
    }
  }
  for (const auto& [id, health] : got) {
    if (!want.contains(id)) {
      absl::StrAppend(&out, id, ": advertised ", health, ", want absent\n");
    }
  }
  return out;
}

std::vector<std::string> ProfileGpuUuids(const std::string& profile) {
  std::vector<std::string> out;
  for (const sim::Gpu& gpu : Load(profile).gpus) out.push_back(gpu.uuid);
  return out;
}

std::vector<std::string> ProfileMigUuids(const std::string& profile,
                                         const std::string& mig_profile,
                                         int gpu) {
  const sim::Machine machine = Load(profile);
  std::vector<std::string> out;
  for (size_t i = 0; i < machine.gpus.size(); ++i) {
    if (gpu >= 0 && static_cast<size_t>(gpu) != i) continue;
    const sim::Gpu& g = machine.gpus[i];
    if (!g.mig_enabled) continue;
    for (const sim::MigDevice& mig : g.mig_devices) {
      if (MigProfileName(g, mig) == mig_profile) out.push_back(mig.uuid);
    }
  }
  return out;
}

std::vector<std::string> ReplicaIds(const std::vector<std::string>& uuids,
                                    int replicas) {
  std::vector<std::string> out;
  for (const std::string& uuid : uuids) {
    for (int n = 0; n < replicas; ++n)
      out.push_back(absl::StrCat(uuid, "::", n));
  }
  return out;
}

}  // namespace gpulet::testing
