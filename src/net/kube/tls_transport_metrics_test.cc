// The TLS transport's request metrics (request_metrics.h) against a real
// HTTPS server on 127.0.0.1 (cpp-httplib) answering 200, 404 and 500, and a
// loopback port where nobody listens: the counts by code, method and host,
// a watch counted as its stream starts, and the latency histogram's
// buckets and counts.
#include <condition_variable>
#include <memory>
#include <mutex>
#include <string>
#include <vector>

#include "absl/strings/match.h"
#include "absl/strings/numbers.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_split.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "httplib.h"
#include "src/base/common/listen.h"
#include "src/base/metrics/registry.h"
#include "src/net/kube/api_client.h"
#include "src/net/kube/request_metrics.h"
#include "src/net/kube/tls_transport.h"
#include "src/net/testing/https_test_server.h"
#include "src/net/testing/test_tls.h"

namespace gpulet::kube {
namespace {

using ::testing::ElementsAreArray;
using ::testing::HasSubstr;
using tls_test::KeyPair;
using TlsServer = tls_test::HttpsTestServer;

constexpr char kRequests[] = "rest_client_requests_total";
constexpr char kLatency[] = "rest_client_request_duration_seconds";

class TlsTransportMetricsTest : public ::testing::Test {
 protected:
  static void SetUpTestSuite() {
    ca_ = new KeyPair(tls_test::MakeCa("test-ca"));
    server_cert_ = new KeyPair(tls_test::MakeLeaf(*ca_, "apiserver", true));
  }
  static void TearDownTestSuite() {
    delete ca_;
    delete server_cert_;
  }

  config::ApiServerConfig Config(const std::string& url) const {
    config::ApiServerConfig config;
    config.server = url;
    config.ca_pem = ca_->cert_pem;
    config.source = "test";
    return config;
  }

  std::unique_ptr<TlsTransport> Transport(const std::string& url) {
    absl::StatusOr<RequestMetrics> metrics =
        RequestMetrics::Register(registry_);
    EXPECT_TRUE(metrics.ok()) << metrics.status();
    absl::StatusOr<std::unique_ptr<TlsTransport>> t = TlsTransport::Create(
        Config(url), {.metrics = metrics.ok() ? *metrics : RequestMetrics()});
    EXPECT_TRUE(t.ok()) << t.status();
    return t.ok() ? *std::move(t) : nullptr;
  }

  double Count(const std::string& code, const std::string& method,
               const std::string& host) const {
    return registry_.Find(kRequests)->Value({code, method, host});
  }

  // The cumulative counts of one latency series' buckets, in order, with
  // their le labels.
  std::vector<std::pair<std::string, int>> Buckets(
      const std::string& verb, const std::string& host) const {
    std::vector<std::pair<std::string, int>> out;
    const std::string prefix = absl::StrCat(kLatency, "_bucket{verb=\"", verb,
                                            "\",host=\"", host, "\",le=\"");
    for (absl::string_view line :
         absl::StrSplit(registry_.Render(), '\n', absl::SkipEmpty())) {
      if (!absl::ConsumePrefix(&line, prefix)) continue;
      const size_t quote = line.find('"');
      int count = -1;
      EXPECT_TRUE(absl::SimpleAtoi(line.substr(quote + 3), &count)) << line;
      out.emplace_back(std::string(line.substr(0, quote)), count);
    }
    return out;
  }

