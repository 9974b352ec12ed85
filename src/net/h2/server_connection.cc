#include "src/net/h2/server_connection.h"

#include <nghttp2/nghttp2.h>

#include <algorithm>
#include <cstring>
#include <optional>
#include <utility>
#include <vector>

#include "absl/strings/match.h"
#include "absl/strings/str_cat.h"
#include "src/net/h2/async_call.h"
#include "src/net/h2/grpc_wire.h"
#include "src/net/h2/server_call.h"

namespace gpulet::h2 {

namespace {

constexpr uint32_t kMaxConcurrentStreams = 100;

nghttp2_nv Nv(std::string_view name, std::string_view value,
              uint8_t flags = NGHTTP2_NV_FLAG_NONE) {
  return {reinterpret_cast<uint8_t*>(const_cast<char*>(name.data())),
          reinterpret_cast<uint8_t*>(const_cast<char*>(value.data())),
          name.size(), value.size(), flags};
}

constexpr uint8_t kStatic =
    NGHTTP2_NV_FLAG_NO_COPY_NAME | NGHTTP2_NV_FLAG_NO_COPY_VALUE;

}  // namespace

ServerConnection::ServerConnection(const Service& service,
                                   std::shared_ptr<LoopWaker> waker)
    : service_(service), waker_(std::move(waker)) {
  nghttp2_session_server_new(&session_, Callbacks::Table(), this);
  const nghttp2_settings_entry settings[] = {
      {NGHTTP2_SETTINGS_MAX_CONCURRENT_STREAMS, kMaxConcurrentStreams},
      {NGHTTP2_SETTINGS_MAX_HEADER_LIST_SIZE, kMaxHeaderBytes},
  };
  nghttp2_submit_settings(session_, NGHTTP2_FLAG_NONE, settings,
                          sizeof(settings) / sizeof(settings[0]));
}

ServerConnection::~ServerConnection() {
  for (auto& [id, call] : calls_) {
    if (call->source != nullptr) call->source->Ended("connection closed");
    if (call->async != nullptr) call->async->Abandon();
  }
  calls_.clear();
  nghttp2_session_del(session_);
}

bool ServerConnection::Receive(std::string_view bytes, Clock::time_point) {
  const ssize_t n = nghttp2_session_mem_recv(
      session_, reinterpret_cast<const uint8_t*>(bytes.data()), bytes.size());
  return n >= 0;
}

void ServerConnection::Dispatch(Call& call, Clock::time_point now) {
  if (call.method != "POST") {
    return End(call,
               absl::InternalError(
                   absl::StrCat("method ", call.method, " is not POST")),
               "bad request");
  }
  if (!absl::StartsWith(call.content_type, "application/grpc")) {
    return End(
        call,
        absl::InternalError(absl::StrCat("content-type \"", call.content_type,
                                         "\" is not application/grpc")),
        "bad request");
  }
  if (!call.timeout.empty()) {
    if (absl::Status s = ParseTimeout(call.timeout).status(); !s.ok()) {
      return End(call, absl::InternalError(s.message()), "bad request");
    }
  }
  if (call.deadline.has_value() && *call.deadline <= now) {
    return End(call, absl::DeadlineExceededError("deadline exceeded"),
               "deadline passed");
  }
  absl::StatusOr<std::string_view> request = SingleMessage(call.body);
  if (auto it = service_.unary.find(call.path); it != service_.unary.end()) {
    if (!request.ok()) return End(call, request.status(), "bad request");
    absl::StatusOr<std::string> response = it->second(*request);
    if (!response.ok()) return End(call, response.status(), "error");
    call.prefix = MessagePrefix(response->size());
    call.message = std::make_shared<const std::string>(*std::move(response));
    call.end = absl::OkStatus();
    return Respond(call);
  }
  if (auto it = service_.async_unary.find(call.path);
      it != service_.async_unary.end()) {
    if (!request.ok()) return End(call, request.status(), "bad request");
    return DispatchAsync(call, it->second, *request, now);
  }
  if (auto it = service_.streaming.find(call.path);
      it != service_.streaming.end()) {
    if (!request.ok()) return End(call, request.status(), "bad request");
    absl::StatusOr<std::unique_ptr<StreamSource>> source = it->second(*request);
    if (!source.ok()) return End(call, source.status(), "error");
    call.source = *std::move(source);
    call.want_step = true;
    return Step(call);
  }
  End(call,
      absl::UnimplementedError(
          absl::StrCat("unknown method \"", call.path, "\"")),
      "unknown method");
}

void ServerConnection::DispatchAsync(Call& call, const AsyncUnaryMethod& method,
                                     std::string_view request,
                                     Clock::time_point now) {
  if (!call.deadline.has_value())
    call.deadline = now + service_.async_default_deadline;
  call.async = std::make_shared<AsyncCall>(*call.deadline, waker_);
  method(request, UnaryResponder(call.async));
  Collect(call);
}

void ServerConnection::Collect(Call& call) {
  if (call.async == nullptr) return;
  std::optional<absl::StatusOr<std::string>> response = call.async->Take();
  if (!response.has_value()) return;
  call.async.reset();
  if (!response->ok()) return End(call, response->status(), "error");
  call.prefix = MessagePrefix((*response)->size());
  call.message = std::make_shared<const std::string>(**std::move(response));
  call.end = absl::OkStatus();
  Respond(call);
}

void ServerConnection::CollectAsync() {
  for (auto& [id, call] : calls_) Collect(*call);
}

void ServerConnection::Step(Call& call) {
  if (call.source == nullptr || !call.want_step || call.message != nullptr ||
      call.end.has_value()) {
    return;
  }
  call.want_step = false;
  StreamStep step = call.source->Next();
  if (step.message != nullptr) {
    call.prefix = MessagePrefix(step.message->size());
    call.message = std::move(step.message);
    call.offset = 0;
    if (!call.answered) {
      Respond(call);
    } else if (call.deferred) {
      call.deferred = false;
      nghttp2_session_resume_data(session_, call.id);
    }
  }
  if (step.end.has_value()) End(call, *step.end, "stream ended");
}

void ServerConnection::Respond(Call& call) {
  const nghttp2_nv headers[] = {
      Nv(":status", "200", kStatic),
      Nv("content-type", "application/grpc", kStatic),
  };
  nghttp2_data_provider provider{};
  provider.source.ptr = &call;
  provider.read_callback = Callbacks::Read;
  call.answered = true;
  nghttp2_submit_response(session_, call.id, headers, 2, &provider);
}

void ServerConnection::End(Call& call, const absl::Status& status,
                           std::string_view why) {
  if (call.async != nullptr) {
    call.async->Abandon();
    call.async.reset();
  }
  if (call.finished || call.end.has_value()) return;
  call.end = status;
  if (call.source != nullptr) {
    call.source->Ended(why);
    call.source.reset();
  }
  if (!call.answered) {
    call.answered = true;
    call.finished = true;
    const std::string code = absl::StrCat(static_cast<int>(status.code()));
    const std::string message = PercentEncode(status.message());
    std::vector<nghttp2_nv> headers = {
        Nv(":status", "200", kStatic),
        Nv("content-type", "application/grpc", kStatic),
        Nv("grpc-status", code),
    };
    if (!message.empty()) headers.push_back(Nv("grpc-message", message));
    nghttp2_submit_response(session_, call.id, headers.data(), headers.size(),
                            nullptr);
    return;
  }
  if (call.deferred) {
    call.deferred = false;
    nghttp2_session_resume_data(session_, call.id);
  }
}

void ServerConnection::SubmitTrailers(nghttp2_session* session,
                                      int32_t stream_id, Call& call) {
  call.finished = true;
  const absl::Status& status = *call.end;
  const std::string code = absl::StrCat(static_cast<int>(status.code()));
  const std::string message = PercentEncode(status.message());
  nghttp2_nv trailers[] = {Nv("grpc-status", code),
                           Nv("grpc-message", message)};
  nghttp2_submit_trailer(session, stream_id, trailers, message.empty() ? 1 : 2);
}

void ServerConnection::Closed(int32_t stream_id, uint32_t error_code) {
  auto it = calls_.find(stream_id);
  if (it == calls_.end()) return;
  Call& call = *it->second;
  if (call.async != nullptr) call.async->Abandon();
  if (call.source != nullptr) {
    call.source->Ended(error_code == NGHTTP2_NO_ERROR ? "stream closed"
                                                      : "client cancelled");
  }
  calls_.erase(it);
}

void ServerConnection::WakeStreams() {
  for (auto& [id, call] : calls_) {
    if (call->source != nullptr) {
      call->want_step = true;
      Step(*call);
    }
  }
}

Clock::time_point ServerConnection::Expire(Clock::time_point now) {
  Clock::time_point next = Clock::time_point::max();
  for (auto& [id, call] : calls_) {
    if (!call->deadline.has_value() || call->end.has_value()) continue;
    if (*call->deadline <= now) {
      End(*call, absl::DeadlineExceededError("deadline exceeded"),
          "deadline passed");
    } else {
      next = std::min(next, *call->deadline);
    }
  }
  return next;
}

void ServerConnection::Shutdown() {
  if (shut_down_) return;
  shut_down_ = true;
  for (auto& [id, call] : calls_) {
    if (call->source != nullptr) {
      End(*call, absl::OkStatus(), "server stopping");
    } else if (!call->answered) {
      End(*call, absl::UnavailableError("server stopping"), "server stopping");
    }
  }
  nghttp2_submit_goaway(session_, NGHTTP2_FLAG_NONE,
                        nghttp2_session_get_last_proc_stream_id(session_),
                        NGHTTP2_NO_ERROR, nullptr, 0);
}

bool ServerConnection::Produce(std::string& out, size_t limit) {
  for (;;) {
    while (out.size() < limit) {
      const uint8_t* data = nullptr;
      const ssize_t n = nghttp2_session_mem_send(session_, &data);
      if (n < 0) return false;
      if (n == 0) break;
      out.append(reinterpret_cast<const char*>(data), static_cast<size_t>(n));
    }
    if (out.size() >= limit) return true;
    bool stepped = false;
    for (auto& [id, call] : calls_) {
      if (call->want_step && call->source != nullptr &&
          call->message == nullptr && !call->end.has_value()) {
        Step(*call);
        stepped = true;
      }
    }
    if (!stepped) return true;
  }
}

bool ServerConnection::WantsRead() const {
  return nghttp2_session_want_read(session_) != 0;
}

bool ServerConnection::WantsWrite() const {
  return nghttp2_session_want_write(session_) != 0;
}

}  // namespace gpulet::h2
