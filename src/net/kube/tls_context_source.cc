#include "src/net/kube/tls_context_source.h"

#include <sys/stat.h>

#include <utility>

#include "src/base/common/file_util.h"
#include "src/base/common/logging.h"
#include "src/base/common/status_macros.h"

namespace gpulet::kube {

absl::StatusOr<std::unique_ptr<TlsContextSource>> TlsContextSource::Create(
    const config::ApiServerConfig& config) {
  GPULET_ASSIGN_OR_RETURN(SslCtxPtr ctx, NewClientContext(config));
  return std::unique_ptr<TlsContextSource>(
      new TlsContextSource(config, std::move(ctx)));
}

TlsContextSource::TlsContextSource(const config::ApiServerConfig& config,
                                   SslCtxPtr ctx)
    : config_(config),
      watch_files_(!config.client_cert_file.empty() &&
                   !config.client_key_file.empty()),
      cert_pem_(config.client_cert_pem),
      key_pem_(config.client_key_pem),
      ctx_(ctx.release(), SslCtxFree()) {
  absl::MutexLock lock(&mu_);
  if (watch_files_) loaded_ = Look();
}

TlsContextSource::Stamps TlsContextSource::Look() const {
  auto stamp = [](const std::string& path) {
    struct stat st {};
    if (::stat(path.c_str(), &st) != 0) return Stamp{};
    return Stamp{
        .dev = st.st_dev,
        .ino = st.st_ino,
        .size = st.st_size,
        .mtime_ns = static_cast<int64_t>(st.st_mtim.tv_sec) * 1'000'000'000 +
                    st.st_mtim.tv_nsec};
  };
  return Stamps{stamp(config_.client_cert_file),
                stamp(config_.client_key_file)};
}

TlsContextSource::Current TlsContextSource::Get() {
  absl::MutexLock lock(&mu_);
  if (!watch_files_) return {ctx_, false};
  const Stamps now = Look();
  if (now == loaded_ || now == failed_) return {ctx_, false};
  const int before = reloads_;
  Reload(now);
  return {ctx_, reloads_ != before};
}

void TlsContextSource::Reload(const Stamps& now) {
  config::ApiServerConfig next = config_;
  absl::StatusOr<std::string> cert = common::ReadFile(next.client_cert_file);
  absl::StatusOr<std::string> key = common::ReadFile(next.client_key_file);
  absl::Status status = !cert.ok() ? cert.status() : key.status();
  if (status.ok() && *cert == cert_pem_ && *key == key_pem_) {
    loaded_ = now;  // touched, not changed
    return;
  }
  absl::StatusOr<SslCtxPtr> ctx;
  if (status.ok()) {
    next.client_cert_pem = *cert;
    next.client_key_pem = *key;
    ctx = NewClientContext(next);
    status = ctx.status();
  }
  if (!status.ok()) {
    failed_ = now;
    GPULET_LOG(WARNING) << "client certificate " << next.client_cert_file
                        << " and key " << next.client_key_file
                        << " changed but do not load as a pair (rotation in "
                           "progress?); keeping the previous pair: "
                        << status.message();
    return;
  }
  ctx_ = std::shared_ptr<SSL_CTX>(ctx->release(), SslCtxFree());
  cert_pem_ = *std::move(cert);
  key_pem_ = *std::move(key);
  loaded_ = now;
  failed_ = Stamps{};
  ++reloads_;
  GPULET_LOG(INFO) << "loaded the rotated client certificate "
                   << next.client_cert_file;
}

int TlsContextSource::reloads() const {
  absl::MutexLock lock(&mu_);
  return reloads_;
}

}  // namespace gpulet::kube
