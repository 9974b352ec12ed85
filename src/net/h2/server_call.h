// The per-stream state of a ServerConnection and the nghttp2 callbacks that
// fill it, shared by server_connection.cc and server_callbacks.cc only (not
// part of the h2 interface). Everything here runs on the connection's loop
// thread.
#ifndef GPULET_NET_H2_SERVER_CALL_H_
#define GPULET_NET_H2_SERVER_CALL_H_

#include <nghttp2/nghttp2.h>

#include <cstddef>
#include <cstdint>
#include <memory>
#include <optional>
#include <string>

#include "absl/status/status.h"
#include "src/net/h2/async_call.h"
#include "src/net/h2/server_connection.h"

namespace gpulet::h2 {

// The largest header block a request may carry (also advertised as
// SETTINGS_MAX_HEADER_LIST_SIZE); a larger one resets the stream.
inline constexpr size_t kMaxHeaderBytes = 16 * 1024;

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
  // The callback table every server session uses (built once).
  static const nghttp2_session_callbacks* Table();

  static int BeginHeaders(nghttp2_session*, const nghttp2_frame* frame,
                          void* user_data);
  static int Header(nghttp2_session*, const nghttp2_frame* frame,
                    const uint8_t* name, size_t namelen, const uint8_t* value,
                    size_t valuelen, uint8_t, void* user_data);
  static int Data(nghttp2_session*, uint8_t, int32_t stream_id,
                  const uint8_t* data, size_t len, void* user_data);
  static int Frame(nghttp2_session*, const nghttp2_frame* frame,
                   void* user_data);
  static int StreamClose(nghttp2_session*, int32_t stream_id,
                         uint32_t error_code, void* user_data);
  static ssize_t Read(nghttp2_session* session, int32_t stream_id, uint8_t* buf,
                      size_t length, uint32_t* flags,
                      nghttp2_data_source* source, void* user_data);

 private:
  static ServerConnection& Self(void* user_data);
  static ServerConnection::Call* Find(void* user_data, int32_t id);
};

}  // namespace gpulet::h2

#endif  // GPULET_NET_H2_SERVER_CALL_H_
