// HttpsTestServer: an HTTPS server (cpp-httplib) on 127.0.0.1 with `leaf` as
// its certificate, for tests of the API client's TLS transport; with a
// `client_ca`, it demands client certificates signed by that CA (mutual
// TLS). Handlers are registered on http(); a handler reads the client's
// certificate through the request's `ssl`. Test-only; header-only, for
// targets that link cpp-httplib.
//
// The constructor returns once the server accepts connections; the
// destructor stops it and joins its thread.
//
// Thread safety: handlers run on the server's threads.
#pragma once

#include <openssl/x509.h>

#include <memory>
#include <string>
#include <thread>

#include "absl/strings/str_cat.h"
#include "gtest/gtest.h"
#include "httplib.h"
#include "src/net/testing/test_tls.h"

namespace gpulet::kube::tls_test {

class HttpsTestServer {
 public:
  explicit HttpsTestServer(const KeyPair& leaf,
                           const std::string& client_ca = "") {
    X509_STORE* store = nullptr;
    if (!client_ca.empty()) {
      store = X509_STORE_new();
      X509_STORE_add_cert(store, ReadCert(client_ca).get());
    }
    server_ = std::make_unique<httplib::SSLServer>(
        ReadCert(leaf.cert_pem).get(), ReadKey(leaf.key_pem).get(), store);
    EXPECT_TRUE(server_->is_valid());
    port_ = server_->bind_to_any_port("127.0.0.1");
    EXPECT_GT(port_, 0);
    thread_ = std::thread([this] { server_->listen_after_bind(); });
    // stop() only reaches a server that is running.
    while (!server_->is_running()) std::this_thread::yield();
  }
  ~HttpsTestServer() {
    server_->stop();
    thread_.join();
  }
  HttpsTestServer(const HttpsTestServer&) = delete;
  HttpsTestServer& operator=(const HttpsTestServer&) = delete;

  httplib::Server& http() { return *server_; }
  std::string url() const { return absl::StrCat("https://127.0.0.1:", port_); }
  int port() const { return port_; }

 private:
  std::unique_ptr<httplib::SSLServer> server_;
  int port_ = 0;
  std::thread thread_;
};

}  // namespace gpulet::kube::tls_test