  static KeyPair* ca_;
  static KeyPair* server_cert_;
  metrics::Registry registry_;
};
KeyPair* TlsTransportMetricsTest::ca_;
KeyPair* TlsTransportMetricsTest::server_cert_;

// A loopback port nobody listens on: bound, then closed.
int ClosedPort() {
  absl::StatusOr<common::UniqueFd> fd = common::ListenTcp({"127.0.0.1", 0}, 1);
  EXPECT_TRUE(fd.ok()) << fd.status();
  return fd.ok() ? common::BoundPort(fd->get()) : 1;
}

TEST_F(TlsTransportMetricsTest, CountsEveryCodeAndTimesEveryRequest) {
  TlsServer server(*server_cert_);
  server.http().Get("/ok", [](const httplib::Request&, httplib::Response& r) {
    r.set_content("{}", "application/json");
  });
  server.http().Get("/missing",
                    [](const httplib::Request&, httplib::Response& r) {
                      r.status = 404;
                      r.set_content("{}", "application/json");
                    });
  server.http().Post("/fail",
                     [](const httplib::Request&, httplib::Response& r) {
                       r.status = 500;
                       r.set_content("{}", "application/json");
                     });
  auto transport = Transport(server.url());
  ASSERT_NE(transport, nullptr);
  const std::string host = absl::StrCat("127.0.0.1:", server.port());
  EXPECT_EQ(transport->Do({.path = "/ok"})->status, 200);
  EXPECT_EQ(transport->Do({.path = "/ok"})->status, 200);
  EXPECT_EQ(transport->Do({.path = "/missing"})->status, 404);
  EXPECT_EQ(
      transport->Do({.method = "POST", .path = "/fail", .body = "{}"})->status,
      500);
  const std::string refused_host = absl::StrCat("127.0.0.1:", ClosedPort());
  auto nobody = Transport(absl::StrCat("https://", refused_host));
  ASSERT_NE(nobody, nullptr);
  EXPECT_EQ(nobody->Do({.path = "/ok"}).status().code(),
            absl::StatusCode::kUnavailable);

  EXPECT_EQ(Count("200", "GET", host), 2);
  EXPECT_EQ(Count("404", "GET", host), 1);
  EXPECT_EQ(Count("500", "POST", host), 1);
  EXPECT_EQ(Count("<error>", "GET", refused_host), 1);
  EXPECT_EQ(registry_.Find(kRequests)->size(), 4u);
  const std::string text = registry_.Render();
  EXPECT_THAT(text, HasSubstr(absl::StrCat(
                        "rest_client_requests_total{code=\"<error>\",method="
                        "\"GET\",host=\"",
                        refused_host, "\"} 1\n")));
  EXPECT_THAT(text, HasSubstr("# TYPE rest_client_request_duration_seconds "
                              "histogram\n"));

  // client-go's buckets; cumulative, +Inf equal to the count.
  const std::vector<std::string> bounds = {
      "0.005", "0.025", "0.1", "0.25", "0.5", "1",   "2",
      "4",     "8",     "15",  "30",   "60",  "+Inf"};
  for (const auto& [verb, series_host, count] :
       std::vector<std::tuple<std::string, std::string, int>>{
           {"GET", host, 3}, {"POST", host, 1}, {"GET", refused_host, 1}}) {
    std::vector<std::pair<std::string, int>> buckets =
        Buckets(verb, series_host);
    std::vector<std::string> les;
    for (const auto& [le, n] : buckets) les.push_back(le);
    EXPECT_THAT(les, ElementsAreArray(bounds)) << verb << " " << series_host;
    for (size_t i = 1; i < buckets.size(); ++i) {
      EXPECT_LE(buckets[i - 1].second, buckets[i].second) << verb;
    }
    ASSERT_FALSE(buckets.empty());
    EXPECT_EQ(buckets.back().second, count) << verb << " " << series_host;
    EXPECT_EQ(registry_.Find(kLatency)->Value({verb, series_host}), count);
    EXPECT_THAT(text, HasSubstr(absl::StrCat(kLatency, "_count{verb=\"", verb,
                                             "\",host=\"", series_host, "\"} ",
                                             count, "\n")));
  }
}

// A watch counts when its answer's head arrives, while the stream is still
// open, and is not timed.
TEST_F(TlsTransportMetricsTest, AWatchCountsAsItsStreamStarts) {
  TlsServer server(*server_cert_);
  std::mutex mu;
  std::condition_variable cv;
  bool release = false;
  const std::string ev =
      R"({"type":"ADDED","object":{"metadata":{"resourceVersion":"6"}}})"
      "\n";
  server.http().Get(
      "/api/v1/pods", [&](const httplib::Request&, httplib::Response& res) {
        res.set_chunked_content_provider(
            "application/json", [&](size_t, httplib::DataSink& sink) {
              sink.write(ev.data(), ev.size());
              std::unique_lock lock(mu);
              cv.wait(lock, [&] { return release; });
              sink.done();
              return true;
            });
      });
  auto transport = Transport(server.url());
  ASSERT_NE(transport, nullptr);
  const std::string host = absl::StrCat("127.0.0.1:", server.port());
  double counted_while_open = -1;
  absl::StatusOr<Response> response =
      transport->Stream({.path = "/api/v1/pods?watch=true"},
                        [&](absl::string_view) {
                          counted_while_open = Count("200", "GET", host);
                          return false;
                        },
                        {});
  {
    std::lock_guard lock(mu);
    release = true;
  }
  cv.notify_all();
  ASSERT_TRUE(response.ok()) << response.status();
  EXPECT_EQ(counted_while_open, 1);
  EXPECT_EQ(Count("200", "GET", host), 1);
  EXPECT_FALSE(registry_.Find(kLatency)->Has({"GET", host}));
}

// MakeApiClient's path: a registry in the options gets the client's
// requests, retries each counted.
TEST_F(TlsTransportMetricsTest, ApiClientRecordsIntoTheGivenRegistry) {
  TlsServer server(*server_cert_);
  int calls = 0;
  server.http().Get(
      "/api/v1/nodes/n1", [&](const httplib::Request&, httplib::Response& r) {
        // One 503, then the object: the client retries a GET.
        r.status = ++calls == 1 ? 503 : 200;
        r.set_content(R"({"metadata":{"name":"n1"}})", "application/json");
      });
  ClientOptions options;
  options.qps = 0;
  options.backoff.initial = absl::Milliseconds(1);
  options.backoff.max = absl::Milliseconds(1);
  absl::StatusOr<std::unique_ptr<ApiClient>> api =
      ApiClient::Create(Config(server.url()), options, {}, &registry_);
  ASSERT_TRUE(api.ok()) << api.status();
  ASSERT_TRUE((*api)->client().Get("/api/v1/nodes/n1").ok());
  const std::string host = absl::StrCat("127.0.0.1:", server.port());
  EXPECT_EQ(Count("503", "GET", host), 1);
  EXPECT_EQ(Count("200", "GET", host), 1);
  EXPECT_EQ(registry_.Find(kLatency)->Value({"GET", host}), 2);
}

}  // namespace
}  // namespace gpulet::kube
