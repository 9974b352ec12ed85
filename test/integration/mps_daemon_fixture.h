// The part the MPS daemon integration tests share (daemon_mps_test.cc for
// memory shares, daemon_sharing_mps_test.cc for sharing.mps): a driver root
// holding the simulator's nvidia-cuda-mps-control (and nvidia-smi), the
// daemons' logs as a test sees them, and one ListAndWatch stream read
// message by message. Test-only; header-only. Thread safety: none.
#pragma once

#include <sys/stat.h>
#include <sys/types.h>

#include <chrono>
#include <filesystem>
#include <fstream>
#include <functional>
#include <map>
#include <memory>
#include <string>
#include <thread>

#include "absl/strings/numbers.h"
#include "absl/strings/str_cat.h"
#include "absl/time/clock.h"
#include "absl/time/time.h"
#include "deviceplugin/v1beta1/api.grpc.pb.h"
#include "grpcpp/grpcpp.h"
#include "gtest/gtest.h"
#include "sim/node_render.h"
#include "src/base/common/file_util.h"
#include "test/integration/daemon_fake_kubelet.h"
#include "test/integration/gpulet_runner.h"

namespace gpulet::testing {

// Polls a file-system condition (the fake daemon's log) until it holds,
// for up to a minute.
inline bool Eventually(const std::function<bool()>& pred) {
  const absl::Time deadline = absl::Now() + absl::Seconds(60);
  while (!pred()) {
    if (absl::Now() > deadline) return false;
    std::this_thread::sleep_for(std::chrono::milliseconds(10));
  }
  return true;
}

// device ID -> healthy, for one ListAndWatch message.
using Health = std::map<std::string, bool>;

class MpsDaemonTest : public ::testing::Test {
 protected:
  // The temporary directories, and the simulated driver of `version` in
  // driver_: nvidia-cuda-mps-control, and nvidia-smi when `with_smi`.
  void InstallDriver(const std::string& version, bool with_smi) {
    ASSERT_FALSE(tmp_.path().empty());
    std::filesystem::create_directories(dir_);
    std::filesystem::create_directories(driver_ + "/usr/bin");
    const std::string control = driver_ + "/usr/bin/nvidia-cuda-mps-control";
    std::ofstream(control) << sim::MpsControlScript(version);
    ASSERT_EQ(::chmod(control.c_str(), 0755), 0);
    if (!with_smi) return;
    const std::string smi = driver_ + "/usr/bin/nvidia-smi";
    std::ofstream(smi) << sim::NvidiaSmiScript(version);
    ASSERT_EQ(::chmod(smi.c_str(), 0755), 0);
  }

  // A GPU's daemon log, as the simulated control program writes it; "" when
  // there is none yet.
  std::string Log(const std::string& gpu) const {
    absl::StatusOr<std::string> text =
        common::ReadFile(absl::StrCat(mps_, "/", gpu, "/log/control.log"));
    return text.ok() ? *text : "";
  }
  // The value of `key=` on the log's last "start -f" line; "" without one.
  static std::string LastStartField(const std::string& log,
                                    const std::string& key) {
    const size_t at = log.rfind("start -f ");
    if (at == std::string::npos) return "";
    const std::string line = log.substr(at, log.find('\n', at) - at);
    const size_t k = line.find(" " + key + "=");
    if (k == std::string::npos) return "";
    const size_t begin = k + key.size() + 2;
    return line.substr(begin, line.find(' ', begin) - begin);
  }
  // The simulated daemon's own record of its PID, as a test can see it.
  pid_t LastPid(const std::string& gpu) const {
    int pid = -1;
    return absl::SimpleAtoi(LastStartField(Log(gpu), "pid"), &pid) ? pid : -1;
  }

  // Reads stream_ until a message satisfies `pred`; each one is kept in
  // last_.
  bool WaitForHealth(const std::function<bool(const Health&)>& pred) {
    v1beta1::ListAndWatchResponse response;
    while (stream_->Read(&response)) {
      Health health;
      for (const auto& d : response.devices()) {
        health[d.id()] = d.health() == "Healthy";
      }
      last_ = health;
      if (pred(health)) return true;
    }
    return false;
  }
  // The last message read, one device per line.
  std::string Describe() const {
    std::string s;
    for (const auto& [id, healthy] : last_) {
      absl::StrAppend(&s, id, healthy ? " Healthy\n" : " Unhealthy\n");
    }
    return s;
  }

  TempDir tmp_;
  std::string dir_ = tmp_.path() + "/plugins";
  std::string driver_ = tmp_.path() + "/driver";
  std::string mps_ = tmp_.path() + "/mps";
  std::string config_ = tmp_.path() + "/config.yaml";
  std::string log_ = tmp_.path() + "/gpulet.log";
  FakeKubelet kubelet_{dir_};
  std::unique_ptr<v1beta1::DevicePlugin::Stub> stub_;
  grpc::ClientContext context_;
  std::unique_ptr<grpc::ClientReader<v1beta1::ListAndWatchResponse>> stream_;
  Health last_;
};

}  // namespace gpulet::testing
