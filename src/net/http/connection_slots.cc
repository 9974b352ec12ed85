#include "src/net/http/connection_slots.h"

#include <arpa/inet.h>
#include <netinet/in.h>

namespace gpulet::http {

std::string PeerAddress(const sockaddr_storage& addr) {
  char text[INET6_ADDRSTRLEN] = {};
  if (addr.ss_family == AF_INET) {
    const auto* in = reinterpret_cast<const sockaddr_in*>(&addr);
    ::inet_ntop(AF_INET, &in->sin_addr, text, sizeof(text));
  } else if (addr.ss_family == AF_INET6) {
    const auto* in6 = reinterpret_cast<const sockaddr_in6*>(&addr);
    if (IN6_IS_ADDR_V4MAPPED(&in6->sin6_addr)) {
      ::inet_ntop(AF_INET, &in6->sin6_addr.s6_addr[12], text, sizeof(text));
    } else {
      ::inet_ntop(AF_INET6, &in6->sin6_addr, text, sizeof(text));
    }
  }
  return text;
}

ConnectionSlots::ConnectionSlots(Limits limits) : limits_(limits) {}

bool ConnectionSlots::Evictable(const Entry& e) const {
  if (e.evicted) return false;
  if (e.state != State::kBusy) return true;
  return limits_.evict_untrusted && !e.trusted;
}

std::optional<ConnectionSlots::Id> ConnectionSlots::Victim(
    const std::string* peer) const {
  std::optional<Id> best;
  uint64_t best_since = 0;
  for (const auto& [id, e] : entries_) {
    if (!Evictable(e) || (peer != nullptr && e.peer != *peer)) continue;
    if (!best.has_value() || e.since < best_since) {
      best = id;
      best_since = e.since;
    }
  }
  return best;
}

int ConnectionSlots::Count(const std::string* peer) const {
  int n = 0;
  for (const auto& [id, e] : entries_) {
    if (!e.evicted && (peer == nullptr || e.peer == *peer)) ++n;
  }
  return n;
}

bool ConnectionSlots::CanAdmit() const {
  absl::ReaderMutexLock lock(&mu_);
  // Evicted connections still hold a thread until they notice; they are
  // bounded too, so that a flood cannot outrun their ending.
  if (static_cast<int>(entries_.size()) >= 2 * limits_.max_total) return false;
  return Count(nullptr) < limits_.max_total || Victim(nullptr).has_value();
}

ConnectionSlots::Admission ConnectionSlots::Admit(const std::string& peer) {
  absl::MutexLock lock(&mu_);
  Admission out;
  if (static_cast<int>(entries_.size()) >= 2 * limits_.max_total) return out;
  if (Count(&peer) >= limits_.max_per_peer) {
    out.evict = Victim(&peer);
    if (!out.evict.has_value()) {
      out.peer_full = true;
      return out;
    }
  } else if (Count(nullptr) >= limits_.max_total) {
    out.evict = Victim(nullptr);
    if (!out.evict.has_value()) return out;
  }
  if (out.evict.has_value()) entries_[*out.evict].evicted = true;
  out.admitted = true;
  out.id = next_id_++;
  entries_[out.id] = Entry{.peer = peer, .since = ++sequence_};
  return out;
}

void ConnectionSlots::SetState(Id id, State state) {
  absl::MutexLock lock(&mu_);
  auto it = entries_.find(id);
  if (it == entries_.end() || it->second.state == state) return;
  it->second.state = state;
  it->second.since = ++sequence_;
}

void ConnectionSlots::SetTrusted(Id id) {
  absl::MutexLock lock(&mu_);
  auto it = entries_.find(id);
  if (it != entries_.end()) it->second.trusted = true;
}

void ConnectionSlots::Release(Id id) {
  absl::MutexLock lock(&mu_);
  entries_.erase(id);
}

int ConnectionSlots::open() const {
  absl::ReaderMutexLock lock(&mu_);
  return Count(nullptr);
}

}  // namespace gpulet::http
