// Impersonation: acting as another user, as kubectl's --as does. A kubeconfig
// user's `as`, `as-uid`, `as-groups` and `as-user-extra` become, on every
// request, the headers the API server's impersonation filter reads:
//
//   Impersonate-User: <as>
//   Impersonate-Uid: <as-uid>
//   Impersonate-Group: <group>             (one header per group)
//   Impersonate-Extra-<key>: <value>       (one header per value)
//
// An extra key is percent-encoded (every byte that is not an RFC 7230 token
// character, and '%' itself, as %XX) because header names cannot carry
// arbitrary bytes; the server decodes it. The server checks that the
// authenticated identity may impersonate (RBAC verb `impersonate` on users,
// uids, groups, userextras/<key>) and then acts as the impersonated one.
//
// Values are checked before they go on the wire: no control characters and
// no leading or trailing blanks (the server would trim them and act as
// someone else), and a uid, groups or extras only together with a user (the
// server refuses them otherwise).
//
// Thread safety: plain values and pure functions.
#pragma once

#include <map>
#include <string>
#include <vector>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "absl/strings/string_view.h"
#include "nlohmann/json.hpp"

namespace gpulet::config {

struct Impersonation {
  std::string user;                 // empty: no impersonation
  std::string uid;                  // needs `user`
  std::vector<std::string> groups;  // needs `user`
  std::map<std::string, std::vector<std::string>> extra;  // needs `user`

  bool empty() const {
    return user.empty() && uid.empty() && groups.empty() && extra.empty();
  }
  bool operator==(const Impersonation&) const = default;
};

// Reads `as`, `as-uid`, `as-groups` and `as-user-extra` of a kubeconfig
// user map. Errors are InvalidArgument "<source>: <path>.<field>: why".
absl::StatusOr<Impersonation> ReadImpersonation(
    const nlohmann::ordered_json& user, const std::string& source,
    const std::string& path);

// OK when the values may go into headers and a user is named whenever
// anything else is; else InvalidArgument "<where>.<kubeconfig field>: why"
// (where: "kubeconfig /x: users[0].user").
absl::Status ValidateImpersonation(const Impersonation& impersonation,
                                   absl::string_view where);

// The header lines ("Name: value\r\n" each) for `impersonation`; "" when it
// is empty. REQUIRES: ValidateImpersonation() is OK.
std::string ImpersonationHeaders(const Impersonation& impersonation);

// An extra key as it goes into an Impersonate-Extra- header name.
std::string EscapeExtraKey(absl::string_view key);

}  // namespace gpulet::config
