// SimState's side of the control channel: resolving <gpu> tokens, applying
// fault-injection commands and reporting status.
#include <algorithm>
#include <string>
#include <vector>

#include "absl/strings/ascii.h"
#include "absl/strings/match.h"
#include "absl/strings/numbers.h"
#include "absl/strings/str_cat.h"
#include "nlohmann/json.hpp"
#include "sim/nvml_values.h"
#include "sim/sim_state.h"

namespace gpulet::sim {
namespace {

bool AllDigits(const std::string& text) {
  return !text.empty() && std::all_of(text.begin(), text.end(), [](char c) {
    return absl::ascii_isdigit(c);
  });
}

}  // namespace

std::string SimState::HandleControlLine(const std::string& line) {
  absl::StatusOr<ControlCommand> command = ParseControlCommand(line);
  if (!command.ok()) return FormatErrorReply(command.status().message());
  absl::MutexLock lock(&mu_);
  absl::StatusOr<std::string> payload = Execute(*command);
  if (!payload.ok()) return FormatErrorReply(payload.status().message());
  return FormatOkReply(*payload);
}

absl::StatusOr<SimState::Target> SimState::ResolveTarget(
    const std::string& token) const {
  const std::vector<Gpu>& gpus = machine_->gpus;
  if (AllDigits(token)) {
    size_t index = 0;
    if (absl::SimpleAtoi(token, &index) && index < gpus.size()) {
      return Target{static_cast<int>(index), kNoInstance, kNoInstance};
    }
    return absl::InvalidArgumentError(absl::StrCat(
        "unknown gpu \"", token, "\": the machine has ", gpus.size(),
        " GPUs (indexes 0..", gpus.empty() ? 0 : gpus.size() - 1, ")"));
  }
  for (size_t i = 0; i < gpus.size(); ++i) {
    if (absl::EqualsIgnoreCase(gpus[i].uuid, token)) {
      return Target{static_cast<int>(i), kNoInstance, kNoInstance};
    }
    for (const MigDevice& mig : gpus[i].mig_devices) {
      if (absl::EqualsIgnoreCase(mig.uuid, token)) {
        return Target{static_cast<int>(i), mig.gpu_instance_id,
                      mig.compute_instance_id};
      }
    }
  }
  return absl::InvalidArgumentError(
      absl::StrCat("unknown gpu \"", token,
                   "\": expected a GPU index, a GPU UUID or a MIG UUID of ",
                   machine_->source));
}

absl::StatusOr<std::string> SimState::Execute(const ControlCommand& command) {
  if (!machine_.has_value()) {
    return absl::FailedPreconditionError(
        "no machine loaded: the last nvmlInit failed to load one");
  }
  if (command.verb == ControlVerb::kStatus) return StatusJson();
  if (command.verb == ControlVerb::kWaitError) {
    if (NvmlReturnName(command.wait_error_code) == nullptr) {
      return absl::InvalidArgumentError(absl::StrCat(
          "wait-error: unknown NVML return code \"", command.wait_error_code,
          "\" (see nvmlReturn_t in nvml.h)"));
    }
    wait_error_code_ = static_cast<nvmlReturn_t>(command.wait_error_code);
    wait_error_remaining_ = command.wait_error_count;
    WakeAllWaiters();
    return std::string();
  }
  absl::StatusOr<Target> target = ResolveTarget(command.gpu);
  if (!target.ok()) return target.status();
  SimEvent event{target->gpu, 0, 0, target->gi, target->ci};
  const std::string& uuid = machine_->gpus[target->gpu].uuid;
  switch (command.verb) {
    case ControlVerb::kXid:
      if (command.gpu_instance.has_value()) {
        if (target->gi != kNoInstance) {
          return absl::InvalidArgumentError(absl::StrCat(
              "xid: \"", command.gpu,
              "\" is a MIG device, which already names its GPU and compute "
              "instance; drop the explicit <gi> <ci>"));
        }
        event.gpu_instance_id = *command.gpu_instance;
        event.compute_instance_id = *command.compute_instance;
      }
      event.type = nvmlEventTypeXidCriticalError;
      event.data = command.xid;
      break;
    case ControlVerb::kDbe:
      event.type = nvmlEventTypeDoubleBitEccError;
      break;
    case ControlVerb::kSbe:
      event.type = nvmlEventTypeSingleBitEccError;
      break;
    case ControlVerb::kLose:
      // The whole board falls off the bus, whichever MIG device was named.
      lost_uuids_.insert(uuid);
      event = SimEvent{target->gpu, nvmlEventTypeXidCriticalError, kXidGpuLost,
                       kNoInstance, kNoInstance};
      break;
    case ControlVerb::kRestore:
      lost_uuids_.erase(uuid);
      return std::string();
    default:
      return absl::InternalError("unhandled control verb");
  }
  Deliver(event);
  return std::string();
}

std::string SimState::StatusJson() const {
  nlohmann::ordered_json status;
  status["machine"] = machine_->source;
  status["initialized"] = init_count_ > 0;
  status["init_count"] = init_count_;
  status["init_cycles"] = init_cycles_;
  nlohmann::ordered_json gpus = nlohmann::ordered_json::array();
  for (size_t i = 0; i < machine_->gpus.size(); ++i) {
    const Gpu& gpu = machine_->gpus[i];
    gpus.push_back({{"index", i},
                    {"uuid", gpu.uuid},
                    {"name", gpu.name},
                    {"lost", lost_uuids_.contains(gpu.uuid)}});
  }
  status["gpus"] = gpus;
  status["event_sets"] = event_sets_.size();
  status["queue_capacity"] = kEventQueueCapacity;
  status["events"] = {{"injected", counters_.events_injected},
                      {"queued", counters_.events_queued},
                      {"delivered", counters_.events_delivered},
                      {"unrouted", counters_.events_unrouted},
                      {"dropped", counters_.events_dropped}};
  nlohmann::ordered_json wait_error = nullptr;
  if (wait_error_remaining_ > 0) {
    const char* name = NvmlReturnName(static_cast<unsigned>(wait_error_code_));
    wait_error = {{"code", static_cast<unsigned>(wait_error_code_)},
                  {"name", name != nullptr ? name : "unknown"},
                  {"remaining", wait_error_remaining_}};
  }
  status["wait_error"] = wait_error;
  status["waits"] = {
      {"blocked_timeouts_ms",
       std::vector<unsigned int>(blocked_waits_.begin(), blocked_waits_.end())},
      {"interrupted", counters_.waits_interrupted}};
  status["wait_errors_returned"] = counters_.wait_errors_returned;
  // Replace, not throw, on bytes that are not UTF-8 (e.g. in a file path).
  return status.dump(-1, ' ', false,
                     nlohmann::ordered_json::error_handler_t::replace);
}

}  // namespace gpulet::sim
