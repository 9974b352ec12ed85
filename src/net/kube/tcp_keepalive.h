// TcpKeepAlive: the TCP settings that make a dead API-server connection
// fail in about a minute instead of the kernel's two hours (and, for data
// in flight, instead of the ~15 minutes of retransmissions).
//
//   SO_KEEPALIVE + TCP_KEEPIDLE/TCP_KEEPINTVL/TCP_KEEPCNT: after `idle`
//   without traffic the kernel probes every `interval`; `count` probes
//   unanswered and reads fail with ETIMEDOUT.
//   TCP_USER_TIMEOUT: data (a request, a probe) left unacknowledged for
//   `user_timeout` fails the connection too. With keepalive on, the kernel
//   also uses it to decide when probing has failed, so it is set to
//   idle + interval × count (60 s by default).
//
// These catch a peer that is gone (a load balancer dropping the flow, a
// control-plane node replaced): nothing acknowledges. A server that is up
// but silent (stopped, wedged) still acknowledges probes; the watch's idle
// timeout (client.h) catches that one.
//
// Thread safety: plain values and a free function.
#pragma once

#include "absl/status/status.h"
#include "absl/time/time.h"

namespace gpulet::kube {

struct TcpKeepAlive {
  absl::Duration idle = absl::Seconds(30);
  absl::Duration interval = absl::Seconds(10);
  int count = 3;
  absl::Duration user_timeout = absl::Seconds(60);
};

// Sets the options on the connected TCP socket `fd`. InvalidArgument,
// naming the option, when the kernel refuses one (a value out of range).
absl::Status ApplyKeepAlive(int fd, const TcpKeepAlive& keepalive);

}  // namespace gpulet::kube
