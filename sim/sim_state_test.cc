// SimState with machines built in code: lifecycle, fault injection and
// events without the shared library or the YAML parser.
#include "sim/sim_state.h"

#include <chrono>
#include <cstdlib>
#include <string>
#include <thread>

#include "absl/status/status.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "nlohmann/json.hpp"

namespace gpulet::sim {
namespace {

using ::testing::HasSubstr;
using ::testing::StartsWith;

constexpr unsigned long long kHealthEvents = nvmlEventTypeXidCriticalError |
                                             nvmlEventTypeDoubleBitEccError |
                                             nvmlEventTypeSingleBitEccError;

Machine TwoGpus() {
  Machine m;
  m.source = "test:two-gpus";
  m.driver_version = "550.54.15";
  m.nvml_version = "12.550.54.15";
  m.cuda_driver_version = 12040;
  for (int i = 0; i < 2; ++i) {
    Gpu g;
    g.name = "Test GPU";
    g.uuid = "GPU-0000000" + std::to_string(i) + "-0000-4000-8000-000000000000";
    g.bus_id = "00000000:0" + std::to_string(i + 7) + ":00.0";
    g.minor = static_cast<unsigned>(i);
    g.supported_events = kHealthEvents;
    m.gpus.push_back(g);
  }
  m.topology = {{NVML_TOPOLOGY_INTERNAL, NVML_TOPOLOGY_SYSTEM},
                {NVML_TOPOLOGY_SYSTEM, NVML_TOPOLOGY_INTERNAL}};
  return m;
}

class SimStateTest : public ::testing::Test {
 protected:
  SimStateTest()
      : state_([this](const std::string& spec) -> absl::StatusOr<Machine> {
          last_spec_ = spec;
          if (!load_error_.ok()) return load_error_;
          return machine_;
        }) {}
  void SetUp() override { ::unsetenv(kMachineEnv); }

  nvmlDevice_t Gpu(unsigned index) {
    nvmlDevice_t device = nullptr;
    state_.LookupDevice(
        [&](const Machine&, DevicePosition* p) {
          p->gpu = static_cast<int>(index);
          return NVML_SUCCESS;
        },
        &device);
    return device;
  }

  nvmlReturn_t Touch(nvmlDevice_t device) {
    return state_.WithDevice(device,
                             [](const DeviceView&) { return NVML_SUCCESS; });
  }

  nlohmann::json Status() {
    std::string reply = state_.HandleControlLine("status");
    EXPECT_THAT(reply, StartsWith("ok\n"));
    return nlohmann::json::parse(reply.substr(3));
  }

