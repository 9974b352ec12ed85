// ServerTarget: where the TLS transport (tls_transport.h) connects and what
// it sends as Host, parsed once from the API server URL of a kubeconfig or
// the in-cluster configuration. Only https://host[:port][/path] is taken:
// no user info, query or fragment, no control or space characters; the
// port defaults to 443, an IPv6 host is written in brackets, and trailing
// slashes of the path are dropped.
//
// Thread safety: pure functions on values.
#pragma once

#include <algorithm>
#include <string>

#include "absl/status/statusor.h"
#include "absl/strings/string_view.h"
#include "src/net/kube/kubeconfig.h"

namespace gpulet::kube {

struct ServerTarget {
  std::string host;  // without brackets
  std::string port;
  std::string authority;  // the Host header
  std::string base_path;  // the URL's path, "" or "/prefix"
};

// InvalidArgument naming config.source and the URL when config.server is
// not of the form above.
absl::StatusOr<ServerTarget> ParseServerTarget(
    const config::ApiServerConfig& config);

// True when every character is visible ASCII (no space, control or DEL):
// what may go into a request line or a header value unquoted.
inline bool VisibleAscii(absl::string_view text) {
  return std::all_of(text.begin(), text.end(), [](char c) {
    return static_cast<unsigned char>(c) > 0x20 && c != 0x7f;
  });
}

}  // namespace gpulet::kube
