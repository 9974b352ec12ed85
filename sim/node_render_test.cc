#include "sim/node_render.h"

#include <sys/stat.h>
#include <sys/sysmacros.h>
#include <unistd.h>

#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <sstream>
#include <string>

#include "absl/strings/match.h"
#include "absl/strings/str_cat.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "sim/profiles.h"

namespace gpulet::sim {
namespace {

using ::testing::HasSubstr;
using ::testing::Not;

class TempDir {
 public:
  TempDir() {
    char tmpl[] = "/tmp/gpulet-render-XXXXXX";
    const char* made = ::mkdtemp(tmpl);
    EXPECT_NE(made, nullptr);
    path_ = made == nullptr ? "/nonexistent" : made;
  }
  ~TempDir() {
    std::error_code ec;
    std::filesystem::remove_all(path_, ec);
  }
  const std::string& path() const { return path_; }

 private:
  std::string path_;
};

// Root renders real device nodes; anyone else renders files. Both are
// checked, never skipped.
DevNodes HowForThisUser() {
  return ::geteuid() == 0 ? DevNodes::kMknod : DevNodes::kFiles;
}

std::string Read(const std::string& path) {
  std::ifstream in(path);
  std::stringstream s;
  s << in.rdbuf();
  return s.str();
}

void ExpectNode(const std::string& path, unsigned major, unsigned minor,
                DevNodes how) {
  struct stat st;
  ASSERT_EQ(::lstat(path.c_str(), &st), 0) << path;
  if (how == DevNodes::kMknod) {
    EXPECT_TRUE(S_ISCHR(st.st_mode)) << path;
    EXPECT_EQ(major(st.st_rdev), major) << path;
    EXPECT_EQ(minor(st.st_rdev), minor) << path;
    EXPECT_EQ(st.st_mode & 0777, 0666u) << path;
  } else {
    EXPECT_TRUE(S_ISREG(st.st_mode)) << path;
  }
}

std::string LinkTarget(const std::string& path) {
  std::error_code ec;
  return std::filesystem::read_symlink(path, ec).string();
}

bool Exists(const std::string& path) {
  struct stat st;
  return ::lstat(path.c_str(), &st) == 0;
}

void ExpectRendered(const Machine& m, const std::string& root, DevNodes how) {
  SCOPED_TRACE(m.source);
  for (const Gpu& gpu : m.gpus) {
    ExpectNode(absl::StrCat(root, "/dev/nvidia", gpu.minor), 195, gpu.minor,
               how);
    const std::string bdf = SysfsBusId(gpu.bus_id);
    const std::string info = Read(
        absl::StrCat(root, "/proc/driver/nvidia/gpus/", bdf, "/information"));
    EXPECT_THAT(info, HasSubstr("GPU UUID: \t " + gpu.uuid));
    EXPECT_THAT(info, HasSubstr(absl::StrCat("Device Minor: \t ", gpu.minor)));
    const std::string dev = absl::StrCat(root, "/sys/bus/pci/devices/", bdf);
    EXPECT_EQ(Read(dev + "/numa_node"), absl::StrCat(gpu.numa_node, "\n"));
    EXPECT_EQ(Read(dev + "/vendor"), "0x10de\n");
    EXPECT_EQ(std::filesystem::path(LinkTarget(dev + "/driver")).filename(),
              "nvidia");
    EXPECT_TRUE(std::filesystem::exists(dev + "/iommu_group/devices/" + bdf))
        << bdf;
    for (const MigDevice& mig : gpu.mig_devices) {
      if (!gpu.mig_enabled) break;
      const unsigned gi = GpuInstanceCapMinor(gpu.minor, mig.gpu_instance_id);
      const unsigned ci = ComputeInstanceCapMinor(
          gpu.minor, mig.gpu_instance_id, mig.compute_instance_id);
      ExpectNode(absl::StrCat(root, "/dev/nvidia-caps/nvidia-cap", gi), 235, gi,
                 how);
      ExpectNode(absl::StrCat(root, "/dev/nvidia-caps/nvidia-cap", ci), 235, ci,
                 how);
      const std::string access =
          absl::StrCat(root, "/proc/driver/nvidia/capabilities/gpu", gpu.minor,
                       "/mig/gi", mig.gpu_instance_id);
      EXPECT_EQ(Read(access + "/access"),
                absl::StrCat("DeviceFileMinor: ", gi,
                             "\nDeviceFileMode: 292\nDeviceFileModify: 1\n"));
      EXPECT_THAT(
          Read(absl::StrCat(access, "/ci", mig.compute_instance_id, "/access")),
          HasSubstr(absl::StrCat("DeviceFileMinor: ", ci, "\n")));
    }
  }
  ExpectNode(root + "/dev/nvidiactl", 195, 255, how);
  ExpectNode(root + "/dev/nvidia-modeset", 195, 254, how);
  ExpectNode(root + "/dev/nvidia-uvm", kNvidiaUvmMajor, 0, how);
  ExpectNode(root + "/dev/nvidia-uvm-tools", kNvidiaUvmMajor, 1, how);
  EXPECT_THAT(Read(root + "/proc/driver/nvidia/version"),
              HasSubstr("Kernel Module  " + m.driver_version + "  "));
  EXPECT_THAT(Read(root + "/proc/devices"), HasSubstr("511 nvidia-uvm\n"));
  EXPECT_THAT(Read(root + "/proc/driver/nvidia-caps/mig-minors"),
              HasSubstr("gpu0/gi1/access 12\ngpu0/gi1/ci0/access 13\n"));
  const std::string lib =
      root + "/driver/usr/lib/x86_64-linux-gnu/libcuda.so." + m.driver_version;
  const std::string bytes = Read(lib);
  EXPECT_TRUE(absl::StartsWith(bytes,
                               "\x7f"
                               "ELF"))
      << lib;
  EXPECT_THAT(bytes, HasSubstr(std::string("libcuda.so.1\0", 13)));
  EXPECT_EQ(LinkTarget(root + "/driver/usr/lib/x86_64-linux-gnu/libcuda.so.1"),
            "libcuda.so." + m.driver_version);
  EXPECT_TRUE(absl::StartsWith(Read(root + "/driver/etc/ld.so.cache"),
                               "glibc-ld.so.cache1.1"));
  EXPECT_TRUE(Exists(root + "/driver/usr/bin/nvidia-smi"));
}

TEST(RenderNodeTest, EveryProfileWithADriver) {
  for (const std::string& name : ProfileNames()) {
    absl::StatusOr<Machine> m = LoadMachine(name);
    ASSERT_TRUE(m.ok()) << m.status();
    TempDir dir;
    RenderOptions o;
    o.root = dir.path();
    o.dev_nodes = HowForThisUser();
    absl::Status s = RenderNode(*m, o);
    if (!m->driver_loaded) {
      EXPECT_EQ(s.code(), absl::StatusCode::kInvalidArgument) << name;
      EXPECT_THAT(s.message(), HasSubstr("no driver")) << name;
      continue;
    }
    ASSERT_TRUE(s.ok()) << name << ": " << s;
    ExpectRendered(*m, dir.path(), o.dev_nodes);
  }
}

TEST(RenderNodeTest, RenderingAgainReplacesAnotherMachine) {
  TempDir dir;
  RenderOptions o;
  o.root = dir.path();
  o.dev_nodes = HowForThisUser();
  absl::StatusOr<Machine> big = LoadMachine("islands-16");
  absl::StatusOr<Machine> mig = LoadMachine("a100-mig");
  ASSERT_TRUE(big.ok() && mig.ok());
  ASSERT_TRUE(RenderNode(*big, o).ok());
  ASSERT_TRUE(RenderNode(*big, o).ok()) << "idempotent";
  Machine other = *mig;
  other.driver_version = "535.161.08";
  ASSERT_TRUE(RenderNode(other, o).ok());
  ExpectRendered(other, dir.path(), o.dev_nodes);
  EXPECT_FALSE(Exists(dir.path() + "/dev/nvidia15"));
  EXPECT_FALSE(Exists(dir.path() +
                      "/driver/usr/lib/x86_64-linux-gnu/libcuda.so." +
                      big->driver_version));
  size_t bdfs = 0;
  for (const auto& e : std::filesystem::directory_iterator(
           dir.path() + "/sys/bus/pci/devices")) {
    (void)e;
    ++bdfs;
  }
  EXPECT_EQ(bdfs, other.gpus.size());
}

// The nodes and files of particular GPUs, written out by hand from the
// profiles (their minors are not their indexes): the driver names
// /dev/nvidia<minor>, "Device Minor:" and the MIG capabilities after the
// minor, never after NVML's index.
TEST(RenderNodeTest, NodesAreNamedByMinorNotIndex) {
  TempDir dir;
  const std::string& root = dir.path();
  RenderOptions o;
  o.root = root;
  o.dev_nodes = HowForThisUser();
  absl::StatusOr<Machine> dgx = LoadMachine("dgx-h100");
  ASSERT_TRUE(dgx.ok()) << dgx.status();
  ASSERT_TRUE(RenderNode(*dgx, o).ok());
  for (unsigned minor : {0u, 1u, 2u, 3u, 4u, 5u, 6u, 8u}) {
    ExpectNode(absl::StrCat(root, "/dev/nvidia", minor), 195, minor,
               o.dev_nodes);
  }
  EXPECT_FALSE(Exists(root + "/dev/nvidia7"));
  const std::string gpus = root + "/proc/driver/nvidia/gpus/";
  const std::string first = Read(gpus + "0000:1b:00.0/information");
  EXPECT_THAT(
      first,
      HasSubstr("GPU UUID: \t GPU-9605369a-4cef-521f-904b-cafb54df34d0"));
  EXPECT_THAT(first, HasSubstr("Device Minor: \t 2\n"));
  EXPECT_THAT(Read(gpus + "0000:c3:00.0/information"),
              HasSubstr("Device Minor: \t 8\n"));

  absl::StatusOr<Machine> mig = LoadMachine("a100-mig");
  ASSERT_TRUE(mig.ok()) << mig.status();
  ASSERT_TRUE(RenderNode(*mig, o).ok());
  for (unsigned minor : {0u, 1u, 2u, 4u}) {
    ExpectNode(absl::StrCat(root, "/dev/nvidia", minor), 195, minor,
               o.dev_nodes);
  }
  EXPECT_FALSE(Exists(root + "/dev/nvidia3"));
  EXPECT_FALSE(Exists(root + "/dev/nvidia8"));
  EXPECT_THAT(Read(gpus + "0000:01:00.0/information"),
              HasSubstr("Device Minor: \t 2\n"));
  // GPU 0 (minor 2): GI 1 CI 0 are capabilities 3 + 2*135 + 1*9 and one
  // more; GPU 1 (minor 0): GI 7; GPU 2 (minor 4): GI 2. GPU 3 (minor 1)
  // has MIG disabled, and no GPU has minor 3.
  const std::string caps = root + "/proc/driver/nvidia/capabilities/";
  EXPECT_THAT(Read(caps + "gpu2/mig/gi1/access"),
              HasSubstr("DeviceFileMinor: 282\n"));
  EXPECT_THAT(Read(caps + "gpu2/mig/gi1/ci0/access"),
              HasSubstr("DeviceFileMinor: 283\n"));
  EXPECT_THAT(Read(caps + "gpu0/mig/gi7/access"),
              HasSubstr("DeviceFileMinor: 66\n"));
  EXPECT_THAT(Read(caps + "gpu4/mig/gi2/access"),
              HasSubstr("DeviceFileMinor: 561\n"));
  EXPECT_FALSE(Exists(caps + "gpu1"));
  EXPECT_FALSE(Exists(caps + "gpu3"));
  for (unsigned cap : {282u, 283u, 66u, 67u, 561u, 562u}) {
    ExpectNode(absl::StrCat(root, "/dev/nvidia-caps/nvidia-cap", cap), 235, cap,
               o.dev_nodes);
  }
}

TEST(RenderNodeTest, ProductNameAsDmiReportsIt) {
  TempDir dir;
  RenderOptions o;
  o.root = dir.path();
  o.dev_nodes = HowForThisUser();
  absl::StatusOr<Machine> dgx = LoadMachine("dgx-h100");
  absl::StatusOr<Machine> nvl = LoadMachine("gb200-nvl");
  ASSERT_TRUE(dgx.ok() && nvl.ok());
  ASSERT_TRUE(RenderNode(*dgx, o).ok());
  const std::string product = dir.path() + "/sys/class/dmi/id/product_name";
  EXPECT_EQ(Read(product), "DGX H100\n");
  ASSERT_TRUE(nvl->product_name.empty());
  ASSERT_TRUE(RenderNode(*nvl, o).ok());
  EXPECT_FALSE(Exists(product));
}

TEST(RenderNodeTest, ImexChannelZeroOnFabricNodesOnly) {
  TempDir dir;
  RenderOptions o;
  o.root = dir.path();
  o.dev_nodes = HowForThisUser();
  absl::StatusOr<Machine> tray = LoadMachine("gb200-nvl");
  absl::StatusOr<Machine> dgx = LoadMachine("dgx-b200");
  ASSERT_TRUE(tray.ok() && dgx.ok());
  ASSERT_TRUE(RenderNode(*tray, o).ok());
  const std::string channels = dir.path() + "/dev/nvidia-caps-imex-channels";
  ExpectNode(channels + "/channel0", kNvidiaCapsImexMajor, 0, o.dev_nodes);
  EXPECT_FALSE(Exists(channels + "/channel1"));
  EXPECT_THAT(Read(dir.path() + "/proc/devices"),
              HasSubstr("234 nvidia-caps-imex-channels\n"));
  ASSERT_TRUE(RenderNode(*dgx, o).ok());
  EXPECT_FALSE(Exists(channels));
  EXPECT_THAT(Read(dir.path() + "/proc/devices"), Not(HasSubstr("imex")));
}

TEST(RenderNodeTest, SimulatorLibraryBecomesTheDriversNvml) {
  TempDir dir;
  const std::string sim_lib = dir.path() + "/libnvidia-ml.so.1";
  std::ofstream(sim_lib) << "the simulator";
  absl::StatusOr<Machine> m = LoadMachine("pcie-t4");
  ASSERT_TRUE(m.ok());
  RenderOptions o;
  o.root = dir.path() + "/node";
  o.driver_dir = ".";
  o.dev_nodes = HowForThisUser();
  o.nvml_library = sim_lib;
  ASSERT_TRUE(RenderNode(*m, o).ok());
  const std::string lib_dir = o.root + "/usr/lib/x86_64-linux-gnu/";
  EXPECT_EQ(Read(lib_dir + "libnvidia-ml.so." + m->driver_version),
            "the simulator");
  EXPECT_EQ(LinkTarget(lib_dir + "libnvidia-ml.so.1"),
            "libnvidia-ml.so." + m->driver_version);
  EXPECT_TRUE(Exists(o.root + "/proc/driver/nvidia/version"));
}

TEST(RenderNodeTest, RefusesUnsafeRoots) {
  absl::StatusOr<Machine> m = LoadMachine("pcie-t4");
  ASSERT_TRUE(m.ok());
  for (const char* root : {"", "relative/dir", "/"}) {
    RenderOptions o;
    o.root = root;
    EXPECT_EQ(RenderNode(*m, o).code(), absl::StatusCode::kInvalidArgument)
        << root;
  }
  RenderOptions o;
  o.root = "/tmp/x";
  o.driver_dir = "../escape";
  EXPECT_EQ(RenderNode(*m, o).code(), absl::StatusCode::kInvalidArgument);
}

TEST(RenderTextTest, BusIdsAndCapMinors) {
  EXPECT_EQ(SysfsBusId("00000000:C1:00.0"), "0000:c1:00.0");
  EXPECT_EQ(SysfsBusId("0000:18:00.0"), "0000:18:00.0");
  EXPECT_EQ(GpuInstanceCapMinor(0, 1), 12u);
  EXPECT_EQ(ComputeInstanceCapMinor(0, 1, 0), 13u);
  EXPECT_EQ(GpuInstanceCapMinor(1, 0), 3u + 135u);
}

}  // namespace
}  // namespace gpulet::sim
