#include "sim/control_protocol.h"

#include <vector>

#include "absl/status/status.h"
#include "absl/strings/ascii.h"
#include "absl/strings/escaping.h"
#include "absl/strings/match.h"
#include "absl/strings/numbers.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "absl/strings/str_split.h"

namespace gpulet::sim {
namespace {

struct VerbInfo {
  ControlVerb verb;
  const char* name;
  const char* usage;
};

constexpr VerbInfo kVerbs[] = {
    {ControlVerb::kXid, "xid", "xid <gpu> <xid> [<gi> <ci>]"},
    {ControlVerb::kDbe, "dbe", "dbe <gpu>"},
    {ControlVerb::kSbe, "sbe", "sbe <gpu>"},
    {ControlVerb::kLose, "lose", "lose <gpu>"},
    {ControlVerb::kRestore, "restore", "restore <gpu>"},
    {ControlVerb::kWaitError, "wait-error", "wait-error <nvml-code> [<count>]"},
    {ControlVerb::kStatus, "status", "status"},
};

const VerbInfo& Info(ControlVerb verb) {
  for (const VerbInfo& info : kVerbs) {
    if (info.verb == verb) return info;
  }
  return kVerbs[0];
}

absl::Status UsageError(const VerbInfo& info, size_t got) {
  return absl::InvalidArgumentError(
      absl::StrCat(info.name, ": expected \"", info.usage, "\", got ", got,
                   got == 1 ? " argument" : " arguments"));
}

// Digits only: SimpleAtoi would also accept a sign and surrounding blanks.
template <typename T>
absl::Status ParseNumber(const VerbInfo& info, const char* what,
                         absl::string_view token, T* out) {
  bool digits = !token.empty();
  for (char c : token) digits = digits && absl::ascii_isdigit(c);
  if (!digits || !absl::SimpleAtoi(token, out)) {
    return absl::InvalidArgumentError(
        absl::StrCat(info.name, ": bad ", what, " \"", token,
                     "\": expected a non-negative integer"));
  }
  return absl::OkStatus();
}

absl::Status ParseArgs(const VerbInfo& info,
                       const std::vector<absl::string_view>& args,
                       ControlCommand* command) {
  switch (info.verb) {
    case ControlVerb::kStatus:
      if (!args.empty()) return UsageError(info, args.size());
      return absl::OkStatus();
    case ControlVerb::kDbe:
    case ControlVerb::kSbe:
    case ControlVerb::kLose:
    case ControlVerb::kRestore:
      if (args.size() != 1) return UsageError(info, args.size());
      command->gpu = std::string(args[0]);
      return absl::OkStatus();
    case ControlVerb::kXid: {
      if (args.size() != 2 && args.size() != 4) {
        return UsageError(info, args.size());
      }
      command->gpu = std::string(args[0]);
      absl::Status s = ParseNumber(info, "Xid", args[1], &command->xid);
      if (!s.ok() || args.size() == 2) return s;
      unsigned gi = 0, ci = 0;
      s = ParseNumber(info, "GPU instance id", args[2], &gi);
      if (s.ok()) s = ParseNumber(info, "compute instance id", args[3], &ci);
      if (!s.ok()) return s;
      command->gpu_instance = gi;
      command->compute_instance = ci;
      return absl::OkStatus();
    }
    case ControlVerb::kWaitError: {
      if (args.empty() || args.size() > 2) return UsageError(info, args.size());
      absl::Status s = ParseNumber(info, "NVML return code", args[0],
                                   &command->wait_error_code);
      if (s.ok() && command->wait_error_code == 0) {
        s = absl::InvalidArgumentError(
            "wait-error: bad NVML return code \"0\": NVML_SUCCESS is not an "
            "error");
      }
      if (s.ok() && args.size() == 2) {
        s = ParseNumber(info, "count", args[1], &command->wait_error_count);
        if (s.ok() && command->wait_error_count == 0) {
          s = absl::InvalidArgumentError(
              "wait-error: bad count \"0\": expected at least 1");
        }
      }
      return s;
    }
  }
  return absl::InternalError("unhandled control verb");
}

}  // namespace

const char* ControlVerbName(ControlVerb verb) { return Info(verb).name; }

absl::StatusOr<ControlCommand> ParseControlCommand(absl::string_view line) {
  if (line.size() > kMaxControlLineBytes) {
    return absl::InvalidArgumentError(
        absl::StrCat("command line too long: ", line.size(), " bytes (limit ",
                     kMaxControlLineBytes, ")"));
  }
  absl::ConsumeSuffix(&line, "\n");
  absl::ConsumeSuffix(&line, "\r");
  if (absl::StrContains(line, '\n')) {
    return absl::InvalidArgumentError("one command per line expected");
  }
  std::vector<absl::string_view> words =
      absl::StrSplit(line, absl::ByAnyChar(" \t"), absl::SkipEmpty());
  if (words.empty()) return absl::InvalidArgumentError("empty command");
  const VerbInfo* info = nullptr;
  for (const VerbInfo& candidate : kVerbs) {
    if (words[0] == candidate.name) info = &candidate;
  }
  if (info == nullptr) {
    std::vector<std::string> names;
    for (const VerbInfo& candidate : kVerbs) names.push_back(candidate.name);
    return absl::InvalidArgumentError(
        absl::StrCat("unknown command \"", words[0],
                     "\" (expected one of: ", absl::StrJoin(names, " "), ")"));
  }
  ControlCommand command;
  command.verb = info->verb;
  std::vector<absl::string_view> args(words.begin() + 1, words.end());
  absl::Status status = ParseArgs(*info, args, &command);
  if (!status.ok()) return status;
  return command;
}

std::string FormatControlCommand(const ControlCommand& command) {
  std::string line = ControlVerbName(command.verb);
  switch (command.verb) {
    case ControlVerb::kStatus:
      break;
    case ControlVerb::kXid:
      absl::StrAppend(&line, " ", command.gpu, " ", command.xid);
      if (command.gpu_instance && command.compute_instance) {
        absl::StrAppend(&line, " ", *command.gpu_instance, " ",
                        *command.compute_instance);
      }
      break;
    case ControlVerb::kWaitError:
      absl::StrAppend(&line, " ", command.wait_error_code, " ",
                      command.wait_error_count);
      break;
    default:
      absl::StrAppend(&line, " ", command.gpu);
      break;
  }
  return line;
}

std::string FormatOkReply(absl::string_view payload) {
  std::string reply = "ok\n";
  if (!payload.empty()) {
    absl::StrAppend(&reply, payload);
    if (!absl::EndsWith(payload, "\n")) reply += '\n';
  }
  return reply;
}

std::string FormatErrorReply(absl::string_view message) {
  // The reply is one line: flatten any newline in the message.
  std::string flat(message);
  for (char& c : flat) {
    if (c == '\n' || c == '\r') c = ' ';
  }
  return absl::StrCat("error ", flat, "\n");
}

absl::StatusOr<std::string> ParseControlReply(absl::string_view reply) {
  if (absl::ConsumePrefix(&reply, "ok\n")) {
    absl::ConsumeSuffix(&reply, "\n");
    return std::string(reply);
  }
  if (reply == "ok") return std::string();
  if (absl::ConsumePrefix(&reply, "error ")) {
    absl::ConsumeSuffix(&reply, "\n");
    return absl::InvalidArgumentError(reply);
  }
  return absl::InternalError(
      absl::StrCat("malformed reply from the simulator: \"",
                   absl::CEscape(reply.substr(0, 80)), "\""));
}

}  // namespace gpulet::sim
