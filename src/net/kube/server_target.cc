#include "src/net/kube/server_target.h"

#include "absl/strings/ascii.h"
#include "absl/strings/match.h"
#include "absl/strings/numbers.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/strip.h"

namespace gpulet::kube {

absl::StatusOr<ServerTarget> ParseServerTarget(
    const config::ApiServerConfig& config) {
  const auto invalid = [&config](absl::string_view why) {
    return absl::InvalidArgumentError(
        absl::StrCat(config.source, ": server \"", config.server, "\" ", why));
  };
  absl::string_view url = config.server;
  if (!absl::ConsumePrefix(&url, "https://")) {
    return invalid("is not an https:// URL");
  }
  const size_t slash = url.find('/');
  absl::string_view authority = url.substr(0, slash);
  absl::string_view base =
      slash == absl::string_view::npos ? "" : url.substr(slash);
  while (absl::ConsumeSuffix(&base, "/")) {
  }
  if (authority.empty() || !VisibleAscii(url) ||
      url.find_first_of("@?#") != absl::string_view::npos) {
    return invalid("is not a URL of the form https://host[:port][/path]");
  }
  absl::string_view host = authority;
  absl::string_view port;
  if (absl::StartsWith(authority, "[")) {
    const size_t close = authority.find(']');
    if (close == absl::string_view::npos) return invalid("has no closing ]");
    host = authority.substr(1, close - 1);
    port = authority.substr(close + 1);
  } else if (const size_t colon = authority.rfind(':');
             colon != absl::string_view::npos) {
    host = authority.substr(0, colon);
    port = authority.substr(colon);
  }
  int port_number = 443;
  if (!port.empty() &&
      (!absl::ConsumePrefix(&port, ":") || port.empty() ||
       !std::all_of(port.begin(), port.end(), absl::ascii_isdigit) ||
       !absl::SimpleAtoi(port, &port_number) || port_number < 1 ||
       port_number > 65535)) {
    return invalid("has a bad port");
  }
  if (host.empty()) return invalid("has no host");
  return ServerTarget{std::string(host), absl::StrCat(port_number),
                      std::string(authority), std::string(base)};
}

}  // namespace gpulet::kube
