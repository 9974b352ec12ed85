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

namespace gpulet::h2 {

namespace {

constexpr uint32_t kMaxConcurrentStreams = 100;
constexpr size_t kMaxHeaderBytes = 16 * 1024;

nghttp2_nv Nv(std::string_view name, std::string_view value,
              uint8_t flags = NGHTTP2_NV_FLAG_NONE) {
  return {reinterpret_cast<uint8_t*>(const_cast<char*>(name.data())),
          reinterpret_cast<uint8_t*>(const_cast<char*>(value.data())),
          name.size(), value.size(), flags};
}

constexpr uint8_t kStatic =
    NGHTTP2_NV_FLAG_NO_COPY_NAME | NGHTTP2_NV_FLAG_NO_COPY_VALUE;

}  // namespace

struct ServerConnection::Call {
  int32_t id = 0;
  std::string path, method, content_type, timeout;
  size_t header_bytes = 0;
  std::string body;
  bool request_done = false;  // END_STREAM received
  bool answered = false;      // a response was submitted
  bool finished = false;      // trailers submitted (or trailers-only)
  bool deferred = false;      // nghttp2 waits for resume_data
  bool want_step = false;
  std::optional<Clock::time_point> deadline;
  std::unique_ptr<StreamSource> source;
  std::shared_ptr<AsyncCall> async;  // an asynchronous call not answered yet
  // The message being sent: prefix then body, `offset` over both.
  std::string prefix;
  std::shared_ptr<const std::string> message;
  size_t offset = 0;
  std::optional<absl::Status> end;  // trailers to send once drained
  std::string ended_why;
};

// nghttp2's C callbacks, reaching the connection through user_data.
struct Callbacks {
  static ServerConnection& Self(void* user_data) {
    return *static_cast<ServerConnection*>(user_data);
  }
  static ServerConnection::Call* Find(void* user_data, int32_t id) {
    auto& calls = Self(user_data).calls_;
    auto it = calls.find(id);
    return it == calls.end() ? nullptr : it->second.get();
  }

  static int BeginHeaders(nghttp2_session*, const nghttp2_frame* frame,
                          void* user_data) {
    if (frame->hd.type != NGHTTP2_HEADERS ||
        frame->headers.cat != NGHTTP2_HCAT_REQUEST) {
      return 0;
    }
    auto call = std::make_unique<ServerConnection::Call>();
    call->id = frame->hd.stream_id;
    Self(user_data).calls_[call->id] = std::move(call);
    return 0;
  }

  static int Header(nghttp2_session*, const nghttp2_frame* frame,
                    const uint8_t* name, size_t namelen, const uint8_t* value,
                    size_t valuelen, uint8_t, void* user_data) {
    ServerConnection::Call* call = Find(user_data, frame->hd.stream_id);
    if (call == nullptr) return 0;  // trailers of a request: ignored
    call->header_bytes += namelen + valuelen + 32;
    if (call->header_bytes > kMaxHeaderBytes) {
      return NGHTTP2_ERR_TEMPORAL_CALLBACK_FAILURE;  // resets the stream
    }
    const std::string_view n(reinterpret_cast<const char*>(name), namelen);
    const std::string_view v(reinterpret_cast<const char*>(value), valuelen);
    if (n == ":path") {
      call->path = v;
    } else if (n == ":method") {
      call->method = v;
    } else if (n == "content-type") {
      call->content_type = v;
    } else if (n == "grpc-timeout") {
      call->timeout = v;
    }
    return 0;
  }

  static int Data(nghttp2_session*, uint8_t, int32_t stream_id,
                  const uint8_t* data, size_t len, void* user_data) {
    ServerConnection::Call* call = Find(user_data, stream_id);
    if (call == nullptr || call->answered) return 0;
    if (call->body.size() + len > kMaxMessageSize + kPrefixSize) {
      Self(user_data).End(
          *call,
          absl::ResourceExhaustedError(absl::StrCat(
              "received message larger than max (", kMaxMessageSize, ")")),
          "request too large");
      return 0;
    }
    call->body.append(reinterpret_cast<const char*>(data), len);
    return 0;
  }

