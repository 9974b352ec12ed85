// /metrics over TLS in the processes that serve it on an address of their
// own, with a CA and certificates made by the test: `gpulet plugin` and
// `gpulet dra` with --metrics-tls-cert-file, --metrics-tls-key-file and
// --metrics-client-ca-file answer a client that trusts the CA and shows a
// certificate it signed, refuse /metrics to one without a certificate
// (but answer /healthz), and give plain HTTP nothing; `gpulet dra` counts
// its requests to a fake API server in rest_client_requests_total. A
// certificate without its key is a usage error naming the missing flag.
#include <atomic>
#include <filesystem>
#include <memory>
#include <regex>
#include <string>
#include <vector>

#include "absl/strings/numbers.h"
#include "absl/strings/str_cat.h"
#include "absl/time/clock.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "httplib.h"
#include "src/base/common/file_util.h"
#include "src/net/testing/https_test_server.h"
#include "src/net/testing/test_tls.h"
#include "test/integration/daemon_fake_kubelet.h"
#include "test/integration/daemon_process.h"
#include "test/integration/gpulet_runner.h"

namespace gpulet::testing {
namespace {

namespace tls = kube::tls_test;
using ::testing::HasSubstr;

const absl::Duration kTimeout = absl::Seconds(10);

class MetricsTlsTest : public ::testing::Test {
 protected:
  void SetUp() override {
    ca_ = tls::MakeCa("metrics-ca");
    Write("ca.pem", ca_.cert_pem);
    const tls::KeyPair server = tls::MakeLeaf(ca_, "gpulet", /*server=*/true);
    Write("tls.crt", server.cert_pem);
    Write("tls.key", server.key_pem);
    const tls::KeyPair client =
        tls::MakeLeaf(ca_, "prometheus", /*server=*/false);
    Write("client.crt", client.cert_pem);
    Write("client.key", client.key_pem);
  }

  void Write(const std::string& name, const std::string& text) {
    ASSERT_TRUE(common::WriteFileAtomic(Path(name), text,
                                        {.mode = 0600, .durable = false})
                    .ok());
  }
  std::string Path(const std::string& name) const {
    return tmp_.path() + "/" + name;
  }

  std::vector<std::string> TlsFlags() const {
    return {"--metrics-address=127.0.0.1:0",
            "--metrics-tls-cert-file=" + Path("tls.crt"),
            "--metrics-tls-key-file=" + Path("tls.key"),
            "--metrics-client-ca-file=" + Path("ca.pem")};
  }

  // The port of "serving metrics on https://127.0.0.1:<port>" in the log.
  static int ServingPort(const DaemonProcess& process) {
    if (!process.WaitForLog("serving metrics on https://127.0.0.1:",
                            kTimeout)) {
      return 0;
    }
    const std::string log = process.Log();
    std::smatch m;
    int port = 0;
    if (!std::regex_search(
            log, m,
            std::regex("serving metrics on https://127.0.0.1:(\\d+)")) ||
        !absl::SimpleAtoi(m[1].str(), &port)) {
      return 0;
    }
    return port;
  }

  // GET over TLS trusting only the test CA, with the client certificate
  // or without one.
  httplib::Result Get(int port, const std::string& path,
                      bool with_client_cert) const {
    std::unique_ptr<httplib::SSLClient> client =
        with_client_cert
            ? std::make_unique<httplib::SSLClient>(
                  "127.0.0.1", port, Path("client.crt"), Path("client.key"))
            : std::make_unique<httplib::SSLClient>("127.0.0.1", port);
    client->set_ca_cert_path(Path("ca.pem").c_str());
    client->enable_server_certificate_verification(true);
    client->set_connection_timeout(5);
    client->set_read_timeout(5);
    return client->Get(path);
  }

  // What every TLS metrics server must do, whatever its process.
  void ExpectServedOnlyOverTls(int port, const std::string& metric) {
    httplib::Result scraped = Get(port, "/metrics", true);
    ASSERT_TRUE(scraped) << httplib::to_string(scraped.error());
    EXPECT_EQ(scraped->status, 200);
    EXPECT_THAT(scraped->body, HasSubstr(metric));
    // No client certificate: /metrics refused, /healthz open for probes.
    httplib::Result anonymous = Get(port, "/metrics", false);
    ASSERT_TRUE(anonymous) << httplib::to_string(anonymous.error());
    EXPECT_EQ(anonymous->status, 403);
    httplib::Result probe = Get(port, "/healthz", false);
    ASSERT_TRUE(probe) << httplib::to_string(probe.error());
    EXPECT_EQ(probe->status, 200);
    // Plain HTTP gets no answer.
    httplib::Client plain("127.0.0.1", port);
    plain.set_connection_timeout(5);
    plain.set_read_timeout(5);
    httplib::Result in_clear = plain.Get("/metrics");
    EXPECT_FALSE(in_clear) << in_clear->status << " " << in_clear->body;
  }

