#include "src/kube/curl_transport.h"

#include <curl/curl.h>

#include <cstring>
#include <utility>

#include "absl/strings/ascii.h"
#include "absl/strings/match.h"
#include "absl/strings/str_cat.h"
#include "src/common/status_macros.h"

namespace gpulet::kube {
namespace {

constexpr size_t kMaxBody = 256 << 20;     // a whole (paged) response
constexpr size_t kMaxErrorBody = 1 << 20;  // a non-2xx body while streaming
constexpr size_t kMaxIdleHandles = 4;

void GlobalInit() {
  static const CURLcode kInit = curl_global_init(CURL_GLOBAL_DEFAULT);
  (void)kInit;
}

// curl_slist with an owner.
struct HeaderList {
  curl_slist* list = nullptr;
  ~HeaderList() { curl_slist_free_all(list); }
  void Add(const std::string& line) {
    list = curl_slist_append(list, line.c_str());
  }
};

absl::Status CurlError(CURLcode code, const char* errbuf,
                       absl::string_view what) {
  std::string detail = errbuf[0] != '\0' ? errbuf : curl_easy_strerror(code);
  while (!detail.empty() && detail.back() == '\n') detail.pop_back();
  std::string message = absl::StrCat(what, ": ", detail);
  switch (code) {
    case CURLE_PEER_FAILED_VERIFICATION:
    case CURLE_SSL_CACERT_BADFILE:
      return absl::FailedPreconditionError(absl::StrCat(
          message, " (the API server's certificate did not verify against "
                   "the configured certificate authority)"));
    case CURLE_SSL_CERTPROBLEM:
    case CURLE_SSL_CIPHER:
    case CURLE_UNSUPPORTED_PROTOCOL:
    case CURLE_URL_MALFORMAT:
      return absl::FailedPreconditionError(message);
    case CURLE_OPERATION_TIMEDOUT:
      return absl::DeadlineExceededError(message);
    case CURLE_ABORTED_BY_CALLBACK:
      return absl::CancelledError(message);
    default:
      return absl::UnavailableError(message);
  }
}

}  // namespace

// The state of one request, reached from libcurl's callbacks.
struct CurlTransport::Exchange {
  CURL* curl = nullptr;
  const ChunkFn* on_chunk = nullptr;
  std::stop_token stop;
  Response response;
  bool ended_by_caller = false;
  bool too_large = false;

  static size_t OnHeader(char* data, size_t size, size_t n, void* self) {
    auto* ex = static_cast<Exchange*>(self);
    absl::string_view line(data, size * n);
    if (absl::StartsWith(line, "HTTP/")) ex->response.retry_after.clear();
    constexpr absl::string_view kRetryAfter = "retry-after:";
    if (line.size() > kRetryAfter.size() &&
        absl::EqualsIgnoreCase(line.substr(0, kRetryAfter.size()),
                               kRetryAfter)) {
      ex->response.retry_after = std::string(
          absl::StripAsciiWhitespace(line.substr(kRetryAfter.size())));
    }
    return size * n;
  }

  static size_t OnBody(char* data, size_t size, size_t n, void* self) {
    auto* ex = static_cast<Exchange*>(self);
    absl::string_view chunk(data, size * n);
    long code = 0;  // NOLINT(runtime/int): libcurl's type
    curl_easy_getinfo(ex->curl, CURLINFO_RESPONSE_CODE, &code);
    if (ex->on_chunk != nullptr && code >= 200 && code < 300) {
      if (!(*ex->on_chunk)(chunk)) {
        ex->ended_by_caller = true;
        return 0;
      }
      return chunk.size();
    }
    const size_t limit = ex->on_chunk != nullptr ? kMaxErrorBody : kMaxBody;
    if (ex->response.body.size() + chunk.size() > limit) {
      ex->too_large = true;
      return 0;
    }
    ex->response.body.append(chunk.data(), chunk.size());
    return chunk.size();
  }

