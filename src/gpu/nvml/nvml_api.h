// The NVML C ABI as far as gpulet uses it: types, enums, constants, struct
// layouts and function signatures identical to NVIDIA's nvml.h (API version
// 13, drivers 580 to 610). Written from NVIDIA's NVML API reference and change
// log; sizes and field offsets are pinned with static_assert below so a
// layout mistake fails the build. Constants that grew between releases
// (NVML_NVLINK_MAX_LINKS, the MIG profile count, nvmlEventTypeAll) carry the
// API 13 value; an older driver answers the extra values with
// NVML_ERROR_INVALID_ARGUMENT or NOT_SUPPORTED, which callers already treat
// as "not there".
//
// Both sides of the dlopen seam include this header: the loader
// (nvml/dynamic_library.cc) declares function pointer types from it, and the
// simulator (nvml/sim/) defines the exported entry points with it. Nothing
// here has behaviour; it is safe to include from any layer at or above nvml.
#pragma once

#include <cstddef>

extern "C" {

// ---------------------------------------------------------------- handles
typedef struct nvmlDevice_st* nvmlDevice_t;
typedef struct nvmlGpuInstance_st* nvmlGpuInstance_t;
typedef struct nvmlComputeInstance_st* nvmlComputeInstance_t;
typedef struct nvmlEventSet_st* nvmlEventSet_t;

// ---------------------------------------------------------------- returns
typedef enum nvmlReturn_enum {
  NVML_SUCCESS = 0,
  NVML_ERROR_UNINITIALIZED = 1,
  NVML_ERROR_INVALID_ARGUMENT = 2,
  NVML_ERROR_NOT_SUPPORTED = 3,
  NVML_ERROR_NO_PERMISSION = 4,
  NVML_ERROR_ALREADY_INITIALIZED = 5,
  NVML_ERROR_NOT_FOUND = 6,
  NVML_ERROR_INSUFFICIENT_SIZE = 7,
  NVML_ERROR_INSUFFICIENT_POWER = 8,
  NVML_ERROR_DRIVER_NOT_LOADED = 9,
  NVML_ERROR_TIMEOUT = 10,
  NVML_ERROR_IRQ_ISSUE = 11,
  NVML_ERROR_LIBRARY_NOT_FOUND = 12,
  NVML_ERROR_FUNCTION_NOT_FOUND = 13,
  NVML_ERROR_CORRUPTED_INFOROM = 14,
  NVML_ERROR_GPU_IS_LOST = 15,
  NVML_ERROR_RESET_REQUIRED = 16,
  NVML_ERROR_OPERATING_SYSTEM = 17,
  NVML_ERROR_LIB_RM_VERSION_MISMATCH = 18,
  NVML_ERROR_IN_USE = 19,
  NVML_ERROR_MEMORY = 20,
  NVML_ERROR_NO_DATA = 21,
  NVML_ERROR_VGPU_ECC_NOT_SUPPORTED = 22,
  NVML_ERROR_INSUFFICIENT_RESOURCES = 23,
  NVML_ERROR_FREQ_NOT_SUPPORTED = 24,
  NVML_ERROR_ARGUMENT_VERSION_MISMATCH = 25,
  NVML_ERROR_DEPRECATED = 26,
  NVML_ERROR_NOT_READY = 27,
  NVML_ERROR_GPU_NOT_FOUND = 28,
  NVML_ERROR_INVALID_STATE = 29,
  NVML_ERROR_RESET_TYPE_NOT_SUPPORTED = 30,
  NVML_ERROR_UNKNOWN = 999
} nvmlReturn_t;

// ---------------------------------------------------------------- constants
#define NVML_DEVICE_PCI_BUS_ID_BUFFER_SIZE 32
#define NVML_DEVICE_PCI_BUS_ID_BUFFER_V2_SIZE 16
#define NVML_DEVICE_UUID_BUFFER_SIZE 80
#define NVML_DEVICE_UUID_V2_BUFFER_SIZE 96
#define NVML_DEVICE_NAME_BUFFER_SIZE 64
#define NVML_DEVICE_NAME_V2_BUFFER_SIZE 96
#define NVML_DEVICE_SERIAL_BUFFER_SIZE 30
#define NVML_SYSTEM_DRIVER_VERSION_BUFFER_SIZE 80
#define NVML_SYSTEM_NVML_VERSION_BUFFER_SIZE 80
// 18 up to driver 580; 36 since 590 (Rubin has more NVLinks).
#define NVML_NVLINK_MAX_LINKS 36
#define NVML_INIT_FLAG_NO_GPUS 1
#define NVML_INIT_FLAG_NO_ATTACH 2
#define NVML_DEVICE_MIG_DISABLE 0x0
#define NVML_DEVICE_MIG_ENABLE 0x1

#define NVML_STRUCT_VERSION(data, ver) \
  (unsigned int)(sizeof(nvml##data##_v##ver##_t) | ((ver) << 24U))

// GPU instance profiles (nvmlDeviceGetGpuInstanceProfileInfo "profile").
#define NVML_GPU_INSTANCE_PROFILE_1_SLICE 0x0
#define NVML_GPU_INSTANCE_PROFILE_2_SLICE 0x1
#define NVML_GPU_INSTANCE_PROFILE_3_SLICE 0x2
#define NVML_GPU_INSTANCE_PROFILE_4_SLICE 0x3
#define NVML_GPU_INSTANCE_PROFILE_7_SLICE 0x4
#define NVML_GPU_INSTANCE_PROFILE_8_SLICE 0x5
#define NVML_GPU_INSTANCE_PROFILE_6_SLICE 0x6
#define NVML_GPU_INSTANCE_PROFILE_1_SLICE_REV1 0x7
#define NVML_GPU_INSTANCE_PROFILE_2_SLICE_REV1 0x8
#define NVML_GPU_INSTANCE_PROFILE_1_SLICE_REV2 0x9
// Driver 570: profiles with graphics; 575: profiles owning none (NO_ME) or
// all (ALL_ME) of the decoder, encoder, JPEG and OFA engines; 595: 3g GFX.
#define NVML_GPU_INSTANCE_PROFILE_1_SLICE_GFX 0xA
#define NVML_GPU_INSTANCE_PROFILE_2_SLICE_GFX 0xB
#define NVML_GPU_INSTANCE_PROFILE_4_SLICE_GFX 0xC
#define NVML_GPU_INSTANCE_PROFILE_1_SLICE_NO_ME 0xD
#define NVML_GPU_INSTANCE_PROFILE_2_SLICE_NO_ME 0xE
#define NVML_GPU_INSTANCE_PROFILE_1_SLICE_ALL_ME 0xF
#define NVML_GPU_INSTANCE_PROFILE_2_SLICE_ALL_ME 0x10
#define NVML_GPU_INSTANCE_PROFILE_3_SLICE_GFX 0x11
#define NVML_GPU_INSTANCE_PROFILE_COUNT 0x12

// Compute instance profiles and engine profiles.
#define NVML_COMPUTE_INSTANCE_PROFILE_1_SLICE 0x0
#define NVML_COMPUTE_INSTANCE_PROFILE_2_SLICE 0x1
#define NVML_COMPUTE_INSTANCE_PROFILE_3_SLICE 0x2
#define NVML_COMPUTE_INSTANCE_PROFILE_4_SLICE 0x3
#define NVML_COMPUTE_INSTANCE_PROFILE_7_SLICE 0x4
#define NVML_COMPUTE_INSTANCE_PROFILE_8_SLICE 0x5
#define NVML_COMPUTE_INSTANCE_PROFILE_6_SLICE 0x6
#define NVML_COMPUTE_INSTANCE_PROFILE_1_SLICE_REV1 0x7
#define NVML_COMPUTE_INSTANCE_PROFILE_COUNT 0x8
#define NVML_COMPUTE_INSTANCE_ENGINE_PROFILE_SHARED 0x0
#define NVML_COMPUTE_INSTANCE_ENGINE_PROFILE_COUNT 0x1

// Event types (bit mask).
#define nvmlEventTypeSingleBitEccError 0x0000000000000001LL
#define nvmlEventTypeDoubleBitEccError 0x0000000000000002LL
#define nvmlEventTypePState 0x0000000000000004LL
#define nvmlEventTypeXidCriticalError 0x0000000000000008LL
#define nvmlEventTypeClock 0x0000000000000010LL
#define nvmlEventTypePowerSourceChange 0x0000000000000080LL
#define nvmlEventMigConfigChange 0x0000000000000100LL
#define nvmlEventTypeSingleBitEccErrorStorm 0x0000000000000200LL
#define nvmlEventTypeDramRetirementEvent 0x0000000000000400LL
#define nvmlEventTypeDramRetirementFailure 0x0000000000000800LL
#define nvmlEventTypeNonFatalPoisonError 0x0000000000001000LL
#define nvmlEventTypeFatalPoisonError 0x0000000000002000LL
#define nvmlEventTypeGpuUnavailableError 0x0000000000004000LL
#define nvmlEventTypeGpuRecoveryAction 0x0000000000008000LL
#define nvmlEventTypeNone 0x0000000000000000LL
#define nvmlEventTypeAll                                                       \
  (nvmlEventTypeNone | nvmlEventTypeSingleBitEccError |                        \
   nvmlEventTypeDoubleBitEccError | nvmlEventTypePState | nvmlEventTypeClock | \
   nvmlEventTypeXidCriticalError | nvmlEventTypePowerSourceChange |            \
   nvmlEventMigConfigChange | nvmlEventTypeSingleBitEccErrorStorm |            \
   nvmlEventTypeDramRetirementEvent | nvmlEventTypeDramRetirementFailure |     \
   nvmlEventTypeNonFatalPoisonError | nvmlEventTypeFatalPoisonError |          \
   nvmlEventTypeGpuUnavailableError | nvmlEventTypeGpuRecoveryAction)

// GPU fabric (NVLink multi-node domains such as GB200 NVL72).
#define NVML_GPU_FABRIC_UUID_LEN 16
#define NVML_GPU_FABRIC_STATE_NOT_SUPPORTED 0
#define NVML_GPU_FABRIC_STATE_NOT_STARTED 1
#define NVML_GPU_FABRIC_STATE_IN_PROGRESS 2
#define NVML_GPU_FABRIC_STATE_COMPLETED 3
#define NVML_GPU_FABRIC_HEALTH_SUMMARY_NOT_SUPPORTED 0
#define NVML_GPU_FABRIC_HEALTH_SUMMARY_HEALTHY 1
#define NVML_GPU_FABRIC_HEALTH_SUMMARY_UNHEALTHY 2
#define NVML_GPU_FABRIC_HEALTH_SUMMARY_LIMITED_CAPACITY 3

// ---------------------------------------------------------------- enums
typedef enum nvmlEnableState_enum {
  NVML_FEATURE_DISABLED = 0,
  NVML_FEATURE_ENABLED = 1
} nvmlEnableState_t;

typedef enum nvmlBrandType_enum {
  NVML_BRAND_UNKNOWN = 0,
  NVML_BRAND_QUADRO = 1,
  NVML_BRAND_TESLA = 2,
  NVML_BRAND_NVS = 3,
  NVML_BRAND_GRID = 4,
  NVML_BRAND_GEFORCE = 5,
  NVML_BRAND_TITAN = 6,
  NVML_BRAND_NVIDIA_VAPPS = 7,
  NVML_BRAND_NVIDIA_VPC = 8,
  NVML_BRAND_NVIDIA_VCS = 9,
  NVML_BRAND_NVIDIA_VWS = 10,
  NVML_BRAND_NVIDIA_CLOUD_GAMING = 11,
  NVML_BRAND_QUADRO_RTX = 12,
  NVML_BRAND_NVIDIA_RTX = 13,
  NVML_BRAND_NVIDIA = 14,
  NVML_BRAND_GEFORCE_RTX = 15,
  NVML_BRAND_TITAN_RTX = 16,
  NVML_BRAND_COUNT
} nvmlBrandType_t;

typedef unsigned int nvmlDeviceArchitecture_t;
#define NVML_DEVICE_ARCH_KEPLER 2
#define NVML_DEVICE_ARCH_MAXWELL 3
#define NVML_DEVICE_ARCH_PASCAL 4
#define NVML_DEVICE_ARCH_VOLTA 5
#define NVML_DEVICE_ARCH_TURING 6
#define NVML_DEVICE_ARCH_AMPERE 7
#define NVML_DEVICE_ARCH_ADA 8
#define NVML_DEVICE_ARCH_HOPPER 9
#define NVML_DEVICE_ARCH_BLACKWELL 10
#define NVML_DEVICE_ARCH_T23X 11  // Orin (Tegra)
#define NVML_DEVICE_ARCH_RUBIN 13
#define NVML_DEVICE_ARCH_UNKNOWN 0xffffffff

typedef enum nvmlGpuLevel_enum {
  NVML_TOPOLOGY_INTERNAL = 0,
  NVML_TOPOLOGY_SINGLE = 10,
  NVML_TOPOLOGY_MULTIPLE = 20,
  NVML_TOPOLOGY_HOSTBRIDGE = 30,
  NVML_TOPOLOGY_NODE = 40,
  NVML_TOPOLOGY_SYSTEM = 50
} nvmlGpuTopologyLevel_t;

typedef enum nvmlGpuP2PStatus_enum {
  NVML_P2P_STATUS_OK = 0,
  NVML_P2P_STATUS_CHIPSET_NOT_SUPPORED,
  NVML_P2P_STATUS_GPU_NOT_SUPPORTED,
  NVML_P2P_STATUS_IOH_TOPOLOGY_NOT_SUPPORTED,
  NVML_P2P_STATUS_DISABLED_BY_REGKEY,
  NVML_P2P_STATUS_NOT_SUPPORTED,
  NVML_P2P_STATUS_UNKNOWN
} nvmlGpuP2PStatus_t;

typedef enum nvmlGpuP2PCapsIndex_enum {
  NVML_P2P_CAPS_INDEX_READ = 0,
  NVML_P2P_CAPS_INDEX_WRITE = 1,
  NVML_P2P_CAPS_INDEX_NVLINK = 2,
  NVML_P2P_CAPS_INDEX_ATOMICS = 3,
  NVML_P2P_CAPS_INDEX_PROP = 4,
  NVML_P2P_CAPS_INDEX_UNKNOWN = 5
} nvmlGpuP2PCapsIndex_t;

typedef enum nvmlIntNvLinkDeviceType_enum {
  NVML_NVLINK_DEVICE_TYPE_GPU = 0x00,
  NVML_NVLINK_DEVICE_TYPE_IBMNPU = 0x01,
  NVML_NVLINK_DEVICE_TYPE_SWITCH = 0x02,
  NVML_NVLINK_DEVICE_TYPE_UNKNOWN = 0xFF
} nvmlIntNvLinkDeviceType_t;

// ---------------------------------------------------------------- structs
typedef struct nvmlPciInfo_st {
  char busIdLegacy[NVML_DEVICE_PCI_BUS_ID_BUFFER_V2_SIZE];
  unsigned int domain;
  unsigned int bus;
  unsigned int device;
  unsigned int pciDeviceId;
  unsigned int pciSubSystemId;
  char busId[NVML_DEVICE_PCI_BUS_ID_BUFFER_SIZE];
} nvmlPciInfo_t;

typedef struct nvmlMemory_st {
  unsigned long long total;
  unsigned long long free;
  unsigned long long used;
} nvmlMemory_t;

typedef struct nvmlMemory_v2_st {
  unsigned int version;
  unsigned long long total;
  unsigned long long reserved;
  unsigned long long free;
  unsigned long long used;
} nvmlMemory_v2_t;
#define nvmlMemory_v2 NVML_STRUCT_VERSION(Memory, 2)

typedef struct nvmlDeviceAttributes_st {
  unsigned int multiprocessorCount;
  unsigned int sharedCopyEngineCount;
  unsigned int sharedDecoderCount;
  unsigned int sharedEncoderCount;
  unsigned int sharedJpegCount;
  unsigned int sharedOfaCount;
  unsigned int gpuInstanceSliceCount;
  unsigned int computeInstanceSliceCount;
  unsigned long long memorySizeMB;
} nvmlDeviceAttributes_t;

typedef struct nvmlEventData_st {
  nvmlDevice_t device;
  unsigned long long eventType;
  unsigned long long eventData;
  unsigned int gpuInstanceId;
  unsigned int computeInstanceId;
} nvmlEventData_t;

typedef struct nvmlGpuInstancePlacement_st {
  unsigned int start;
  unsigned int size;
} nvmlGpuInstancePlacement_t;

typedef struct nvmlGpuInstanceProfileInfo_st {
  unsigned int id;
  unsigned int isP2pSupported;
  unsigned int sliceCount;
  unsigned int instanceCount;
  unsigned int multiprocessorCount;
  unsigned int copyEngineCount;
  unsigned int decoderCount;
  unsigned int encoderCount;
  unsigned int jpegCount;
  unsigned int ofaCount;
  unsigned long long memorySizeMB;
} nvmlGpuInstanceProfileInfo_t;

typedef struct nvmlGpuInstanceProfileInfo_v2_st {
  unsigned int version;
  unsigned int id;
  unsigned int isP2pSupported;
  unsigned int sliceCount;
  unsigned int instanceCount;
  unsigned int multiprocessorCount;
  unsigned int copyEngineCount;
  unsigned int decoderCount;
  unsigned int encoderCount;
  unsigned int jpegCount;
  unsigned int ofaCount;
  unsigned long long memorySizeMB;
  char name[NVML_DEVICE_NAME_V2_BUFFER_SIZE];
} nvmlGpuInstanceProfileInfo_v2_t;
#define nvmlGpuInstanceProfileInfo_v2 \
  NVML_STRUCT_VERSION(GpuInstanceProfileInfo, 2)

typedef struct nvmlGpuInstanceInfo_st {
  nvmlDevice_t device;
  unsigned int id;
  unsigned int profileId;
  nvmlGpuInstancePlacement_t placement;
} nvmlGpuInstanceInfo_t;

typedef struct nvmlComputeInstancePlacement_st {
  unsigned int start;
  unsigned int size;
} nvmlComputeInstancePlacement_t;

typedef struct nvmlComputeInstanceProfileInfo_st {
  unsigned int id;
  unsigned int sliceCount;
  unsigned int instanceCount;
  unsigned int multiprocessorCount;
  unsigned int sharedCopyEngineCount;
  unsigned int sharedDecoderCount;
  unsigned int sharedEncoderCount;
  unsigned int sharedJpegCount;
  unsigned int sharedOfaCount;
} nvmlComputeInstanceProfileInfo_t;

typedef struct nvmlComputeInstanceProfileInfo_v2_st {
  unsigned int version;
  unsigned int id;
  unsigned int sliceCount;
  unsigned int instanceCount;
  unsigned int multiprocessorCount;
  unsigned int sharedCopyEngineCount;
  unsigned int sharedDecoderCount;
  unsigned int sharedEncoderCount;
  unsigned int sharedJpegCount;
  unsigned int sharedOfaCount;
  char name[NVML_DEVICE_NAME_V2_BUFFER_SIZE];
} nvmlComputeInstanceProfileInfo_v2_t;
#define nvmlComputeInstanceProfileInfo_v2 \
  NVML_STRUCT_VERSION(ComputeInstanceProfileInfo, 2)

typedef unsigned char nvmlGpuFabricState_t;

// nvmlDeviceGetGpuFabricInfo (unversioned, driver 525+).
typedef struct nvmlGpuFabricInfo_st {
  unsigned char clusterUuid[NVML_GPU_FABRIC_UUID_LEN];
  nvmlReturn_t status;  // why the probe failed, when state says so
  unsigned int cliqueId;
  nvmlGpuFabricState_t state;
} nvmlGpuFabricInfo_t;

// nvmlDeviceGetGpuFabricInfoV: the caller sets `version` to pick the layout.
typedef struct nvmlGpuFabricInfo_v2_st {
  unsigned int version;
  unsigned char clusterUuid[NVML_GPU_FABRIC_UUID_LEN];
  nvmlReturn_t status;
  unsigned int cliqueId;
  nvmlGpuFabricState_t state;
  unsigned int healthMask;
} nvmlGpuFabricInfo_v2_t;
#define nvmlGpuFabricInfo_v2 NVML_STRUCT_VERSION(GpuFabricInfo, 2)

// Driver 580 adds healthSummary; nvmlGpuFabricInfoV_t names v3 in API 13.
typedef struct nvmlGpuFabricInfo_v3_st {
  unsigned int version;
  unsigned char clusterUuid[NVML_GPU_FABRIC_UUID_LEN];
  nvmlReturn_t status;
  unsigned int cliqueId;
  nvmlGpuFabricState_t state;
  unsigned int healthMask;
  unsigned char healthSummary;
} nvmlGpuFabricInfo_v3_t;
#define nvmlGpuFabricInfo_v3 NVML_STRUCT_VERSION(GpuFabricInfo, 3)
typedef nvmlGpuFabricInfo_v3_t nvmlGpuFabricInfoV_t;

typedef struct nvmlComputeInstanceInfo_st {
  nvmlDevice_t device;
  nvmlGpuInstance_t gpuInstance;
  unsigned int id;
  unsigned int profileId;
  nvmlComputeInstancePlacement_t placement;
} nvmlComputeInstanceInfo_t;

// ---------------------------------------------------------------- functions
// The exact signatures, as declared by nvml.h. The loader takes pointers of
// these types from dlsym; the simulator defines them.
#define GPULET_NVML_FUNCTIONS(X)                                               \
  X(nvmlInit_v2, (void))                                                       \
  X(nvmlInit, (void))                                                          \
  X(nvmlInitWithFlags, (unsigned int flags))                                   \
  X(nvmlShutdown, (void))                                                      \
  X(nvmlSystemGetDriverVersion, (char* version, unsigned int length))          \
  X(nvmlSystemGetNVMLVersion, (char* version, unsigned int length))            \
  X(nvmlSystemGetCudaDriverVersion, (int* cudaDriverVersion))                  \
  X(nvmlSystemGetCudaDriverVersion_v2, (int* cudaDriverVersion))               \
  X(nvmlDeviceGetCount_v2, (unsigned int* deviceCount))                        \
  X(nvmlDeviceGetCount, (unsigned int* deviceCount))                           \
  X(nvmlDeviceGetHandleByIndex_v2, (unsigned int index, nvmlDevice_t* device)) \
  X(nvmlDeviceGetHandleByIndex, (unsigned int index, nvmlDevice_t* device))    \
  X(nvmlDeviceGetHandleByUUID, (const char* uuid, nvmlDevice_t* device))       \
  X(nvmlDeviceGetHandleByPciBusId_v2,                                          \
    (const char* pciBusId, nvmlDevice_t* device))                              \
  X(nvmlDeviceGetHandleByPciBusId,                                             \
    (const char* pciBusId, nvmlDevice_t* device))                              \
  X(nvmlDeviceGetIndex, (nvmlDevice_t device, unsigned int* index))            \
  X(nvmlDeviceGetUUID, (nvmlDevice_t device, char* uuid, unsigned int length)) \
  X(nvmlDeviceGetName, (nvmlDevice_t device, char* name, unsigned int length)) \
  X(nvmlDeviceGetSerial,                                                       \
    (nvmlDevice_t device, char* serial, unsigned int length))                  \
  X(nvmlDeviceGetMinorNumber,                                                  \
    (nvmlDevice_t device, unsigned int* minorNumber))                          \
  X(nvmlDeviceGetPciInfo_v3, (nvmlDevice_t device, nvmlPciInfo_t * pci))       \
  X(nvmlDeviceGetPciInfo_v2, (nvmlDevice_t device, nvmlPciInfo_t * pci))       \
  X(nvmlDeviceGetPciInfo, (nvmlDevice_t device, nvmlPciInfo_t * pci))          \
  X(nvmlDeviceGetMemoryInfo, (nvmlDevice_t device, nvmlMemory_t * memory))     \
  X(nvmlDeviceGetMemoryInfo_v2,                                                \
    (nvmlDevice_t device, nvmlMemory_v2_t * memory))                           \
  X(nvmlDeviceGetCudaComputeCapability,                                        \
    (nvmlDevice_t device, int* major, int* minor))                             \
  X(nvmlDeviceGetBrand, (nvmlDevice_t device, nvmlBrandType_t * type))         \
  X(nvmlDeviceGetArchitecture,                                                 \
    (nvmlDevice_t device, nvmlDeviceArchitecture_t * arch))                    \
  X(nvmlDeviceGetNumaNodeId, (nvmlDevice_t device, unsigned int* node))        \
  X(nvmlDeviceGetMigMode, (nvmlDevice_t device, unsigned int* currentMode,     \
                           unsigned int* pendingMode))                         \
  X(nvmlDeviceGetMaxMigDeviceCount,                                            \
    (nvmlDevice_t device, unsigned int* count))                                \
  X(nvmlDeviceGetMigDeviceHandleByIndex,                                       \
    (nvmlDevice_t device, unsigned int index, nvmlDevice_t* migDevice))        \
  X(nvmlDeviceIsMigDeviceHandle,                                               \
    (nvmlDevice_t device, unsigned int* isMigDevice))                          \
  X(nvmlDeviceGetDeviceHandleFromMigDeviceHandle,                              \
    (nvmlDevice_t migDevice, nvmlDevice_t * device))                           \
  X(nvmlDeviceGetGpuInstanceId, (nvmlDevice_t device, unsigned int* id))       \
  X(nvmlDeviceGetComputeInstanceId, (nvmlDevice_t device, unsigned int* id))   \
  X(nvmlDeviceGetAttributes_v2,                                                \
    (nvmlDevice_t device, nvmlDeviceAttributes_t * attributes))                \
  X(nvmlDeviceGetAttributes,                                                   \
    (nvmlDevice_t device, nvmlDeviceAttributes_t * attributes))                \
  X(nvmlDeviceGetGpuInstanceProfileInfo,                                       \
    (nvmlDevice_t device, unsigned int profile,                                \
     nvmlGpuInstanceProfileInfo_t* info))                                      \
  X(nvmlDeviceGetGpuInstanceProfileInfoV,                                      \
    (nvmlDevice_t device, unsigned int profile,                                \
     nvmlGpuInstanceProfileInfo_v2_t* info))                                   \
  X(nvmlDeviceGetGpuInstanceById,                                              \
    (nvmlDevice_t device, unsigned int id, nvmlGpuInstance_t* gpuInstance))    \
  X(nvmlGpuInstanceGetInfo,                                                    \
    (nvmlGpuInstance_t gpuInstance, nvmlGpuInstanceInfo_t * info))             \
  X(nvmlGpuInstanceGetComputeInstanceProfileInfo,                              \
    (nvmlGpuInstance_t gpuInstance, unsigned int profile,                      \
     unsigned int engProfile, nvmlComputeInstanceProfileInfo_t* info))         \
  X(nvmlGpuInstanceGetComputeInstanceProfileInfoV,                             \
    (nvmlGpuInstance_t gpuInstance, unsigned int profile,                      \
     unsigned int engProfile, nvmlComputeInstanceProfileInfo_v2_t* info))      \
  X(nvmlGpuInstanceGetComputeInstanceById,                                     \
    (nvmlGpuInstance_t gpuInstance, unsigned int id,                           \
     nvmlComputeInstance_t* computeInstance))                                  \
  X(nvmlComputeInstanceGetInfo_v2,                                             \
    (nvmlComputeInstance_t computeInstance, nvmlComputeInstanceInfo_t * info)) \
  X(nvmlComputeInstanceGetInfo,                                                \
    (nvmlComputeInstance_t computeInstance, nvmlComputeInstanceInfo_t * info)) \
  X(nvmlEventSetCreate, (nvmlEventSet_t * set))                                \
  X(nvmlDeviceGetSupportedEventTypes,                                          \
    (nvmlDevice_t device, unsigned long long* eventTypes))                     \
  X(nvmlDeviceRegisterEvents,                                                  \
    (nvmlDevice_t device, unsigned long long eventTypes, nvmlEventSet_t set))  \
  X(nvmlEventSetWait_v2,                                                       \
    (nvmlEventSet_t set, nvmlEventData_t * data, unsigned int timeoutms))      \
  X(nvmlEventSetWait,                                                          \
    (nvmlEventSet_t set, nvmlEventData_t * data, unsigned int timeoutms))      \
  X(nvmlEventSetFree, (nvmlEventSet_t set))                                    \
  X(nvmlDeviceGetTopologyCommonAncestor,                                       \
    (nvmlDevice_t device1, nvmlDevice_t device2,                               \
     nvmlGpuTopologyLevel_t * pathInfo))                                       \
  X(nvmlDeviceGetNvLinkState,                                                  \
    (nvmlDevice_t device, unsigned int link, nvmlEnableState_t* isActive))     \
  X(nvmlDeviceGetNvLinkRemotePciInfo_v2,                                       \
    (nvmlDevice_t device, unsigned int link, nvmlPciInfo_t* pci))              \
  X(nvmlDeviceGetNvLinkRemotePciInfo,                                          \
    (nvmlDevice_t device, unsigned int link, nvmlPciInfo_t* pci))              \
  X(nvmlDeviceGetNvLinkRemoteDeviceType,                                       \
    (nvmlDevice_t device, unsigned int link,                                   \
     nvmlIntNvLinkDeviceType_t* pNvLinkDeviceType))                            \
  X(nvmlDeviceGetP2PStatus,                                                    \
    (nvmlDevice_t device1, nvmlDevice_t device2,                               \
     nvmlGpuP2PCapsIndex_t p2pIndex, nvmlGpuP2PStatus_t * p2pStatus))          \
  X(nvmlDeviceGetCpuAffinity,                                                  \
    (nvmlDevice_t device, unsigned int cpuSetSize, unsigned long* cpuSet))     \
  X(nvmlDeviceGetGpuFabricInfo,                                                \
    (nvmlDevice_t device, nvmlGpuFabricInfo_t * gpuFabricInfo))                \
  X(nvmlDeviceGetGpuFabricInfoV,                                               \
    (nvmlDevice_t device, nvmlGpuFabricInfoV_t * gpuFabricInfo))

#define GPULET_NVML_DECLARE(name, params) nvmlReturn_t name params;
GPULET_NVML_FUNCTIONS(GPULET_NVML_DECLARE)
#undef GPULET_NVML_DECLARE
const char* nvmlErrorString(nvmlReturn_t result);

}  // extern "C"

// ---------------------------------------------------------------- ABI pins
// Values from NVIDIA's nvml.h (API 13) on LP64 Linux.
static_assert(sizeof(nvmlPciInfo_t) == 68);
static_assert(offsetof(nvmlPciInfo_t, domain) == 16);
static_assert(offsetof(nvmlPciInfo_t, pciSubSystemId) == 32);
static_assert(offsetof(nvmlPciInfo_t, busId) == 36);
static_assert(sizeof(nvmlMemory_t) == 24);
static_assert(sizeof(nvmlMemory_v2_t) == 40);
static_assert(offsetof(nvmlMemory_v2_t, total) == 8);
static_assert(offsetof(nvmlMemory_v2_t, used) == 32);
static_assert(nvmlMemory_v2 == (40u | (2u << 24)));
static_assert(sizeof(nvmlDeviceAttributes_t) == 40);
static_assert(offsetof(nvmlDeviceAttributes_t, memorySizeMB) == 32);
static_assert(sizeof(nvmlEventData_t) == 32);
static_assert(offsetof(nvmlEventData_t, eventType) == 8);
static_assert(offsetof(nvmlEventData_t, eventData) == 16);
static_assert(offsetof(nvmlEventData_t, gpuInstanceId) == 24);
static_assert(offsetof(nvmlEventData_t, computeInstanceId) == 28);
static_assert(sizeof(nvmlGpuInstanceProfileInfo_t) == 48);
static_assert(offsetof(nvmlGpuInstanceProfileInfo_t, memorySizeMB) == 40);
static_assert(sizeof(nvmlGpuInstanceProfileInfo_v2_t) == 152);
static_assert(offsetof(nvmlGpuInstanceProfileInfo_v2_t, memorySizeMB) == 48);
static_assert(offsetof(nvmlGpuInstanceProfileInfo_v2_t, name) == 56);
static_assert(sizeof(nvmlGpuInstanceInfo_t) == 24);
static_assert(offsetof(nvmlGpuInstanceInfo_t, placement) == 16);
static_assert(sizeof(nvmlComputeInstanceProfileInfo_t) == 36);
static_assert(sizeof(nvmlComputeInstanceProfileInfo_v2_t) == 136);
static_assert(offsetof(nvmlComputeInstanceProfileInfo_v2_t, name) == 40);
static_assert(sizeof(nvmlComputeInstanceInfo_t) == 32);
static_assert(offsetof(nvmlComputeInstanceInfo_t, id) == 16);
static_assert(offsetof(nvmlComputeInstanceInfo_t, placement) == 24);
static_assert(sizeof(nvmlGpuFabricInfo_t) == 28);
static_assert(offsetof(nvmlGpuFabricInfo_t, status) == 16);
static_assert(offsetof(nvmlGpuFabricInfo_t, cliqueId) == 20);
static_assert(offsetof(nvmlGpuFabricInfo_t, state) == 24);
static_assert(sizeof(nvmlGpuFabricInfo_v2_t) == 36);
static_assert(offsetof(nvmlGpuFabricInfo_v2_t, clusterUuid) == 4);
static_assert(offsetof(nvmlGpuFabricInfo_v2_t, cliqueId) == 24);
static_assert(offsetof(nvmlGpuFabricInfo_v2_t, healthMask) == 32);
static_assert(nvmlGpuFabricInfo_v2 == (36u | (2u << 24)));
static_assert(sizeof(nvmlGpuFabricInfo_v3_t) == 40);
static_assert(offsetof(nvmlGpuFabricInfo_v3_t, healthSummary) == 36);
static_assert(nvmlGpuFabricInfo_v3 == (40u | (3u << 24)));
static_assert(NVML_NVLINK_MAX_LINKS == 36);
static_assert(nvmlEventTypeAll == 0xFF9F);
static_assert(sizeof(nvmlGpuTopologyLevel_t) == 4);
static_assert(sizeof(nvmlReturn_t) == 4);
