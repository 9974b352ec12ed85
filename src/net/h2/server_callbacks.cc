#include <nghttp2/nghttp2.h>

#include <algorithm>
#include <chrono>
#include <cstring>
#include <string_view>

#include "absl/status/statusor.h"
#include "absl/strings/str_cat.h"
#include "src/net/h2/grpc_wire.h"
#include "src/net/h2/server_call.h"

namespace gpulet::h2 {

const nghttp2_session_callbacks* Callbacks::Table() {
  static nghttp2_session_callbacks* const callbacks = [] {
    nghttp2_session_callbacks* cb = nullptr;
    nghttp2_session_callbacks_new(&cb);
    nghttp2_session_callbacks_set_on_begin_headers_callback(cb, BeginHeaders);
    nghttp2_session_callbacks_set_on_header_callback(cb, Header);
    nghttp2_session_callbacks_set_on_data_chunk_recv_callback(cb, Data);
    nghttp2_session_callbacks_set_on_frame_recv_callback(cb, Frame);
    nghttp2_session_callbacks_set_on_stream_close_callback(cb, StreamClose);
    return cb;
  }();
  return callbacks;
}

ServerConnection& Callbacks::Self(void* user_data) {
  return *static_cast<ServerConnection*>(user_data);
}
ServerConnection::Call* Callbacks::Find(void* user_data, int32_t id) {
  auto& calls = Self(user_data).calls_;
  auto it = calls.find(id);
  return it == calls.end() ? nullptr : it->second.get();
}

int Callbacks::BeginHeaders(nghttp2_session*, const nghttp2_frame* frame,
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

int Callbacks::Header(nghttp2_session*, const nghttp2_frame* frame,
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

int Callbacks::Data(nghttp2_session*, uint8_t, int32_t stream_id,
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

int Callbacks::Frame(nghttp2_session*, const nghttp2_frame* frame,
                     void* user_data) {
  if (frame->hd.type == NGHTTP2_HEADERS) {
    ServerConnection::Call* call = Find(user_data, frame->hd.stream_id);
    if (call != nullptr && !call->timeout.empty() && !call->deadline) {
      absl::StatusOr<std::chrono::nanoseconds> timeout =
          ParseTimeout(call->timeout);
      if (timeout.ok()) {
        call->deadline = Clock::now() +
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

int Callbacks::StreamClose(nghttp2_session*, int32_t stream_id,
                           uint32_t error_code, void* user_data) {
  Self(user_data).Closed(stream_id, error_code);
  return 0;
}

ssize_t Callbacks::Read(nghttp2_session* session, int32_t stream_id,
                        uint8_t* buf, size_t length, uint32_t* flags,
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

}  // namespace gpulet::h2
