// A client of the kubelet's pod-resources API (v1) on its unix socket,
// /var/lib/kubelet/pod-resources/kubelet.sock: which devices each running
// container holds (List) and which devices the node has
// (GetAllocatableResources). The answers are gpulet's own values.
//
// Thread safety: a Client may be used from several threads; each call
// opens its own channel, so a kubelet restart never leaves a dead
// connection behind.
#pragma once

#include <string>
#include <vector>

#include "absl/status/statusor.h"
#include "absl/time/time.h"

namespace gpulet::podresources {

inline constexpr char kDefaultSocket[] =
    "/var/lib/kubelet/pod-resources/kubelet.sock";

struct Devices {
  std::string resource;  // "nvidia.com/gpu-memory"
  std::vector<std::string> ids;
  bool operator==(const Devices&) const = default;
};

struct Container {
  std::string name;
  std::vector<Devices> devices;
  bool operator==(const Container&) const = default;
};

struct Pod {
  std::string ns, name;
  std::vector<Container> containers;
  bool operator==(const Pod&) const = default;
};

class Client {
 public:
  explicit Client(std::string socket_path = kDefaultSocket,
                  absl::Duration timeout = absl::Seconds(10));

  // Every pod the kubelet runs, with the devices of each container.
  // Errors name the socket and the call (Unavailable when the kubelet does
  // not answer).
  absl::StatusOr<std::vector<Pod>> List() const;
  // The devices the node can give out, per resource.
  absl::StatusOr<std::vector<Devices>> Allocatable() const;

  const std::string& socket_path() const { return socket_path_; }

 private:
  std::string socket_path_;
  absl::Duration timeout_;
};

}  // namespace gpulet::podresources