  Machine machine_ = TwoGpus();
  absl::Status load_error_;
  std::string last_spec_;
  SimState state_;
};

TEST_F(SimStateTest, ReferenceCountedInitAndShutdown) {
  EXPECT_EQ(state_.Shutdown(), NVML_ERROR_UNINITIALIZED);
  bool first = false;
  EXPECT_EQ(state_.Init(0, &first), NVML_SUCCESS);
  EXPECT_TRUE(first);
  EXPECT_EQ(state_.Init(0, &first), NVML_SUCCESS);
  EXPECT_FALSE(first);
  EXPECT_EQ(state_.Shutdown(), NVML_SUCCESS);
  EXPECT_EQ(Touch(Gpu(0)), NVML_SUCCESS);
  EXPECT_EQ(state_.Shutdown(), NVML_SUCCESS);
  EXPECT_EQ(state_.Shutdown(), NVML_ERROR_UNINITIALIZED);
}

TEST_F(SimStateTest, MachineComesFromTheEnvironment) {
  ASSERT_EQ(state_.Init(0), NVML_SUCCESS);
  EXPECT_EQ(last_spec_, "dgx-h100");
  ASSERT_EQ(state_.Shutdown(), NVML_SUCCESS);
  ::setenv(kMachineEnv, "/tmp/m.yaml", 1);
  ASSERT_EQ(state_.Init(0), NVML_SUCCESS);
  EXPECT_EQ(last_spec_, "/tmp/m.yaml");
  ASSERT_EQ(state_.Shutdown(), NVML_SUCCESS);
  ::unsetenv(kMachineEnv);
}

TEST_F(SimStateTest, LoadErrorShowsInErrorString) {
  EXPECT_STREQ(state_.ErrorString(NVML_ERROR_UNKNOWN), "Unknown Error");
  load_error_ = absl::InvalidArgumentError("m.yaml:3: gpus[0].busId: bad");
  EXPECT_EQ(state_.Init(0), NVML_ERROR_UNKNOWN);
  const char* text = state_.ErrorString(NVML_ERROR_UNKNOWN);
  EXPECT_STREQ(text, "Unknown Error: m.yaml:3: gpus[0].busId: bad");
  EXPECT_EQ(state_.Shutdown(), NVML_ERROR_UNINITIALIZED);
  load_error_ = absl::OkStatus();
  ASSERT_EQ(state_.Init(0), NVML_SUCCESS);
  EXPECT_STREQ(state_.ErrorString(NVML_ERROR_UNKNOWN), "Unknown Error");
  EXPECT_STREQ(text, "Unknown Error: m.yaml:3: gpus[0].busId: bad");
  ASSERT_EQ(state_.Shutdown(), NVML_SUCCESS);
}

TEST_F(SimStateTest, NoDriverAndNoGpus) {
  machine_.driver_loaded = false;
  machine_.init_error = NVML_ERROR_NO_PERMISSION;
  EXPECT_EQ(state_.Init(0), NVML_ERROR_NO_PERMISSION);
  machine_ = TwoGpus();
  machine_.gpus.clear();
  EXPECT_EQ(state_.Init(0), NVML_SUCCESS);
  EXPECT_EQ(state_.Init(NVML_INIT_FLAG_NO_GPUS), NVML_SUCCESS);
  EXPECT_EQ(state_.Shutdown(), NVML_SUCCESS);
  EXPECT_EQ(state_.Shutdown(), NVML_SUCCESS);
}

TEST_F(SimStateTest, ForeignAndStaleHandles) {
  ASSERT_EQ(state_.Init(0), NVML_SUCCESS);
  int not_a_handle = 0;
  EXPECT_EQ(Touch(reinterpret_cast<nvmlDevice_t>(&not_a_handle)),
            NVML_ERROR_INVALID_ARGUMENT);
  EXPECT_EQ(Touch(nullptr), NVML_ERROR_INVALID_ARGUMENT);
  nvmlDevice_t second = Gpu(1);
  ASSERT_EQ(state_.Shutdown(), NVML_SUCCESS);
  EXPECT_EQ(Touch(second), NVML_ERROR_UNINITIALIZED);
  machine_.gpus.pop_back();
  ASSERT_EQ(state_.Init(0), NVML_SUCCESS);
  EXPECT_EQ(Touch(second), NVML_ERROR_INVALID_ARGUMENT);
  EXPECT_EQ(Touch(Gpu(0)), NVML_SUCCESS);
  ASSERT_EQ(state_.Shutdown(), NVML_SUCCESS);
}

TEST_F(SimStateTest, LoseAndRestoreSurviveInitCycles) {
  ASSERT_EQ(state_.Init(0), NVML_SUCCESS);
  nvmlDevice_t gpu1 = Gpu(1);
  EXPECT_EQ(state_.HandleControlLine("lose " + machine_.gpus[1].uuid), "ok\n");
  EXPECT_EQ(Touch(gpu1), NVML_ERROR_GPU_IS_LOST);
  EXPECT_EQ(Touch(Gpu(0)), NVML_SUCCESS);
  ASSERT_EQ(state_.Shutdown(), NVML_SUCCESS);
  ASSERT_EQ(state_.Init(0), NVML_SUCCESS);
  EXPECT_EQ(Touch(gpu1), NVML_ERROR_GPU_IS_LOST);
  EXPECT_TRUE(Status()["gpus"][1]["lost"]);
  EXPECT_EQ(state_.HandleControlLine("restore 1"), "ok\n");
  EXPECT_EQ(Touch(gpu1), NVML_SUCCESS);
  ASSERT_EQ(state_.Shutdown(), NVML_SUCCESS);
}

TEST_F(SimStateTest, BadTargetsNameTheToken) {
  ASSERT_EQ(state_.Init(0), NVML_SUCCESS);
  EXPECT_THAT(state_.HandleControlLine("lose 2"),
              HasSubstr("error unknown gpu \"2\""));
  EXPECT_THAT(state_.HandleControlLine("dbe GPU-nope"),
              HasSubstr("unknown gpu \"GPU-nope\""));
  EXPECT_THAT(state_.HandleControlLine("frob 0"),
              HasSubstr("unknown command \"frob\""));
  EXPECT_THAT(state_.HandleControlLine("wait-error 12345"),
              HasSubstr("unknown NVML return code \"12345\""));
  ASSERT_EQ(state_.Shutdown(), NVML_SUCCESS);
}

TEST_F(SimStateTest, EventsReachRegisteredSetsOnly) {
  ASSERT_EQ(state_.Init(0), NVML_SUCCESS);
  nvmlEventSet_t set = nullptr;
  ASSERT_EQ(state_.CreateEventSet(&set), NVML_SUCCESS);
  ASSERT_EQ(state_.RegisterEvents(Gpu(0), nvmlEventTypeXidCriticalError, set),
            NVML_SUCCESS);
  EXPECT_EQ(state_.RegisterEvents(Gpu(0), nvmlEventTypePState, set),
            NVML_ERROR_NOT_SUPPORTED);
  state_.HandleControlLine("xid 1 31");  // not registered
  state_.HandleControlLine("dbe 0");     // type not registered
  state_.HandleControlLine("xid 0 48 3 1");
  nvmlEventData_t data{};
  ASSERT_EQ(state_.WaitEvent(set, 0, &data), NVML_SUCCESS);
  EXPECT_EQ(data.device, Gpu(0));
  EXPECT_EQ(data.eventType,
            static_cast<unsigned long long>(nvmlEventTypeXidCriticalError));
  EXPECT_EQ(data.eventData, 48u);
  EXPECT_EQ(data.gpuInstanceId, 3u);
  EXPECT_EQ(data.computeInstanceId, 1u);
  EXPECT_EQ(state_.WaitEvent(set, 0, &data), NVML_ERROR_TIMEOUT);
  nlohmann::json events = Status()["events"];
  EXPECT_EQ(events["injected"], 3);
  EXPECT_EQ(events["unrouted"], 2);
  EXPECT_EQ(events["delivered"], 1);
  ASSERT_EQ(state_.FreeEventSet(set), NVML_SUCCESS);
  EXPECT_EQ(state_.FreeEventSet(set), NVML_ERROR_INVALID_ARGUMENT);
  ASSERT_EQ(state_.Shutdown(), NVML_SUCCESS);
}

TEST_F(SimStateTest, FloodIsBounded) {
  ASSERT_EQ(state_.Init(0), NVML_SUCCESS);
  nvmlEventSet_t set = nullptr;
  ASSERT_EQ(state_.CreateEventSet(&set), NVML_SUCCESS);
  ASSERT_EQ(state_.RegisterEvents(Gpu(0), kHealthEvents, set), NVML_SUCCESS);
  constexpr int kFlood = 10000;
  for (int i = 0; i < kFlood; ++i) {
    state_.HandleControlLine("xid 0 " + std::to_string(i));
  }
  EXPECT_EQ(Status()["events"]["dropped"], kFlood - kEventQueueCapacity);
  nvmlEventData_t data{};
  size_t received = 0;
  unsigned long long first = 0;
  while (state_.WaitEvent(set, 0, &data) == NVML_SUCCESS) {
    if (received++ == 0) first = data.eventData;
  }
  EXPECT_EQ(received, kEventQueueCapacity);
  EXPECT_EQ(first, kFlood - kEventQueueCapacity);  // the oldest were dropped
  ASSERT_EQ(state_.Shutdown(), NVML_SUCCESS);
}

TEST_F(SimStateTest, InjectedWaitErrors) {
  ASSERT_EQ(state_.Init(0), NVML_SUCCESS);
  nvmlEventSet_t set = nullptr;
  ASSERT_EQ(state_.CreateEventSet(&set), NVML_SUCCESS);
  EXPECT_EQ(state_.HandleControlLine("wait-error 999 2"), "ok\n");
  nvmlEventData_t data{};
  EXPECT_EQ(state_.WaitEvent(set, 0, &data), NVML_ERROR_UNKNOWN);
  EXPECT_EQ(state_.WaitEvent(set, 0, &data), NVML_ERROR_UNKNOWN);
  EXPECT_EQ(state_.WaitEvent(set, 0, &data), NVML_ERROR_TIMEOUT);
  EXPECT_EQ(Status()["wait_errors_returned"], 2);
  ASSERT_EQ(state_.Shutdown(), NVML_SUCCESS);
}

// A waiter blocked in nvmlEventSetWait returns promptly when its set is
// freed or NVML is shut down, instead of sleeping out its timeout.
TEST_F(SimStateTest, FreeAndShutdownReleaseWaiters) {
  ASSERT_EQ(state_.Init(0), NVML_SUCCESS);
  for (bool shutdown : {false, true}) {
    nvmlEventSet_t set = nullptr;
    ASSERT_EQ(state_.CreateEventSet(&set), NVML_SUCCESS);
    nvmlReturn_t result = NVML_SUCCESS;
    auto start = std::chrono::steady_clock::now();
    std::thread waiter([&] {
      nvmlEventData_t data{};
      result = state_.WaitEvent(set, 60000, &data);
    });
    if (shutdown) {
      ASSERT_EQ(state_.Shutdown(), NVML_SUCCESS);
    } else {
      ASSERT_EQ(state_.FreeEventSet(set), NVML_SUCCESS);
    }
    waiter.join();
    EXPECT_LT(std::chrono::steady_clock::now() - start,
              std::chrono::seconds(30));
    EXPECT_EQ(result, shutdown ? NVML_ERROR_UNINITIALIZED
                               : NVML_ERROR_INVALID_ARGUMENT);
  }
}

}  // namespace
}  // namespace gpulet::sim
