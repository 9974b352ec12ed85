// sim_profile_compiler OUT.cc: parses every built-in machine profile with the
// YAML machine parser and writes C++ that builds the same `Machine` values
// (compiled_profiles.h), so the simulator's nvmlInit does not parse YAML for
// a built-in profile. Run at build time; the generated file is not checked in.

#include <cstdint>
#include <cstdio>
#include <fstream>
#include <map>
#include <ostream>
#include <sstream>
#include <string>
#include <vector>

#include "absl/status/statusor.h"
#include "sim/machine.h"
#include "sim/profiles.h"

namespace gpulet::sim {
namespace {

// A C++ string literal; octal escapes always take three digits, so a digit
// that follows one cannot extend it.
std::string Quote(const std::string& s) {
  std::string out = "\"";
  for (unsigned char c : s) {
    if (c == '"' || c == '\\') {
      out += '\\';
      out += static_cast<char>(c);
    } else if (c >= 0x20 && c < 0x7f && c != '?') {
      out += static_cast<char>(c);
    } else {
      char buf[5];
      std::snprintf(buf, sizeof buf, "\\%03o", c);
      out += buf;
    }
  }
  return out + "\"";
}

std::string Bool(bool b) { return b ? "true" : "false"; }

template <typename Enum>
std::string EnumValue(const char* type, Enum value) {
  return std::string("static_cast<") + type + ">(" +
         std::to_string(static_cast<long long>(value)) + ")";
}

std::string U64(uint64_t v) { return "UINT64_C(" + std::to_string(v) + ")"; }

template <typename T>
std::string List(const std::vector<T>& values) {
  std::string out = "{";
  for (size_t i = 0; i < values.size(); ++i) {
    if (i > 0) out += ", ";
    out += std::to_string(values[i]);
  }
  return out + "}";
}

// Equal vectors (every GPU of a model has the same MIG tables, every GPU of
// a switch-based node the same NVLinks) are emitted once, as a function
// returning the vector; each use calls it. This keeps the generated file
// small and quick to compile.
class SharedVectors {
 public:
  // The expression for a vector of `type` whose push_back lines (each
  // "  v.push_back(...);\n") are `lines`.
  std::string Use(const std::string& type, const std::string& lines) {
    if (lines.empty()) return "{}";
    std::string key = type + "\n" + lines;
    auto it = names_.find(key);
    if (it != names_.end()) return it->second + "()";
    std::string name = "Shared" + std::to_string(names_.size());
    names_.emplace(key, name);
    out_ << "std::vector<" << type << "> " << name << "() {\n  std::vector<"
         << type << "> v;\n"
         << lines << "  return v;\n}\n\n";
    return name + "()";
  }
  std::string Text() const { return out_.str(); }

