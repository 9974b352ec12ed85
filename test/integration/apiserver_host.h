// ApiServerHost: a real kube-apiserver (the build of test/cluster/build-k8s)
// over a real etcd, both on 127.0.0.1 in a temporary directory, with a CA,
// serving certificate and an admin token made here. For the tests that must
// know what the API server itself accepts (dra_apiserver_test,
// kube_apiserver_test).
//
// Both processes are killed by PID and reaped, and the directory removed,
// when the host is destroyed. Not thread-safe.
#pragma once

#include <fcntl.h>
#include <netinet/in.h>
#include <signal.h>
#include <sys/socket.h>
#include <sys/wait.h>
#include <unistd.h>

#include <chrono>
#include <cstdio>
#include <filesystem>
#include <memory>
#include <string>
#include <thread>
#include <vector>

#include "absl/strings/ascii.h"
#include "absl/strings/str_cat.h"
#include "gtest/gtest.h"
#include "src/base/common/clock.h"
#include "src/base/common/file_util.h"
#include "src/net/kube/client.h"
#include "src/net/kube/kubeconfig.h"
#include "src/net/kube/tls_transport.h"
#include "src/net/testing/test_tls.h"

namespace gpulet::testing {

// A free TCP port on 127.0.0.1, or -1.
inline int FreeLoopbackPort() {
  int fd = ::socket(AF_INET, SOCK_STREAM, 0);
  sockaddr_in addr{};
  addr.sin_family = AF_INET;
  addr.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  socklen_t len = sizeof(addr);
  const bool ok =
      ::bind(fd, reinterpret_cast<sockaddr*>(&addr), sizeof(addr)) == 0 &&
      ::getsockname(fd, reinterpret_cast<sockaddr*>(&addr), &len) == 0;
  ::close(fd);
  return ok ? ntohs(addr.sin_port) : -1;
}

// A child process with its output in a log file; killed by PID and reaped
// when destroyed.
class LoggedProcess {
 public:
  LoggedProcess(const std::vector<std::string>& argv, const std::string& log) {
    pid_ = ::fork();
    if (pid_ == 0) {
      int fd = ::open(log.c_str(), O_WRONLY | O_CREAT | O_TRUNC, 0600);
      ::dup2(fd, 1);
      ::dup2(fd, 2);
      std::vector<char*> args;
      for (const std::string& a : argv) {
        args.push_back(const_cast<char*>(a.c_str()));
      }
      args.push_back(nullptr);
      ::execv(args[0], args.data());
      ::_exit(127);
    }
  }
  ~LoggedProcess() {
    if (pid_ > 0) {
      ::kill(pid_, SIGKILL);
      ::waitpid(pid_, nullptr, 0);
    }
  }
  LoggedProcess(const LoggedProcess&) = delete;
  LoggedProcess& operator=(const LoggedProcess&) = delete;

  bool Running() const {
    return pid_ > 0 && ::waitpid(pid_, nullptr, WNOHANG) == 0;
  }
  void Signal(int signo) const {
    if (pid_ > 0) ::kill(pid_, signo);
  }

 private:
  pid_t pid_ = -1;
};

class ApiServerHost {
 public:
  static constexpr char kAdminToken[] = "admin-token-for-the-test";

  // The directory of the kube-apiserver binary, "" when it is not built.
  static std::string K8sBinDir() {
    const std::string cmd = std::string(GPULET_SOURCE_DIR) +
                            "/test/cluster/build-k8s --check 2>/dev/null";
    FILE* p = ::popen(cmd.c_str(), "r");
    if (p == nullptr) return "";
    char buf[4096] = {};
    const size_t n = ::fread(buf, 1, sizeof(buf) - 1, p);
    if (::pclose(p) != 0) return "";
    return std::string(absl::StripAsciiWhitespace(std::string(buf, n)));
  }

  // Starts etcd and the API server, with `extra_args` after the API
  // server's own; "" on success, else why not.
  std::string Start(const std::vector<std::string>& extra_args = {}) {
    const std::string bin = K8sBinDir();
    if (bin.empty() || !std::filesystem::exists("/usr/bin/etcd")) {
      return "kube-apiserver (test/cluster/build-k8s) or etcd not installed";
    }
    char tmpl[] = "/tmp/kapi.XXXXXX";
    if (::mkdtemp(tmpl) == nullptr) return "mkdtemp failed";
    dir_ = tmpl;
    ca_ = kube::tls_test::MakeCa("kapi-ca");
    const kube::tls_test::KeyPair serving =
        kube::tls_test::MakeLeaf(ca_, "apiserver", true);
    const std::string ca_file = Write("ca.crt", ca_.cert_pem);
    const std::string crt = Write("apiserver.crt", serving.cert_pem);
    const std::string key = Write("apiserver.key", serving.key_pem);
    const std::string sa_key = kube::tls_test::MakeCa("sa").key_pem;
    const std::string sa = Write("sa.key", sa_key);
    const std::string sa_pub =
        Write("sa.pub", kube::tls_test::PublicKeyPem(sa_key));
    const std::string tokens =
        Write("tokens.csv",
              absl::StrCat(kAdminToken, ",test-admin,1,\"system:masters\"\n"));
    etcd_port_ = FreeLoopbackPort();
    const std::string etcd_url = absl::StrCat("http://127.0.0.1:", etcd_port_);
    const std::string peer_url =
        absl::StrCat("http://127.0.0.1:", FreeLoopbackPort());
    port_ = FreeLoopbackPort();
    etcd_ = std::make_unique<LoggedProcess>(
        std::vector<std::string>{
            "/usr/bin/etcd", "--name", "t", "--data-dir", dir_ + "/etcd",
            "--listen-client-urls", etcd_url, "--advertise-client-urls",
            etcd_url, "--listen-peer-urls", peer_url,
            "--initial-advertise-peer-urls", peer_url, "--initial-cluster",
            "t=" + peer_url, "--listen-metrics-urls", "", "--unsafe-no-fsync"},
        dir_ + "/etcd.log");
    std::vector<std::string> apiserver_argv{
        bin + "/kube-apiserver",
        "--etcd-servers",
        etcd_url,
        "--bind-address",
        "127.0.0.1",
        "--advertise-address",
        "127.0.0.1",
        "--secure-port",
        absl::StrCat(port_),
        "--service-cluster-ip-range",
        "10.96.0.0/24",
        "--authorization-mode",
        "RBAC",
        "--client-ca-file",
        ca_file,
        "--tls-cert-file",
        crt,
        "--tls-private-key-file",
        key,
        "--token-auth-file",
        tokens,
        "--service-account-issuer",
        "https://kubernetes.default.svc",
        "--service-account-key-file",
        sa_pub,
        "--service-account-signing-key-file",
        sa,
        "--cert-dir",
        dir_ + "/generated",
        "--profiling=false"};
    apiserver_argv.insert(apiserver_argv.end(), extra_args.begin(),
                          extra_args.end());
    apiserver_ = std::make_unique<LoggedProcess>(apiserver_argv,
                                                 dir_ + "/apiserver.log");
    return "";
  }

