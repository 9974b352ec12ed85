#include "src/net/kube/tls_transport.h"

#include <algorithm>
#include <functional>
#include <optional>
#include <stop_token>
#include <utility>

#include "absl/strings/ascii.h"
#include "absl/strings/match.h"
#include "absl/strings/numbers.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/strip.h"
#include "src/base/common/clock.h"
#include "src/base/common/status_macros.h"
#include "src/net/kube/http_response_parser.h"

namespace gpulet::kube {
namespace {

constexpr size_t kMaxErrorBody = 1 << 20;  // a non-2xx body while streaming
constexpr size_t kReadBuffer = 16 << 10;

absl::Status Wrap(absl::string_view what, const absl::Status& status) {
  return absl::Status(status.code(),
                      absl::StrCat(what, ": ", status.message()));
}

// When waiting for the next bytes gives up, counted from now.
absl::Time IdleDeadline(const common::Clock& clock, absl::Duration idle) {
  return idle == absl::InfiniteDuration() ? absl::InfiniteFuture()
                                          : clock.Now() + idle;
}

absl::Status IdleTimedOut(absl::string_view what, absl::Duration idle) {
  return absl::DeadlineExceededError(absl::StrCat(
      what, ": nothing from the server for ", absl::FormatDuration(idle),
      " (the idle timeout): the connection is taken for dead"));
}

bool Printable(absl::string_view text) {
  return std::all_of(text.begin(), text.end(), [](char c) {
    return static_cast<unsigned char>(c) > 0x20 && c != 0x7f;
  });
}

}  // namespace

// What the transport learns from one try on one connection.
struct TlsTransport::Attempt {
  bool retry = false;    // safe to send again on a new connection
  bool keep = false;     // the connection may carry the next request
  bool counted = false;  // the answer's head was counted in the metrics
};

struct TlsTransport::Identity {
  std::string token;
  std::shared_ptr<SSL_CTX> ctx;
  uint64_t generation = 0;  // of the exec plugin's credential; 0: none
};

namespace {

std::unique_ptr<ExecCredentialSource> MakeExecSource(
    const config::ApiServerConfig& config, const TlsTransportOptions& options) {
  if (!config.exec) return nullptr;
  auto plugin = std::make_shared<ExecPlugin>(
      *config.exec, ExecClusterInfo{config.server, config.ca_pem},
      options.exec);
  return std::make_unique<ExecCredentialSource>(
      [plugin] { return plugin->Run(); }, *options.clock);
}

}  // namespace

TlsTransport::TlsTransport(const config::ApiServerConfig& config,
                           const TlsTransportOptions& options,
                           std::unique_ptr<TlsContextSource> contexts,
                           Target target)
    : server_(config.server),
      source_(config.source),
      options_(options),
      contexts_(std::move(contexts)),
      ca_pem_(config.ca_pem),
      target_(std::move(target)),
      impersonation_headers_(
          config::ImpersonationHeaders(config.impersonation)),
      tokens_(config.token, config.token_file, *options.clock,
              options.token_refresh),
      exec_(MakeExecSource(config, options)) {}

TlsTransport::~TlsTransport() = default;

absl::StatusOr<TlsTransport::Target> TlsTransport::ParseServer(
    const config::ApiServerConfig& config) {
  const auto invalid = [&config](absl::string_view why) {
    return absl::InvalidArgumentError(
        absl::StrCat(config.source, ": server \"", config.server, "\" ", why));
  };
  absl::string_view url = config.server;
  if (!absl::ConsumePrefix(&url, "https://")) {
    return invalid("is not an https:// URL");
  }
  const size_t slash = url.find('/');
  absl::string_view authority = url.substr(0, slash);
  absl::string_view base =
      slash == absl::string_view::npos ? "" : url.substr(slash);
  while (absl::ConsumeSuffix(&base, "/")) {
  }
  if (authority.empty() || !Printable(url) ||
      url.find_first_of("@?#") != absl::string_view::npos) {
    return invalid("is not a URL of the form https://host[:port][/path]");
  }
  absl::string_view host = authority;
  absl::string_view port;
  if (absl::StartsWith(authority, "[")) {
    const size_t close = authority.find(']');
    if (close == absl::string_view::npos) return invalid("has no closing ]");
    host = authority.substr(1, close - 1);
    port = authority.substr(close + 1);
  } else if (const size_t colon = authority.rfind(':');
             colon != absl::string_view::npos) {
    host = authority.substr(0, colon);
    port = authority.substr(colon);
  }
  int port_number = 443;
  if (!port.empty() &&
      (!absl::ConsumePrefix(&port, ":") || port.empty() ||
       !std::all_of(port.begin(), port.end(), absl::ascii_isdigit) ||
       !absl::SimpleAtoi(port, &port_number) || port_number < 1 ||
       port_number > 65535)) {
    return invalid("has a bad port");
  }
  if (host.empty()) return invalid("has no host");
  return Target{std::string(host), absl::StrCat(port_number),
                std::string(authority), std::string(base)};
}

absl::StatusOr<std::unique_ptr<TlsTransport>> TlsTransport::Create(
    const config::ApiServerConfig& config, const TlsTransportOptions& options) {
  GPULET_ASSIGN_OR_RETURN(Target target, ParseServer(config));
  if (config.client_cert_pem.empty() != config.client_key_pem.empty()) {
    return absl::InvalidArgumentError(absl::StrCat(
        config.source, ": a client certificate needs its key and vice versa"));
  }
  GPULET_RETURN_IF_ERROR(config::ValidateImpersonation(
      config.impersonation, absl::StrCat(config.source, ": impersonation")));
  GPULET_ASSIGN_OR_RETURN(std::unique_ptr<TlsContextSource> contexts,
                          TlsContextSource::Create(config));
  return std::unique_ptr<TlsTransport>(new TlsTransport(
      config, options, std::move(contexts), std::move(target)));
}

std::shared_ptr<SSL_CTX> TlsTransport::Context() {
  TlsContextSource::Current current = contexts_->Get();
  if (current.changed) {
    std::vector<TlsConnectionPtr> stale;
    absl::MutexLock lock(&mu_);
    stale.swap(idle_);  // closed after the lock is released
  }
  return std::move(current.ctx);
}

int TlsTransport::connections_opened() const {
  absl::MutexLock lock(&mu_);
  return opened_;
}

TlsConnectionPtr TlsTransport::TakeIdle() {
  while (true) {
    TlsConnectionPtr conn;
    {
      absl::MutexLock lock(&mu_);
      if (idle_.empty()) return nullptr;
      conn = std::move(idle_.back());
      idle_.pop_back();
    }
    if (conn->Usable()) return conn;
  }
}

void TlsTransport::ReturnIdle(TlsConnectionPtr conn, const SSL_CTX* ctx) {
  absl::MutexLock lock(&mu_);
  if (ctx == current_ctx_.get() && idle_.size() < options_.max_idle) {
    idle_.push_back(std::move(conn));
  }
}

absl::StatusOr<TlsTransport::Identity> TlsTransport::CurrentIdentity() {
  std::shared_ptr<SSL_CTX> base = Context();
  if (exec_ == nullptr) {
    GPULET_ASSIGN_OR_RETURN(std::string token, tokens_.Token());
    absl::MutexLock lock(&mu_);
    current_ctx_ = base;
    return Identity{std::move(token), std::move(base), 0};
  }
  GPULET_ASSIGN_OR_RETURN(ExecCredentialSource::Current current, exec_->Get());
  Identity id{std::move(current.credential.token), std::move(base),
              current.generation};
  absl::MutexLock lock(&mu_);
  // A request that got an older credential uses the newer context.
  if (current.generation > exec_ctx_generation_) {
    SslCtxPtr ctx;
    if (!current.credential.client_cert_pem.empty()) {
      config::ApiServerConfig with_cert;
      with_cert.source = absl::StrCat(source_, " (exec plugin credential)");
      with_cert.ca_pem = ca_pem_;
      with_cert.client_cert_pem = std::move(current.credential.client_cert_pem);
      with_cert.client_key_pem = std::move(current.credential.client_key_pem);
      absl::StatusOr<SslCtxPtr> made = NewClientContext(with_cert);
      if (!made.ok()) {
        // Not kept: the next request asks the plugin again.
        exec_->Invalidate(current.generation);
        return made.status();
      }
      ctx = *std::move(made);
    }
    // Pooled connections present the identity they were made with.
    if (exec_ctx_ != nullptr || ctx != nullptr) idle_.clear();
    exec_ctx_ = std::move(ctx);
    exec_ctx_generation_ = current.generation;
  }
  if (exec_ctx_ != nullptr) id.ctx = exec_ctx_;
  current_ctx_ = id.ctx;
  return id;
}

absl::StatusOr<Response> TlsTransport::Do(const Request& request,
                                          std::stop_token stop) {
  return Perform(request, nullptr, stop);
}

absl::StatusOr<Response> TlsTransport::Stream(const Request& request,
                                              const ChunkFn& on_chunk,
                                              std::stop_token stop) {
  return Perform(request, &on_chunk, stop);
}

std::string TlsTransport::Message(const Request& request,
                                  const std::string& token) const {
  std::string message = absl::StrCat(
      request.method, " ", target_.base_path, request.path,
      " HTTP/1.1\r\nHost: ", target_.authority,
      "\r\nUser-Agent: gpulet/0.1\r\nAccept: application/json\r\n");
  if (!token.empty()) {
    absl::StrAppend(&message, "Authorization: Bearer ", token, "\r\n");
  }
  message += impersonation_headers_;
  if (!request.content_type.empty()) {
    absl::StrAppend(&message, "Content-Type: ", request.content_type, "\r\n");
  }
  if (!request.body.empty() ||
      (request.method != "GET" && request.method != "HEAD" &&
       request.method != "DELETE")) {
    absl::StrAppend(&message, "Content-Length: ", request.body.size(), "\r\n");
  }
  absl::StrAppend(&message, "\r\n", request.body);

  return message;
}

absl::StatusOr<Response> TlsTransport::Perform(const Request& request,
                                               const ChunkFn* on_chunk,
                                               const std::stop_token& stop) {
  const common::Clock& clock = *options_.clock;
  const absl::Time start = clock.Now();
  bool counted = false;
  absl::StatusOr<Response> response = Send(request, on_chunk, stop, counted);
  const RequestMetrics& metrics = options_.metrics;
  if (!counted) {
    if (response.ok()) {
      metrics.CountResult(response->status, request.method, target_.authority);
    } else {
      metrics.CountResult(kNoResponseCode, request.method, target_.authority);
    }
  }
  if (on_chunk == nullptr) {
    metrics.ObserveLatency(request.method, target_.authority,
                           clock.Now() - start);
  }
  return response;
}

absl::StatusOr<Response> TlsTransport::Send(const Request& request,
                                            const ChunkFn* on_chunk,
                                            const std::stop_token& stop,
                                            bool& counted) {
  const std::string what =
      absl::StrCat(request.method, " ", server_, request.path);
  if (request.method.empty() ||
      !std::all_of(request.method.begin(), request.method.end(),
                   absl::ascii_isupper) ||
      !absl::StartsWith(request.path, "/") || !Printable(request.path) ||
      request.content_type.find_first_of("\r\n") != std::string::npos) {
    return absl::InvalidArgumentError(
        absl::StrCat(what, ": not a valid method, path or content type"));
  }
  GPULET_ASSIGN_OR_RETURN(Identity id, CurrentIdentity());
  const std::string& token = id.token;
  if (token.find_first_of("\r\n") != std::string::npos) {
    return absl::FailedPreconditionError(
        absl::StrCat(source_, ": the bearer token contains a line break"));
  }
  const std::string message = Message(request, token);
  const common::Clock& clock = *options_.clock;
  const absl::Time deadline = request.timeout == absl::InfiniteDuration()
                                  ? absl::InfiniteFuture()
                                  : clock.Now() + request.timeout;
  for (int tries = 0;; ++tries) {
    // A second try always dials: another pooled connection may be as stale.
    TlsConnectionPtr conn =
        on_chunk == nullptr && tries == 0 ? TakeIdle() : nullptr;
    const bool reused = conn != nullptr;
    if (!reused) {
      conn = std::make_unique<TlsConnection>(
          TlsConnectionOptions{.clock = options_.clock,
                               .resolver = options_.resolver,
                               .keepalive = options_.keepalive});
    }
    std::optional<std::stop_callback<std::function<void()>>> on_stop;
    if (stop.stop_possible()) {
      on_stop.emplace(stop, [c = conn.get()] { c->Interrupt(); });
    }
    if (!reused) {
      {
        absl::MutexLock lock(&mu_);
        ++opened_;
      }
      absl::Status connected = conn->Connect(
          id.ctx.get(), target_.host, target_.port,
          std::min(deadline, clock.Now() + options_.connect_timeout));
      if (!connected.ok()) return Wrap(what, connected);
    }
    Attempt attempt;
    absl::StatusOr<Response> response =
        Exchange(*conn, reused, message, request, on_chunk, deadline, attempt);
    counted = attempt.counted;
    on_stop.reset();
    if (!response.ok() && attempt.retry && tries == 0) continue;
    if (response.ok() && attempt.keep) {
      ReturnIdle(std::move(conn), id.ctx.get());
    }
    if (response.ok() && response->status == 401) {
      if (exec_ != nullptr) {
        exec_->Invalidate(id.generation);
      } else {
        tokens_.Invalidate();
      }
    }
    return response;
  }
}

absl::StatusOr<Response> TlsTransport::Exchange(
    TlsConnection& conn, bool reused, const std::string& message,
    const Request& request, const ChunkFn* on_chunk, absl::Time deadline,
    Attempt& attempt) {
  const std::string what =
      absl::StrCat(request.method, " ", server_, request.path);
  const uint64_t sent_before = conn.bytes_sent();
  if (absl::Status s = conn.Write(message, deadline); !s.ok()) {
    attempt.retry =
        reused && s.code() == absl::StatusCode::kUnavailable &&
        (request.method == "GET" || conn.bytes_sent() == sent_before);
    return Wrap(what, s);
  }
  HttpResponseParser parser(options_.max_head, request.method == "HEAD");
  Response response;
  bool too_large = false;
  const size_t limit = on_chunk != nullptr ? kMaxErrorBody : options_.max_body;
  const HttpResponseParser::BodyFn on_body = [&](absl::string_view piece) {
    if (on_chunk != nullptr && parser.status() / 100 == 2) {
      return (*on_chunk)(piece);
    }
    if (response.body.size() + piece.size() > limit) {
      too_large = true;
      return false;
    }
    response.body.append(piece.data(), piece.size());
    return true;
  };
  // A reused connection the server closed as the request went out: nothing
  // of an answer came, so a GET can go again on a new connection.
  const bool may_retry = reused && request.method == "GET";
  std::string buffer(kReadBuffer, '\0');
  const common::Clock& clock = *options_.clock;
  absl::Time idle_until = IdleDeadline(clock, request.idle_timeout);
  while (!parser.done() && !parser.stopped()) {
    const absl::Time until = std::min(deadline, idle_until);
    absl::StatusOr<size_t> n = conn.Read(buffer.data(), buffer.size(), until);
    if (!n.ok()) {
      attempt.retry = may_retry && !parser.started() &&
                      n.status().code() == absl::StatusCode::kUnavailable;
      if (n.status().code() == absl::StatusCode::kDeadlineExceeded &&
          idle_until < deadline) {
        return IdleTimedOut(what, request.idle_timeout);
      }
      return Wrap(what, n.status());
    }
    idle_until = IdleDeadline(clock, request.idle_timeout);
    if (*n == 0 && !parser.started()) {
      attempt.retry = may_retry;
      return absl::UnavailableError(absl::StrCat(
          what, ": the server closed the connection before answering"));
    }
    absl::Status s =
        *n == 0 ? parser.Finish()
                : parser.Feed(absl::string_view(buffer.data(), *n), on_body);
    if (s.ok() && !attempt.counted && parser.head_done()) {
      options_.metrics.CountResult(parser.status(), request.method,
                                   target_.authority);
      attempt.counted = true;
    }
    if (!s.ok()) {
      return s.code() == absl::StatusCode::kResourceExhausted
                 ? absl::ResourceExhaustedError(
                       absl::StrCat(what, ": ", s.message()))
                 : absl::UnavailableError(absl::StrCat(
                       what, ": bad HTTP response: ", s.message()));
    }
    if (*n == 0) break;
  }
  if (too_large) {
    return absl::ResourceExhaustedError(absl::StrCat(
        what, ": response body too large (more than ", limit, " bytes)"));
  }
  response.status = parser.status();
  response.retry_after = parser.retry_after();
  attempt.keep = parser.keep_alive();
  return response;
}

}  // namespace gpulet::kube