 private:
  std::map<std::string, std::string> names_;
  std::ostringstream out_;
};

void EmitGiProfile(std::ostream& o, const GpuInstanceProfile& p) {
  o << "  v.push_back({.id = " << p.id << ", .profile_id = " << p.profile_id
    << ", .name = " << Quote(p.name) << ", .slice_count = " << p.slice_count
    << ", .instance_count = " << p.instance_count
    << ", .multiprocessor_count = " << p.multiprocessor_count
    << ", .copy_engine_count = " << p.copy_engine_count
    << ", .decoder_count = " << p.decoder_count
    << ", .encoder_count = " << p.encoder_count
    << ", .jpeg_count = " << p.jpeg_count << ", .ofa_count = " << p.ofa_count
    << ", .memory_size_mb = " << U64(p.memory_size_mb)
    << ", .p2p_supported = " << Bool(p.p2p_supported)
    << ", .placement_starts = " << List(p.placement_starts)
    << ", .placement_size = " << p.placement_size << "});\n";
}

void EmitMig(std::ostream& o, SharedVectors& shared, const Gpu& g) {
  std::ostringstream gi;
  for (const GpuInstanceProfile& p : g.gi_profiles) EmitGiProfile(gi, p);
  o << "  g.gi_profiles = " << shared.Use("GpuInstanceProfile", gi.str())
    << ";\n";
  std::ostringstream ci;
  for (const ComputeInstanceProfile& p : g.ci_profiles) {
    ci << "  v.push_back({.id = " << p.id << ", .name = " << Quote(p.name)
       << ", .slice_count = " << p.slice_count
       << ", .instance_count = " << p.instance_count
       << ", .multiprocessor_count = " << p.multiprocessor_count << "});\n";
  }
  o << "  g.ci_profiles = " << shared.Use("ComputeInstanceProfile", ci.str())
    << ";\n";
  for (const MigDevice& d : g.mig_devices) {
    o << "  g.mig_devices.push_back({.uuid = " << Quote(d.uuid)
      << ", .gpu_instance_id = " << d.gpu_instance_id
      << ", .gpu_instance_profile_id = " << d.gpu_instance_profile_id
      << ", .gi_placement_start = " << d.gi_placement_start
      << ", .gi_placement_size = " << d.gi_placement_size
      << ", .compute_instance_id = " << d.compute_instance_id
      << ", .compute_instance_profile_id = " << d.compute_instance_profile_id
      << ", .ci_placement_start = " << d.ci_placement_start
      << ", .ci_placement_size = " << d.ci_placement_size << "});\n";
  }
}

void EmitLinksAndFabric(std::ostream& o, SharedVectors& shared, const Gpu& g) {
  std::ostringstream links;
  for (const NvLink& l : g.nvlinks) {
    links << "  v.push_back({.active = " << Bool(l.active)
          << ", .remote_type = "
          << EnumValue("nvmlIntNvLinkDeviceType_t", l.remote_type)
          << ", .peer_gpu = " << l.peer_gpu
          << ", .remote_bus_id = " << Quote(l.remote_bus_id) << "});\n";
  }
  o << "  g.nvlinks = " << shared.Use("NvLink", links.str()) << ";\n";
  o << "  g.supported_events = " << U64(g.supported_events) << ";\n";
  if (g.fabric) {
    const GpuFabric& f = *g.fabric;
    o << "  g.fabric = GpuFabric{.cluster_uuid = {";
    for (size_t i = 0; i < f.cluster_uuid.size(); ++i) {
      o << (i > 0 ? ", " : "") << static_cast<unsigned>(f.cluster_uuid[i]);
    }
    o << "}, .clique_id = " << f.clique_id
      << ", .state = " << EnumValue("nvmlGpuFabricState_t", f.state)
      << ", .status = " << EnumValue("nvmlReturn_t", f.status)
      << ", .health_mask = " << f.health_mask
      << ", .health_summary = " << static_cast<unsigned>(f.health_summary)
      << "};\n";
  }
}

void EmitPassthrough(std::ostream& o, const Gpu& g) {
  o << "  g.bound_driver = " << Quote(g.bound_driver) << ";\n"
    << "  g.iommu_group = " << g.iommu_group << ";\n";
  for (const PciFunction& f : g.functions) {
    o << "  g.functions.push_back({.address = " << Quote(f.address)
      << ", .vendor = " << f.vendor << ", .device = " << f.device
      << ", .class_code = " << f.class_code << ", .driver = " << Quote(f.driver)
      << "});\n";
  }
  for (const MdevType& t : g.mdev_types) {
    o << "  g.mdev_types.push_back({.id = " << Quote(t.id)
      << ", .name = " << Quote(t.name) << ", .available = " << t.available
      << "});\n";
  }
  for (const Mdev& m : g.mdevs) {
    o << "  g.mdevs.push_back({.uuid = " << Quote(m.uuid)
      << ", .type = " << Quote(m.type) << "});\n";
  }
}

// One function per GPU keeps each generated function small.
void EmitGpu(std::ostream& o, SharedVectors& shared, const std::string& fn,
             const Gpu& g) {
  o << "void " << fn << "(Gpu& g) {\n"
    << "  g.name = " << Quote(g.name) << ";\n"
    << "  g.uuid = " << Quote(g.uuid) << ";\n"
    << "  g.serial = " << Quote(g.serial) << ";\n"
    << "  g.minor = " << g.minor << ";\n"
    << "  g.bus_id = " << Quote(g.bus_id) << ";\n"
    << "  g.pci_device_id = " << g.pci_device_id << "u;\n"
    << "  g.pci_subsystem_id = " << g.pci_subsystem_id << "u;\n"
    << "  g.numa_node = " << g.numa_node << ";\n"
    << "  g.cpu_affinity = " << List(g.cpu_affinity) << ";\n"
    << "  g.cc_major = " << g.cc_major << ";\n"
    << "  g.cc_minor = " << g.cc_minor << ";\n"
    << "  g.architecture = "
    << EnumValue("nvmlDeviceArchitecture_t", g.architecture) << ";\n"
    << "  g.brand = " << EnumValue("nvmlBrandType_t", g.brand) << ";\n"
    << "  g.memory_total = " << U64(g.memory_total) << ";\n"
    << "  g.memory_reserved = " << U64(g.memory_reserved) << ";\n"
    << "  g.memory_used = " << U64(g.memory_used) << ";\n"
    << "  g.multiprocessor_count = " << g.multiprocessor_count << ";\n"
    << "  g.mig_capable = " << Bool(g.mig_capable) << ";\n"
    << "  g.mig_enabled = " << Bool(g.mig_enabled) << ";\n"
    << "  g.mig_pending = " << Bool(g.mig_pending) << ";\n"
    << "  g.max_mig_devices = " << g.max_mig_devices << ";\n";
  EmitMig(o, shared, g);
  EmitLinksAndFabric(o, shared, g);
  EmitPassthrough(o, g);
  o << "}\n\n";
}

void EmitMachine(std::ostream& o, SharedVectors& shared, const std::string& id,
                 const Machine& m) {
  std::vector<std::string> gpu_fns;
  std::vector<std::string> host_fns;
  for (size_t i = 0; i < m.gpus.size(); ++i) {
    gpu_fns.push_back(id + "_gpu" + std::to_string(i));
    EmitGpu(o, shared, gpu_fns.back(), m.gpus[i]);
  }
  for (size_t i = 0; i < m.host_gpus.size(); ++i) {
    host_fns.push_back(id + "_host_gpu" + std::to_string(i));
    EmitGpu(o, shared, host_fns.back(), m.host_gpus[i]);
  }
  o << "Machine " << id << "() {\n"
    << "  Machine m;\n"
    << "  m.source = " << Quote(m.source) << ";\n"
    << "  m.description = " << Quote(m.description) << ";\n"
    << "  m.product_name = " << Quote(m.product_name) << ";\n"
    << "  m.driver_loaded = " << Bool(m.driver_loaded) << ";\n"
    << "  m.init_error = " << EnumValue("nvmlReturn_t", m.init_error) << ";\n"
    << "  m.driver_version = " << Quote(m.driver_version) << ";\n"
    << "  m.nvml_version = " << Quote(m.nvml_version) << ";\n"
    << "  m.cuda_driver_version = " << m.cuda_driver_version << ";\n"
    << "  m.imex_channels = " << m.imex_channels << ";\n"
    << "  m.gpus.resize(" << m.gpus.size() << ");\n";
  for (size_t i = 0; i < gpu_fns.size(); ++i) {
    o << "  " << gpu_fns[i] << "(m.gpus[" << i << "]);\n";
  }
  o << "  m.host_gpus.resize(" << m.host_gpus.size() << ");\n";
  for (size_t i = 0; i < host_fns.size(); ++i) {
    o << "  " << host_fns[i] << "(m.host_gpus[" << i << "]);\n";
  }
  o << "  m.iommufd = " << Bool(m.iommufd) << ";\n";
  for (const std::vector<nvmlGpuTopologyLevel_t>& row : m.topology) {
    o << "  m.topology.push_back({";
    for (size_t i = 0; i < row.size(); ++i) {
      o << (i > 0 ? ", " : "") << EnumValue("nvmlGpuTopologyLevel_t", row[i]);
    }
    o << "});\n";
  }
  o << "  return m;\n}\n\n";
}

int Run(const char* out_path) {
  SharedVectors shared;
  std::ostringstream machines;
  std::vector<std::pair<std::string, std::string>> table;  // name, function
  for (const std::string& name : ProfileNames()) {
    absl::StatusOr<Machine> m = LoadMachine(name);
    if (!m.ok()) {
      std::fprintf(stderr, "sim_profile_compiler: profile %s: %s\n",
                   name.c_str(), std::string(m.status().message()).c_str());
      return 1;
    }
    std::string id = "Profile" + std::to_string(table.size());
    EmitMachine(machines, shared, id, *m);
    table.emplace_back(name, id);
  }
  std::ostringstream o;
  o << "// Generated by sim_profile_compiler from the built-in machine "
       "profiles; do not edit.\n"
    << "#include <cstdint>\n#include <vector>\n\n"
    << "#include \"sim/compiled_profiles.h\"\n\n"
    << "namespace gpulet::sim {\nnamespace {\n\n"
    << shared.Text() << machines.str() << "}  // namespace\n\n"
    << "std::optional<Machine> CompiledProfile(const std::string& name) {\n";
  for (const auto& [name, fn] : table) {
    o << "  if (name == " << Quote(name) << ") return " << fn << "();\n";
  }
  o << "  return std::nullopt;\n}\n\n}  // namespace gpulet::sim\n";
  std::ofstream file(out_path, std::ios::binary | std::ios::trunc);
  file << o.str();
  file.close();
  if (!file) {
    std::fprintf(stderr, "sim_profile_compiler: cannot write %s\n", out_path);
    return 1;
  }
  return 0;
}

}  // namespace
}  // namespace gpulet::sim

int main(int argc, char** argv) {
  if (argc != 2) {
    std::fprintf(stderr, "usage: sim_profile_compiler OUT.cc\n");
    return 2;
  }
  return gpulet::sim::Run(argv[1]);
}
