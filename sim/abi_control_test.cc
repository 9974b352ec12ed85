// ABI tests: fault injection through the control socket of the simulator
// loaded in this process, observed through the NVML calls.
#include <stdlib.h>

#include <string>

#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "nlohmann/json.hpp"
#include "sim/control_client.h"
#include "sim/control_protocol.h"
#include "sim/control_server.h"
#include "sim/testing/abi_test_util.h"

namespace gpulet::sim::testing {
namespace {

using ::testing::HasSubstr;

constexpr unsigned long long kHealth = nvmlEventTypeXidCriticalError |
                                       nvmlEventTypeDoubleBitEccError |
                                       nvmlEventTypeSingleBitEccError;

class AbiControlTest : public SimTest {
 protected:
  nlohmann::json StatusJson() {
    absl::StatusOr<std::string> reply = Control("status");
    EXPECT_TRUE(reply.ok()) << reply.status();
    return nlohmann::json::parse(reply.ok() ? *reply : "{}");
  }
};

TEST_F(AbiControlTest, StatusDescribesTheSimulator) {
  Machine m = Init("pcie-t4");
  ASSERT_EQ(nvml().nvmlInit_v2(), NVML_SUCCESS);
  nlohmann::json status = StatusJson();
  EXPECT_EQ(status["machine"], m.source);
  EXPECT_EQ(status["init_count"], 2);
  ASSERT_EQ(status["gpus"].size(), m.gpus.size());
  EXPECT_EQ(status["gpus"][2]["uuid"], m.gpus[2].uuid);
  EXPECT_EQ(status["gpus"][2]["lost"], false);
  EXPECT_TRUE(status["events"].contains("dropped"));
}

TEST_F(AbiControlTest, LoseAndRestore) {
  Machine m = Init("pcie-t4");
  nvmlDevice_t gpu1 = Device(1);
  nvmlEventSet_t set = nullptr;
  ASSERT_EQ(nvml().nvmlEventSetCreate(&set), NVML_SUCCESS);
  ASSERT_EQ(nvml().nvmlDeviceRegisterEvents(gpu1, kHealth, set), NVML_SUCCESS);

  ASSERT_TRUE(Control("lose " + m.gpus[1].uuid).ok());
  char uuid[NVML_DEVICE_UUID_V2_BUFFER_SIZE];
  EXPECT_EQ(nvml().nvmlDeviceGetUUID(gpu1, uuid, sizeof(uuid)),
            NVML_ERROR_GPU_IS_LOST);
  nvmlDevice_t again = nullptr;
  EXPECT_EQ(nvml().nvmlDeviceGetHandleByIndex_v2(1, &again),
            NVML_ERROR_GPU_IS_LOST);
  EXPECT_EQ(nvml().nvmlDeviceGetHandleByUUID(m.gpus[1].uuid.c_str(), &again),
            NVML_ERROR_GPU_IS_LOST);
  EXPECT_EQ(nvml().nvmlDeviceRegisterEvents(gpu1, kHealth, set),
            NVML_ERROR_GPU_IS_LOST);
  EXPECT_EQ(Uuid(Device(0)), m.gpus[0].uuid);  // the others are fine
  EXPECT_EQ(StatusJson()["gpus"][1]["lost"], true);
  // Falling off the bus is announced as Xid 79.
  nvmlEventData_t data;
  ASSERT_EQ(nvml().nvmlEventSetWait_v2(set, &data, 0), NVML_SUCCESS);
  EXPECT_EQ(data.device, gpu1);
  EXPECT_EQ(data.eventData, 79u);

  ASSERT_TRUE(Control("restore 1").ok());
  EXPECT_EQ(Uuid(gpu1), m.gpus[1].uuid);
  EXPECT_EQ(StatusJson()["gpus"][1]["lost"], false);
  EXPECT_EQ(nvml().nvmlEventSetFree(set), NVML_SUCCESS);
}

TEST_F(AbiControlTest, LosingAGpuLosesItsMigDevices) {
  Machine m = Init("a100-mig");
  nvmlDevice_t mig = nullptr;
  ASSERT_EQ(nvml().nvmlDeviceGetMigDeviceHandleByIndex(Device(2), 0, &mig),
            NVML_SUCCESS);
  nvmlGpuInstance_t gi = nullptr;
  ASSERT_EQ(nvml().nvmlDeviceGetGpuInstanceById(
                Device(2), m.gpus[2].mig_devices[0].gpu_instance_id, &gi),
            NVML_SUCCESS);
  // Naming a MIG device loses its whole GPU.
  ASSERT_TRUE(Control("lose " + m.gpus[2].mig_devices[1].uuid).ok());
  unsigned int id = 0;
  EXPECT_EQ(nvml().nvmlDeviceGetGpuInstanceId(mig, &id),
            NVML_ERROR_GPU_IS_LOST);
  nvmlGpuInstanceInfo_t info;
  EXPECT_EQ(nvml().nvmlGpuInstanceGetInfo(gi, &info), NVML_ERROR_GPU_IS_LOST);
  nvmlDevice_t by_uuid = nullptr;
  EXPECT_EQ(nvml().nvmlDeviceGetHandleByUUID(
                m.gpus[2].mig_devices[0].uuid.c_str(), &by_uuid),
            NVML_ERROR_GPU_IS_LOST);
  ASSERT_TRUE(Control("restore 2").ok());
  EXPECT_EQ(nvml().nvmlDeviceGetGpuInstanceId(mig, &id), NVML_SUCCESS);
}

TEST_F(AbiControlTest, InjectedWaitErrors) {
  Init("pcie-t4");
  nvmlEventSet_t set = nullptr;
  ASSERT_EQ(nvml().nvmlEventSetCreate(&set), NVML_SUCCESS);
  ASSERT_TRUE(Control("wait-error 999 3").ok());
  EXPECT_EQ(StatusJson()["wait_error"]["remaining"], 3);
  nvmlEventData_t data;
  for (int i = 0; i < 3; ++i) {
    EXPECT_EQ(nvml().nvmlEventSetWait_v2(set, &data, 0), NVML_ERROR_UNKNOWN);
  }
  EXPECT_EQ(nvml().nvmlEventSetWait_v2(set, &data, 0), NVML_ERROR_TIMEOUT);
  ASSERT_TRUE(Control("wait-error 15").ok());
  EXPECT_EQ(nvml().nvmlEventSetWait(set, &data, 0), NVML_ERROR_GPU_IS_LOST);
  EXPECT_EQ(nvml().nvmlEventSetWait(set, &data, 0), NVML_ERROR_TIMEOUT);
  EXPECT_EQ(nvml().nvmlEventSetFree(set), NVML_SUCCESS);
}

TEST_F(AbiControlTest, BadCommandsNameTheToken) {
  Init("pcie-t4");
  struct Case {
    const char* line;
    const char* message;
  } cases[] = {
      {"xid 99 1", "unknown gpu \"99\""},
      {"xid GPU-nope 1", "unknown gpu \"GPU-nope\""},
      {"xid 0 abc", "bad Xid \"abc\""},
      {"lose", "expected \"lose <gpu>\""},
      {"explode 0", "unknown command \"explode\""},
      {"wait-error nope", "bad NVML return code \"nope\""},
  };
  for (const Case& c : cases) {
    absl::StatusOr<std::string> reply = Control(c.line);
    EXPECT_EQ(reply.status().code(), absl::StatusCode::kInvalidArgument)
        << c.line;
    EXPECT_THAT(reply.status().message(), HasSubstr(c.message)) << c.line;
  }
}

TEST_F(AbiControlTest, ServerOutlivesShutdown) {
  Init("pcie-t4");
  ASSERT_EQ(nvml().nvmlShutdown(), NVML_SUCCESS);
  nlohmann::json status = StatusJson();
  EXPECT_EQ(status["initialized"], false);
  EXPECT_TRUE(Control("lose 0").ok());
  Init("pcie-t4");
  nvmlDevice_t device = nullptr;
  EXPECT_EQ(nvml().nvmlDeviceGetHandleByIndex_v2(0, &device),
            NVML_ERROR_GPU_IS_LOST);
  EXPECT_TRUE(Control("restore 0").ok());
}

// Another live simulator on the requested path keeps it: this one warns
// and runs without a control channel.
TEST_F(AbiControlTest, LiveOwnerOfTheSocketIsRespected) {
  std::string taken = TempDir() + "/taken.sock";
  auto owner = ControlServer::Start(
      taken, [](const std::string&) { return FormatOkReply("owner"); });
  ASSERT_TRUE(owner.ok()) << owner.status();
  ::setenv("GPULET_SIM_SOCKET", taken.c_str(), 1);
  ::testing::internal::CaptureStderr();
  Use("pcie-t4");
  nvmlReturn_t result = nvml().nvmlInit_v2();
  std::string err = ::testing::internal::GetCapturedStderr();
  ::setenv("GPULET_SIM_SOCKET", SocketPath().c_str(), 1);
  ASSERT_EQ(result, NVML_SUCCESS);
  EXPECT_THAT(err, HasSubstr("already serving control socket " + taken));
  EXPECT_THAT(err, HasSubstr("running without fault injection"));
  absl::StatusOr<std::string> reply = SendControlCommand(taken, "status");
  ASSERT_TRUE(reply.ok()) << reply.status();
  EXPECT_EQ(*reply, "owner");
  // The next first init moves back to this process's own socket.
  ASSERT_EQ(nvml().nvmlShutdown(), NVML_SUCCESS);
  Init("pcie-t4");
  EXPECT_TRUE(Control("status").ok());
}

}  // namespace
}  // namespace gpulet::sim::testing