  TempDir tmp_;
  tls::KeyPair ca_;
};

TEST_F(MetricsTlsTest, PluginServesMetricsOverMutualTls) {
  const std::string plugins = Path("plugins");
  std::filesystem::create_directory(plugins);
  FakeKubelet kubelet(plugins);
  ASSERT_TRUE(kubelet.Start());
  std::vector<std::string> args = TlsFlags();
  args.push_back("--kubelet-socket=" + kubelet.socket_path());
  DaemonProcess plugin("dgx-h100", args, Path("plugin.log"),
                       {"GPULET_SIM_SOCKET=" + Path("sim.sock")});
  const int port = ServingPort(plugin);
  ASSERT_GT(port, 0) << plugin.Log();
  ExpectServedOnlyOverTls(port, "gpulet_kubelet_restarts_total");
  EXPECT_THAT(plugin.Log(), ::testing::Not(HasSubstr("PRIVATE KEY")));
}

TEST_F(MetricsTlsTest, DraServesItsApiClientsRequestsOverTls) {
  // The fake API server answers every request 404, which the client
  // counts like any answer.
  tls::HttpsTestServer api(tls::MakeLeaf(ca_, "apiserver", /*server=*/true));
  std::atomic<int> requests = 0;
  const auto not_found = [&requests](const httplib::Request&,
                                     httplib::Response& res) {
    ++requests;
    res.status = 404;
    res.set_content(R"({"kind":"Status","apiVersion":"v1","status":"Failure",)"
                    R"("reason":"NotFound","code":404})",
                    "application/json");
  };
  api.http().Get(".*", not_found);
  api.http().Post(".*", not_found);
  api.http().Put(".*", not_found);
  api.http().Patch(".*", not_found);
  api.http().Delete(".*", not_found);
  Write(
      "kubeconfig",
      absl::StrCat("apiVersion: v1\nkind: Config\ncurrent-context: t\n"
                   "clusters:\n- name: c\n  cluster:\n    server: ",
                   api.url(), "\n    certificate-authority: ", Path("ca.pem"),
                   "\nusers:\n- name: u\n  user:\n    token: t0ken\n"
                   "contexts:\n- name: t\n  context: {cluster: c, user: u}\n"));
  for (const char* sub : {"reg", "plug", "cdi"}) {
    std::filesystem::create_directory(Path(sub));
  }
  std::vector<std::string> args = TlsFlags();
  args.insert(args.end(),
              {"--node-name=n1", "--kubeconfig=" + Path("kubeconfig"),
               "--registry-dir=" + Path("reg"), "--plugin-dir=" + Path("plug"),
               "--state-dir=" + Path("plug"), "--cdi-dir=" + Path("cdi")});
  DaemonProcess dra("dgx-h100", args, Path("dra.log"),
                    {"GPULET_SIM_SOCKET=" + Path("sim.sock")}, "dra");
  const int port = ServingPort(dra);
  ASSERT_GT(port, 0) << dra.Log();
  // Polls until the driver has talked to the API server and counted it; a
  // guard against a hang, not a timing assertion.
  const std::regex counted(
      "rest_client_requests_total\\{[^}]*code=\"404\"[^}]*\\} [1-9]");
  std::string text;
  for (absl::Time deadline = absl::Now() + kTimeout; absl::Now() < deadline;
       absl::SleepFor(absl::Milliseconds(20))) {
    httplib::Result r = Get(port, "/metrics", true);
    text = r ? r->body : "";
    if (requests > 0 && std::regex_search(text, counted)) break;
  }
  EXPECT_TRUE(std::regex_search(text, counted)) << text << "\n" << dra.Log();
  EXPECT_THAT(text, HasSubstr("rest_client_request_duration_seconds_bucket"));
  ExpectServedOnlyOverTls(port, "rest_client_requests_total");
}

TEST_F(MetricsTlsTest, CertificateWithoutKeyIsAUsageErrorNamingTheFlag) {
  const std::string cert = "--metrics-tls-cert-file=" + Path("tls.crt");
  const ProcessResult plugin =
      RunGpulet("", {"plugin", "--metrics-address=127.0.0.1:0", cert});
  EXPECT_NE(plugin.exit_code, 0) << Describe(plugin);
  EXPECT_THAT(plugin.err, HasSubstr("--metrics-tls-key-file"))
      << Describe(plugin);
  const ProcessResult dra = RunGpulet(
      "", {"dra", "--node-name=n1", "--metrics-address=127.0.0.1:0", cert});
  EXPECT_NE(dra.exit_code, 0) << Describe(dra);
  EXPECT_THAT(dra.err, HasSubstr("--metrics-tls-key-file")) << Describe(dra);
}

}  // namespace
}  // namespace gpulet::testing
