// Time from a silently dead API-server connection to a resumed watch
// (docs/benchmarks.md, docs/kube-client.md): the real ListWatcher, Client
// and TLS transport against a TLS server on 127.0.0.1 that answers a watch
// with one event and then sends nothing more while keeping the connection
// open (an API server stopped, or a flow a load balancer dropped). Each
// round measures, on the server, from writing that event to the arrival of
// the next watch request, which must carry the event's resourceVersion; the
// figure is the idle timeout plus the reconnect (the first backoff,
// 250-375 ms, then TCP and TLS). Flags: --idle-seconds=N (default 2; the
// shipped default is 75), --rounds=N (default 5); --benchmark_* flags
// (scripts/run-benchmarks) are ignored.
#include <cstdio>
#include <cstdlib>
#include <mutex>
#include <semaphore>
#include <stop_token>
#include <string>
#include <thread>
#include <vector>

#include "absl/strings/match.h"
#include "absl/strings/numbers.h"
#include "absl/strings/str_cat.h"
#include "bench/bench_stats.h"
#include "src/net/kube/list_watcher.h"
#include "src/net/kube/tls_transport.h"
#include "src/net/testing/raw_tls_server.h"
#include "src/net/testing/test_tls.h"

namespace gpulet::bench {
namespace {

using kube::tls_test::RawConnection;

std::string Chunk(const std::string& data) {
  return absl::StrCat(absl::Hex(data.size()), "\r\n", data, "\r\n");
}

// Shared by the server's thread and the main one.
struct Rounds {
  std::mutex mu;
  std::vector<BenchClock::time_point> silent_from;  // per watch
  std::vector<BenchClock::time_point> resumed_at;   // per watch
  std::vector<std::string> first_lines;             // per watch request
  std::counting_semaphore<1 << 20> watches{0};
};

void Serve(Rounds& rounds, RawConnection& conn, int index) {
  std::optional<std::string> request = conn.ReadRequest();
  if (!request) return;
  const BenchClock::time_point now = BenchClock::now();
  if (index == 0) {
    const std::string list =
        R"({"metadata":{"resourceVersion":"100"},"items":[]})";
    conn.Write(absl::StrCat("HTTP/1.1 200 OK\r\nConnection: close\r\n",
                            "Content-Length: ", list.size(), "\r\n\r\n", list));
    return;
  }
  {
    std::lock_guard lock(rounds.mu);
    rounds.resumed_at.push_back(now);
    rounds.first_lines.push_back(request->substr(0, request->find("\r\n")));
  }
  rounds.watches.release();
  conn.Write(absl::StrCat(
      "HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\n\r\n",
      Chunk(absl::StrCat(R"({"type":"MODIFIED","object":{"metadata":{)",
                         R"("name":"p","resourceVersion":")", 100 + index,
                         "\"}}}\n"))));
  {
    std::lock_guard lock(rounds.mu);
    rounds.silent_from.push_back(BenchClock::now());
  }
  conn.WaitForClose();  // silent until the client gives up
}

int Flag(int argc, char** argv, const char* name, int fallback) {
  const std::string prefix = absl::StrCat("--", name, "=");
  for (int i = 1; i < argc; ++i) {
    int value = 0;
    if (absl::StartsWith(argv[i], prefix) &&
        absl::SimpleAtoi(argv[i] + prefix.size(), &value) && value > 0) {
      return value;
    }
  }
  return fallback;
}

int Run(int argc, char** argv) {
  const int idle_seconds = Flag(argc, argv, "idle-seconds", 2);
  const int rounds_wanted = Flag(argc, argv, "rounds", 5);
  const kube::tls_test::KeyPair ca = kube::tls_test::MakeCa("bench-ca");
  const kube::tls_test::KeyPair leaf =
      kube::tls_test::MakeLeaf(ca, "apiserver", true);
  Rounds rounds;
  kube::tls_test::RawTlsServer server(
      leaf, [&rounds](RawConnection& c, int i) { Serve(rounds, c, i); });
  config::ApiServerConfig api;
  api.server = server.url();
  api.ca_pem = ca.cert_pem;
  api.source = "watch_liveness_bench";
  auto transport = kube::TlsTransport::Create(api);
  if (!transport.ok()) {
    std::fprintf(stderr, "%s\n", transport.status().ToString().c_str());
    return 1;
  }
  const common::Clock& clock = common::RealClock::Get();
  kube::Client client(
      **transport, clock,
      {.qps = 0, .watch_idle_timeout = absl::Seconds(idle_seconds)});
  kube::ListWatcher watcher(client, clock, "/api/v1/pods", {}, {});
  std::jthread run([&](std::stop_token stop) { (void)watcher.Run(stop); });
  for (int i = 0; i <= rounds_wanted; ++i) rounds.watches.acquire();
  run.request_stop();
  run.join();

  std::lock_guard lock(rounds.mu);
  std::vector<double> ms;
  bool resumed_right = true;
  for (int r = 0; r < rounds_wanted; ++r) {
    ms.push_back(std::chrono::duration<double, std::milli>(
                     rounds.resumed_at[r + 1] - rounds.silent_from[r])
                     .count());
    resumed_right &= absl::StrContains(
        rounds.first_lines[r + 1], absl::StrCat("resourceVersion=", 101 + r));
  }
  const Summary s = Summarize(ms);
  const double idle_ms = idle_seconds * 1000.0;
  std::printf(
      "watch_liveness_bench: silent connection -> resumed watch, idle "
      "timeout %d s, %zu rounds\n"
      "  total ms:     p50 %.1f  min %.1f  max %.1f\n"
      "  beyond idle:  p50 %.1f  min %.1f  max %.1f  (backoff + reconnect)\n"
      "  resumed from the last resourceVersion every time: %s\n",
      idle_seconds, s.n, s.p50, s.min, s.max, s.p50 - idle_ms, s.min - idle_ms,
      s.max - idle_ms, resumed_right ? "yes" : "NO");
  return resumed_right ? 0 : 1;
}

}  // namespace
}  // namespace gpulet::bench

int main(int argc, char** argv) { return gpulet::bench::Run(argc, argv); }