  static int OnProgress(void* self, curl_off_t, curl_off_t, curl_off_t,
                        curl_off_t) {
    return static_cast<Exchange*>(self)->stop.stop_requested() ? 1 : 0;
  }
};

CurlTransport::CurlTransport(const config::ApiServerConfig& config,
                             const CurlTransportOptions& options)
    : config_(config),
      options_(options),
      tokens_(config.token, config.token_file, *options.clock,
              options.token_refresh) {}

absl::StatusOr<std::unique_ptr<CurlTransport>> CurlTransport::Create(
    const config::ApiServerConfig& config,
    const CurlTransportOptions& options) {
  if (!absl::StartsWith(config.server, "https://")) {
    return absl::InvalidArgumentError(absl::StrCat(
        config.source, ": server \"", config.server,
        "\" is not an https:// URL"));
  }
  if (config.client_cert_pem.empty() != config.client_key_pem.empty()) {
    return absl::InvalidArgumentError(absl::StrCat(
        config.source, ": a client certificate needs its key and vice versa"));
  }
  GlobalInit();
  return std::unique_ptr<CurlTransport>(new CurlTransport(config, options));
}

CurlTransport::~CurlTransport() {
  for (void* handle : idle_) curl_easy_cleanup(static_cast<CURL*>(handle));
}

void* CurlTransport::TakeHandle() {
  {
    absl::MutexLock lock(&mu_);
    if (!idle_.empty()) {
      void* handle = idle_.back();
      idle_.pop_back();
      return handle;
    }
  }
  return curl_easy_init();
}

void CurlTransport::ReturnHandle(void* handle) {
  // Reset drops the options (and the key material set on the handle) but
  // keeps the live connections for the next request.
  curl_easy_reset(static_cast<CURL*>(handle));
  absl::MutexLock lock(&mu_);
  if (idle_.size() < kMaxIdleHandles) {
    idle_.push_back(handle);
    return;
  }
  curl_easy_cleanup(static_cast<CURL*>(handle));
}

absl::StatusOr<Response> CurlTransport::Do(const Request& request) {
  return Perform(request, nullptr, std::stop_token());
}

absl::StatusOr<Response> CurlTransport::Stream(const Request& request,
                                               const ChunkFn& on_chunk,
                                               std::stop_token stop) {
  return Perform(request, &on_chunk, std::move(stop));
}

absl::StatusOr<Response> CurlTransport::Perform(const Request& request,
                                                const ChunkFn* on_chunk,
                                                std::stop_token stop) {
  const std::string url = config_.server + request.path;
  const std::string what = absl::StrCat(request.method, " ", url);
  GPULET_ASSIGN_OR_RETURN(std::string token, tokens_.Token());

  CURL* curl = static_cast<CURL*>(TakeHandle());
  if (curl == nullptr) return absl::ResourceExhaustedError("curl_easy_init");
  struct Return {
    CurlTransport* self;
    CURL* curl;
    ~Return() { self->ReturnHandle(curl); }
  } give_back{this, curl};

  Exchange ex;
  ex.curl = curl;
  ex.on_chunk = on_chunk;
  ex.stop = std::move(stop);
  char errbuf[CURL_ERROR_SIZE] = {};

  curl_easy_setopt(curl, CURLOPT_URL, url.c_str());
  curl_easy_setopt(curl, CURLOPT_ERRORBUFFER, errbuf);
  curl_easy_setopt(curl, CURLOPT_NOSIGNAL, 1L);
  curl_easy_setopt(curl, CURLOPT_PROTOCOLS_STR, "https");
  curl_easy_setopt(curl, CURLOPT_FOLLOWLOCATION, 0L);
  curl_easy_setopt(curl, CURLOPT_PROXY, "");
  curl_easy_setopt(curl, CURLOPT_HTTP_VERSION, CURL_HTTP_VERSION_1_1);
  curl_easy_setopt(curl, CURLOPT_TCP_KEEPALIVE, 1L);
  curl_easy_setopt(curl, CURLOPT_CONNECTTIMEOUT_MS,
                   static_cast<long>(  // NOLINT(runtime/int)
                       absl::ToInt64Milliseconds(options_.connect_timeout)));
  if (request.timeout != absl::InfiniteDuration()) {
    curl_easy_setopt(curl, CURLOPT_TIMEOUT_MS,
                     static_cast<long>(  // NOLINT(runtime/int)
                         absl::ToInt64Milliseconds(request.timeout)));
  }

  curl_easy_setopt(curl, CURLOPT_SSL_VERIFYPEER, 1L);
  curl_easy_setopt(curl, CURLOPT_SSL_VERIFYHOST, 2L);
  if (!config_.ca_pem.empty()) {
    // Only the configured CA: no system bundle or directory beside it.
    curl_easy_setopt(curl, CURLOPT_CAPATH, static_cast<char*>(nullptr));
    curl_blob ca{const_cast<char*>(config_.ca_pem.data()),
                 config_.ca_pem.size(), CURL_BLOB_COPY};
    curl_easy_setopt(curl, CURLOPT_CAINFO_BLOB, &ca);
  }
  if (!config_.client_cert_pem.empty()) {
    curl_blob cert{const_cast<char*>(config_.client_cert_pem.data()),
                   config_.client_cert_pem.size(), CURL_BLOB_COPY};
    curl_blob key{const_cast<char*>(config_.client_key_pem.data()),
                  config_.client_key_pem.size(), CURL_BLOB_COPY};
    curl_easy_setopt(curl, CURLOPT_SSLCERTTYPE, "PEM");
    curl_easy_setopt(curl, CURLOPT_SSLCERT_BLOB, &cert);
    curl_easy_setopt(curl, CURLOPT_SSLKEYTYPE, "PEM");
    curl_easy_setopt(curl, CURLOPT_SSLKEY_BLOB, &key);
  }

  HeaderList headers;
  headers.Add("Accept: application/json");
  headers.Add("User-Agent: gpulet/0.1");
  headers.Add("Expect:");
  if (!token.empty()) {
    headers.Add(absl::StrCat("Authorization: Bearer ", token));
  }
  if (!request.content_type.empty()) {
    headers.Add(absl::StrCat("Content-Type: ", request.content_type));
  }
  curl_easy_setopt(curl, CURLOPT_HTTPHEADER, headers.list);

  if (request.method == "GET") {
    curl_easy_setopt(curl, CURLOPT_HTTPGET, 1L);
  } else {
    curl_easy_setopt(curl, CURLOPT_CUSTOMREQUEST, request.method.c_str());
    curl_easy_setopt(curl, CURLOPT_POSTFIELDS, request.body.data());
    curl_easy_setopt(curl, CURLOPT_POSTFIELDSIZE_LARGE,
                     static_cast<curl_off_t>(request.body.size()));
  }

  curl_easy_setopt(curl, CURLOPT_HEADERFUNCTION, &Exchange::OnHeader);
  curl_easy_setopt(curl, CURLOPT_HEADERDATA, &ex);
  curl_easy_setopt(curl, CURLOPT_WRITEFUNCTION, &Exchange::OnBody);
  curl_easy_setopt(curl, CURLOPT_WRITEDATA, &ex);
  curl_easy_setopt(curl, CURLOPT_NOPROGRESS, 0L);
  curl_easy_setopt(curl, CURLOPT_XFERINFOFUNCTION, &Exchange::OnProgress);
  curl_easy_setopt(curl, CURLOPT_XFERINFODATA, &ex);

  const CURLcode code = curl_easy_perform(curl);
  long status = 0;  // NOLINT(runtime/int): libcurl's type
  curl_easy_getinfo(curl, CURLINFO_RESPONSE_CODE, &status);
  ex.response.status = static_cast<int>(status);
  if (status == 401) tokens_.Invalidate();
  if (code == CURLE_WRITE_ERROR && ex.ended_by_caller) return ex.response;
  if (code == CURLE_WRITE_ERROR && ex.too_large) {
    return absl::ResourceExhaustedError(
        absl::StrCat(what, ": response body too large"));
  }
  if (code != CURLE_OK) return CurlError(code, errbuf, what);
  return ex.response;
}

}  // namespace gpulet::kube