  static int Frame(nghttp2_session*, const nghttp2_frame* frame,
                   void* user_data) {
    if (frame->hd.type == NGHTTP2_HEADERS) {
      ServerConnection::Call* call = Find(user_data, frame->hd.stream_id);
      if (call != nullptr && !call->timeout.empty() && !call->deadline) {
        absl::StatusOr<std::chrono::nanoseconds> timeout =
            ParseTimeout(call->timeout);
        if (timeout.ok()) {
          call->deadline =
              Clock::now() +
              std::chrono::duration_cast<Clock::duration>(*timeout);
        }
      }
    }
    if ((frame->hd.type != NGHTTP2_HEADERS && frame->hd.type != NGHTTP2_DATA) ||
        (frame->hd.flags & NGHTTP2_FLAG_END_STREAM) == 0) {
      return 0;
    }
    ServerConnection::Call* call = Find(user_data, frame->hd.stream_id);
    if (call == nullptr || call->request_done) return 0;
    call->request_done = true;
    if (!call->answered) Self(user_data).Dispatch(*call, Clock::now());
    return 0;
  }

  static int StreamClose(nghttp2_session*, int32_t stream_id,
                         uint32_t error_code, void* user_data) {
    Self(user_data).Closed(stream_id, error_code);
    return 0;
  }

  static ssize_t Read(nghttp2_session* session, int32_t stream_id, uint8_t* buf,
                      size_t length, uint32_t* flags,
                      nghttp2_data_source* source, void* user_data) {
    auto* call = static_cast<ServerConnection::Call*>(source->ptr);
    size_t n = 0;
    if (call->message != nullptr) {
      const size_t total = kPrefixSize + call->message->size();
      while (n < length && call->offset < total) {
        const std::string_view part =
            call->offset < kPrefixSize
                ? std::string_view(call->prefix).substr(call->offset)
                : std::string_view(*call->message)
                      .substr(call->offset - kPrefixSize);
        const size_t take = std::min(length - n, part.size());
        std::memcpy(buf + n, part.data(), take);
        n += take;
        call->offset += take;
      }
      if (call->offset == total) {
        call->message.reset();
        call->want_step = call->source != nullptr;
      }
    }
    if (call->message == nullptr && call->end.has_value()) {
      *flags |= NGHTTP2_DATA_FLAG_EOF | NGHTTP2_DATA_FLAG_NO_END_STREAM;
      Self(user_data).SubmitTrailers(session, stream_id, *call);
      return static_cast<ssize_t>(n);
    }
    if (n == 0) {
      call->deferred = true;
      return NGHTTP2_ERR_DEFERRED;
    }
    return static_cast<ssize_t>(n);
  }
};

ServerConnection::ServerConnection(const Service& service,
                                   std::shared_ptr<LoopWaker> waker)
    : service_(service), waker_(std::move(waker)) {
  static nghttp2_session_callbacks* const callbacks = [] {
    nghttp2_session_callbacks* cb = nullptr;
    nghttp2_session_callbacks_new(&cb);
    nghttp2_session_callbacks_set_on_begin_headers_callback(
        cb, Callbacks::BeginHeaders);
    nghttp2_session_callbacks_set_on_header_callback(cb, Callbacks::Header);
    nghttp2_session_callbacks_set_on_data_chunk_recv_callback(cb,
                                                              Callbacks::Data);
    nghttp2_session_callbacks_set_on_frame_recv_callback(cb, Callbacks::Frame);
    nghttp2_session_callbacks_set_on_stream_close_callback(
        cb, Callbacks::StreamClose);
    return cb;
  }();
  nghttp2_session_server_new(&session_, callbacks, this);
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