  ~ApiServerHost() {
    apiserver_.reset();
    etcd_.reset();
    if (!dir_.empty()) {
      std::error_code ignored;
      std::filesystem::remove_all(dir_, ignored);
    }
  }

  config::ApiServerConfig AdminConfig() const {
    config::ApiServerConfig config;
    config.server = absl::StrCat("https://127.0.0.1:", port_);
    config.ca_pem = ca_.cert_pem;
    config.token = kAdminToken;
    config.source = "test";
    return config;
  }

  // Polls /readyz until the server says ok; "" then, else the log of the
  // process that died.
  std::string WaitReady(kube::Transport& transport) {
    for (;;) {
      if (!etcd_->Running()) return "etcd died: " + Log("etcd.log");
      if (!apiserver_->Running()) {
        return "kube-apiserver died: " + Log("apiserver.log");
      }
      absl::StatusOr<kube::Response> r = transport.Do({.path = "/readyz"});
      if (r.ok() && r->status == 200) return "";
      std::this_thread::sleep_for(std::chrono::milliseconds(200));
    }
  }

  const std::string& dir() const { return dir_; }
  const kube::tls_test::KeyPair& ca() const { return ca_; }
  int port() const { return port_; }
  int etcd_port() const { return etcd_port_; }

  std::string Log(const std::string& name) const {
    absl::StatusOr<std::string> text = common::ReadFile(dir_ + "/" + name);
    if (!text.ok()) return "";
    return text->size() > 3000 ? text->substr(text->size() - 3000) : *text;
  }

 private:
  std::string Write(const std::string& name, const std::string& text) {
    (void)common::WriteFileAtomic(dir_ + "/" + name, text,
                                  {.mode = 0600, .durable = false});
    return dir_ + "/" + name;
  }

  std::string dir_;
  kube::tls_test::KeyPair ca_;
  int port_ = 0;
  int etcd_port_ = 0;
  std::unique_ptr<LoggedProcess> etcd_;
  std::unique_ptr<LoggedProcess> apiserver_;
};

// A client of the host's API server on a transport of its own.
struct ApiServerClient {
  std::unique_ptr<kube::TlsTransport> transport;
  std::unique_ptr<kube::Client> client;
};

// A client that authenticates with `token` (the admin's when empty); one
// without a client, and a test failure, when the transport cannot be made.
inline ApiServerClient ConnectTo(const ApiServerHost& host,
                                 const std::string& token = "",
                                 const kube::ClientOptions& options = {
                                     .qps = 0, .max_attempts = 1}) {
  config::ApiServerConfig config = host.AdminConfig();
  if (!token.empty()) config.token = token;
  absl::StatusOr<std::unique_ptr<kube::TlsTransport>> t =
      kube::TlsTransport::Create(config);
  EXPECT_TRUE(t.ok()) << t.status();
  if (!t.ok()) return {};
  ApiServerClient c{.transport = *std::move(t)};
  c.client = std::make_unique<kube::Client>(*c.transport,
                                            common::RealClock::Get(), options);
  return c;
}

// A test suite whose tests share one API server: started once for the
// suite (its tests are skipped, which fails in strict mode, when it cannot
// start), with an admin client ready in SetUp.
class ApiServerSuite : public ::testing::Test {
 protected:
  static void SetUpTestSuite() {
    host_ = new ApiServerHost();
    skip_ = host_->Start();
  }
  static void TearDownTestSuite() {
    delete host_;
    host_ = nullptr;
  }
  void SetUp() override {
    if (!skip_.empty()) GTEST_SKIP() << skip_;
    admin_ = ConnectTo(*host_, "", {.qps = 0});
    ASSERT_NE(admin_.client, nullptr);
    ASSERT_EQ(host_->WaitReady(*admin_.transport), "");
  }

  static inline ApiServerHost* host_ = nullptr;
  static inline std::string skip_;
  ApiServerClient admin_;
};

}  // namespace gpulet::testing
