// ABI tests: event sets — registration, waiting, delivery of injected
// events, the queue bound and freeing.
#include <cstddef>
#include <cstring>
#include <string>
#include <thread>

#include "gtest/gtest.h"
#include "nlohmann/json.hpp"
#include "sim/testing/abi_test_util.h"

namespace gpulet::sim::testing {
namespace {

using AbiEventsTest = SimTest;

constexpr unsigned long long kHealth = nvmlEventTypeXidCriticalError |
                                       nvmlEventTypeDoubleBitEccError |
                                       nvmlEventTypeSingleBitEccError;
constexpr unsigned int kNoInstance = 0xFFFFFFFF;

class EventSet {
 public:
  explicit EventSet(const NvmlApi& nvml) : nvml_(nvml) {
    EXPECT_EQ(nvml_.nvmlEventSetCreate(&set_), NVML_SUCCESS);
  }
  ~EventSet() {
    if (set_ != nullptr) nvml_.nvmlEventSetFree(set_);
  }
  nvmlEventSet_t get() const { return set_; }
  nvmlReturn_t Wait(nvmlEventData_t* data, unsigned int timeout_ms = 0) {
    return nvml_.nvmlEventSetWait_v2(set_, data, timeout_ms);
  }

 private:
  const NvmlApi& nvml_;
  nvmlEventSet_t set_ = nullptr;
};

TEST_F(AbiEventsTest, SupportedTypesAndRegistration) {
  Machine m = Init("dgx-h100");
  unsigned long long types = 0;
  ASSERT_EQ(nvml().nvmlDeviceGetSupportedEventTypes(Device(0), &types),
            NVML_SUCCESS);
  EXPECT_EQ(types, m.gpus[0].supported_events);
  EventSet set(nvml());
  EXPECT_EQ(nvml().nvmlDeviceRegisterEvents(Device(0), kHealth, set.get()),
            NVML_SUCCESS);
  EXPECT_EQ(nvml().nvmlDeviceRegisterEvents(Device(0), kHealth, nullptr),
            NVML_ERROR_INVALID_ARGUMENT);
  EXPECT_EQ(nvml().nvmlDeviceGetSupportedEventTypes(Device(0), nullptr),
            NVML_ERROR_INVALID_ARGUMENT);
}

TEST_F(AbiEventsTest, UnsupportedTypesAreRefused) {
  Init(WriteTempFile("xid-only.yaml",
                     "gpus:\n"
                     "  - uuid: GPU-00000000-0000-4000-8000-000000000000\n"
                     "    busId: \"0000:07:00.0\"\n"
                     "    name: Test GPU\n"
                     "    memory: 16GiB\n"
                     "    events: [xid]\n"));
  EventSet set(nvml());
  EXPECT_EQ(nvml().nvmlDeviceRegisterEvents(Device(0), kHealth, set.get()),
            NVML_ERROR_NOT_SUPPORTED);
  EXPECT_EQ(nvml().nvmlDeviceRegisterEvents(
                Device(0), nvmlEventTypeXidCriticalError, set.get()),
            NVML_SUCCESS);
}

TEST_F(AbiEventsTest, WaitTimesOutWhenNothingCame) {
  Init("pcie-t4");
  EventSet set(nvml());
  ASSERT_EQ(nvml().nvmlDeviceRegisterEvents(Device(0), kHealth, set.get()),
            NVML_SUCCESS);
  nvmlEventData_t data;
  EXPECT_EQ(set.Wait(&data, 0), NVML_ERROR_TIMEOUT);
  EXPECT_EQ(set.Wait(&data, 20), NVML_ERROR_TIMEOUT);
  EXPECT_EQ(set.Wait(nullptr, 0), NVML_ERROR_INVALID_ARGUMENT);
}

TEST_F(AbiEventsTest, InjectedXidIsDelivered) {
  Init("pcie-t4");
  EventSet set(nvml());
  ASSERT_EQ(nvml().nvmlDeviceRegisterEvents(Device(1), kHealth, set.get()),
            NVML_SUCCESS);
  ASSERT_TRUE(Control("xid 1 48").ok());
  ASSERT_TRUE(Control("dbe 1").ok());
  ASSERT_TRUE(Control("sbe 0").ok());  // GPU 0 is not registered
  nvmlEventData_t data;
  ASSERT_EQ(set.Wait(&data), NVML_SUCCESS);
  EXPECT_EQ(data.device, Device(1));
  EXPECT_EQ(data.eventType,
            static_cast<unsigned long long>(nvmlEventTypeXidCriticalError));
  EXPECT_EQ(data.eventData, 48u);
  EXPECT_EQ(data.gpuInstanceId, kNoInstance);
  EXPECT_EQ(data.computeInstanceId, kNoInstance);
  ASSERT_EQ(set.Wait(&data), NVML_SUCCESS);
  EXPECT_EQ(data.eventType,
            static_cast<unsigned long long>(nvmlEventTypeDoubleBitEccError));
  EXPECT_EQ(set.Wait(&data), NVML_ERROR_TIMEOUT);
}

TEST_F(AbiEventsTest, BlockedWaiterWakesOnDelivery) {
  Init("pcie-t4");
  EventSet set(nvml());
  ASSERT_EQ(nvml().nvmlDeviceRegisterEvents(Device(0), kHealth, set.get()),
            NVML_SUCCESS);
  nvmlReturn_t result = NVML_ERROR_UNKNOWN;
  nvmlEventData_t data{};
  std::thread waiter([&] { result = set.Wait(&data, 60000); });
  ASSERT_TRUE(Control("xid 0 79").ok());
  waiter.join();
  EXPECT_EQ(result, NVML_SUCCESS);
  EXPECT_EQ(data.eventData, 79u);
}

TEST_F(AbiEventsTest, MigScopedXidCarriesInstanceIds) {
  Machine m = Init("a100-mig");
  const MigDevice& mig = m.gpus[0].mig_devices[1];
  EventSet set(nvml());
  ASSERT_EQ(nvml().nvmlDeviceRegisterEvents(Device(0), kHealth, set.get()),
            NVML_SUCCESS);
  ASSERT_TRUE(Control("xid " + mig.uuid + " 31").ok());
  ASSERT_TRUE(Control("xid 0 13 7 2").ok());
  nvmlEventData_t data;
  ASSERT_EQ(set.Wait(&data), NVML_SUCCESS);
  EXPECT_EQ(data.device, Device(0));  // events name the parent GPU
  EXPECT_EQ(data.eventData, 31u);
  EXPECT_EQ(data.gpuInstanceId, mig.gpu_instance_id);
  EXPECT_EQ(data.computeInstanceId, mig.compute_instance_id);
  ASSERT_EQ(set.Wait(&data), NVML_SUCCESS);
  EXPECT_EQ(data.gpuInstanceId, 7u);
  EXPECT_EQ(data.computeInstanceId, 2u);
}

TEST_F(AbiEventsTest, UnversionedWaitWritesTheOldStructOnly) {
  Init("pcie-t4");
  EventSet set(nvml());
  ASSERT_EQ(nvml().nvmlDeviceRegisterEvents(Device(0), kHealth, set.get()),
            NVML_SUCCESS);
  ASSERT_TRUE(Control("xid 0 94").ok());
  nvmlEventData_t data;
  std::memset(&data, 0xAB, sizeof(data));
  ASSERT_EQ(nvml().nvmlEventSetWait(set.get(), &data, 0), NVML_SUCCESS);
  EXPECT_EQ(data.eventData, 94u);
  EXPECT_EQ(data.gpuInstanceId, 0xABABABABu);
}

// A flood through the real socket: the set keeps the newest
// kEventQueueCapacity (1024) events and counts the rest as dropped.
TEST_F(AbiEventsTest, FloodIsBounded) {
  Init("pcie-t4");
  EventSet set(nvml());
  ASSERT_EQ(nvml().nvmlDeviceRegisterEvents(Device(0), kHealth, set.get()),
            NVML_SUCCESS);
  constexpr int kFlood = 1500;
  constexpr int kCapacity = 1024;
  for (int i = 0; i < kFlood; ++i) {
    ASSERT_TRUE(Control("xid 0 " + std::to_string(i)).ok()) << i;
  }
  absl::StatusOr<std::string> status = Control("status");
  ASSERT_TRUE(status.ok()) << status.status();
  nlohmann::json json = nlohmann::json::parse(*status);
  EXPECT_EQ(json["queue_capacity"], kCapacity);
  EXPECT_GE(json["events"]["dropped"].get<int>(), kFlood - kCapacity);
  nvmlEventData_t data;
  int received = 0;
  while (set.Wait(&data) == NVML_SUCCESS) {
    if (received++ == 0) {
      EXPECT_EQ(data.eventData, kFlood - kCapacity);
    }
  }
  EXPECT_EQ(received, kCapacity);
  EXPECT_EQ(data.eventData, kFlood - 1u);
}

TEST_F(AbiEventsTest, FreedSetsAndShutdown) {
  Init("pcie-t4");
  nvmlEventSet_t set = nullptr;
  ASSERT_EQ(nvml().nvmlEventSetCreate(&set), NVML_SUCCESS);
  ASSERT_EQ(nvml().nvmlEventSetFree(set), NVML_SUCCESS);
  nvmlEventData_t data;
  EXPECT_EQ(nvml().nvmlEventSetWait_v2(set, &data, 0),
            NVML_ERROR_INVALID_ARGUMENT);
  EXPECT_EQ(nvml().nvmlEventSetFree(set), NVML_ERROR_INVALID_ARGUMENT);
  EXPECT_EQ(nvml().nvmlEventSetCreate(nullptr), NVML_ERROR_INVALID_ARGUMENT);
  ASSERT_EQ(nvml().nvmlEventSetCreate(&set), NVML_SUCCESS);
  ASSERT_EQ(nvml().nvmlShutdown(), NVML_SUCCESS);
  EXPECT_EQ(nvml().nvmlEventSetWait_v2(set, &data, 0),
            NVML_ERROR_UNINITIALIZED);
  EXPECT_EQ(nvml().nvmlEventSetFree(set), NVML_ERROR_UNINITIALIZED);
}

}  // namespace
}  // namespace gpulet::sim::testing
