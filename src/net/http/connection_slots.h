// ConnectionSlots: the server's book of open connections, deciding which
// new connection is served and which open one gives way to it. Pure
// bookkeeping, no sockets: Server acts on its answers.
//
// A connection is evictable while it holds a slot without doing anything
// for a client that matters: during its TLS handshake, while idle between
// requests (waiting for the first byte of the next one), and, when
// clients are authenticated, for its whole life when its client did not
// prove an allowed identity. A new connection is admitted when
// - its peer (IP address) holds fewer than `max_per_peer` connections, else
//   the oldest evictable connection of that peer gives way, else it is
//   refused as `peer_full` (Server parks it until that peer has room); and
// - fewer than `max_total` are open, else the oldest evictable connection
//   of any peer gives way, else it waits in the listen backlog
//   (CanAdmit() is false and Server stops accepting).
// So idle connections, however many and from however many peers, never
// keep a request from being served, and one peer never holds more than
// `max_per_peer` slots. "Oldest" is the one evictable for the longest.
//
// Thread safety: every method may be called from any thread.
#pragma once

#include <sys/socket.h>

#include <cstdint>
#include <map>
#include <optional>
#include <string>

#include "absl/base/thread_annotations.h"
#include "absl/synchronization/mutex.h"

namespace gpulet::http {

// The client's IP address of an accepted socket as text (an IPv4-mapped
// IPv6 address as IPv4): the key of the per-peer limit.
std::string PeerAddress(const sockaddr_storage& addr);

class ConnectionSlots {
 public:
  struct Limits {
    int max_total = 64;
    int max_per_peer = 32;
    // Clients authenticate: a connection whose client has not proved an
    // allowed identity is evictable even while busy.
    bool evict_untrusted = false;
  };
  enum class State { kOpening, kIdle, kBusy };
  using Id = uint64_t;

  struct Admission {
    bool admitted = false;
    bool peer_full = false;  // refused because its peer is at its limit
    Id id = 0;
    std::optional<Id> evict;  // the connection to close for this one
  };

  explicit ConnectionSlots(Limits limits);

  // Whether a new connection could be admitted now (a slot is free or one
  // can give way), so that accepting one is worthwhile.
  bool CanAdmit() const;
  // Books a new connection from `peer` in state kOpening, or refuses it.
  Admission Admit(const std::string& peer);
  void SetState(Id id, State state);
  // Its client proved an allowed identity.
  void SetTrusted(Id id);
  // The connection ended.
  void Release(Id id);

  int open() const;  // connections booked and not evicted

 private:
  struct Entry {
    std::string peer;
    State state = State::kOpening;
    bool trusted = false;
    bool evicted = false;
    uint64_t since = 0;  // sequence number of its last change of state
  };
  bool Evictable(const Entry& e) const;
  // The oldest evictable connection (of `peer` when given).
  std::optional<Id> Victim(const std::string* peer) const
      ABSL_SHARED_LOCKS_REQUIRED(mu_);
  int Count(const std::string* peer) const ABSL_SHARED_LOCKS_REQUIRED(mu_);

  const Limits limits_;
  mutable absl::Mutex mu_;
  std::map<Id, Entry> entries_ ABSL_GUARDED_BY(mu_);
  Id next_id_ ABSL_GUARDED_BY(mu_) = 1;
  uint64_t sequence_ ABSL_GUARDED_BY(mu_) = 0;
};

}  // namespace gpulet::http
