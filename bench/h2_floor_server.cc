// h2_floor_server: a reference server of plugin_peers_bench. It serves the
// two v1beta1.DevicePlugin calls the benchmark times (GetDevicePluginOptions,
// Allocate) as gRPC over HTTP/2 on Debian's libnghttp2, in one thread: an
// epoll loop, handlers run inline, protobuf messages from gpulet's generated
// code, constant answers (Allocate: one fixed environment variable per
// container, as grpc_floor_server). So it is the floor of a plugin serving
// the kubelet on its own HTTP/2 transport instead of gRPC C++. Any other
// method is answered UNIMPLEMENTED.
//
//   h2_floor_server <socket-path>
// Prints "ready" once listening; runs until SIGTERM or SIGINT.
#include <nghttp2/nghttp2.h>
#include <signal.h>
#include <sys/epoll.h>
#include <sys/signalfd.h>
#include <sys/socket.h>
#include <sys/un.h>
#include <unistd.h>

#include <cstdint>
#include <cstdio>
#include <cstring>
#include <map>
#include <memory>
#include <string>

#include "deviceplugin/v1beta1/api.pb.h"

namespace {

struct Stream {
  std::string path;
  std::string body;   // gRPC-framed request bytes
  std::string reply;  // gRPC-framed response bytes
  size_t sent = 0;
  const char* status = "0";
};

struct Connection {
  int fd = -1;
  nghttp2_session* session = nullptr;
  std::map<int32_t, std::unique_ptr<Stream>> streams;
  ~Connection() {
    if (session != nullptr) nghttp2_session_del(session);
    if (fd >= 0) ::close(fd);
  }
};

nghttp2_nv Header(const char* name, const char* value) {
  return {reinterpret_cast<uint8_t*>(const_cast<char*>(name)),
          reinterpret_cast<uint8_t*>(const_cast<char*>(value)),
          std::strlen(name), std::strlen(value),
          NGHTTP2_NV_FLAG_NO_COPY_NAME | NGHTTP2_NV_FLAG_NO_COPY_VALUE};
}

std::string Frame(const google::protobuf::MessageLite& message) {
  const size_t size = message.ByteSizeLong();
  std::string out(5 + size, '\0');
  out[1] = static_cast<char>(size >> 24);
  out[2] = static_cast<char>(size >> 16);
  out[3] = static_cast<char>(size >> 8);
  out[4] = static_cast<char>(size);
  message.SerializeToArray(out.data() + 5, static_cast<int>(size));
  return out;
}

ssize_t ReadReply(nghttp2_session* session, int32_t stream_id, uint8_t* buf,
                  size_t length, uint32_t* flags, nghttp2_data_source* source,
                  void*) {
  auto* stream = static_cast<Stream*>(source->ptr);
  const size_t n = std::min(length, stream->reply.size() - stream->sent);
  std::memcpy(buf, stream->reply.data() + stream->sent, n);
  stream->sent += n;
  if (stream->sent == stream->reply.size()) {
    *flags |= NGHTTP2_DATA_FLAG_EOF | NGHTTP2_DATA_FLAG_NO_END_STREAM;
    nghttp2_nv trailer = Header("grpc-status", stream->status);
    nghttp2_submit_trailer(session, stream_id, &trailer, 1);
  }
  return static_cast<ssize_t>(n);
}

void Answer(nghttp2_session* session, int32_t stream_id, Stream& stream) {
  const std::string_view body(stream.body);
  if (stream.path == "/v1beta1.DevicePlugin/GetDevicePluginOptions") {
    stream.reply = Frame(v1beta1::DevicePluginOptions());
  } else if (stream.path == "/v1beta1.DevicePlugin/Allocate" &&
             body.size() >= 5) {
    v1beta1::AllocateRequest request;
    v1beta1::AllocateResponse response;
    if (request.ParseFromArray(body.data() + 5,
                               static_cast<int>(body.size() - 5))) {
      for (int i = 0; i < request.container_requests_size(); ++i) {
        (*response.add_container_responses()
              ->mutable_envs())["NVIDIA_VISIBLE_DEVICES"] = "all";
      }
    }
    stream.reply = Frame(response);
  } else {
    stream.status = "12";
  }
  const nghttp2_nv headers[] = {Header(":status", "200"),
                                Header("content-type", "application/grpc")};
  nghttp2_data_provider provider{};
  provider.source.ptr = &stream;
  provider.read_callback = ReadReply;
  nghttp2_submit_response(session, stream_id, headers, 2, &provider);
}

int OnBeginHeaders(nghttp2_session*, const nghttp2_frame* frame, void* data) {
  auto* c = static_cast<Connection*>(data);
  if (frame->hd.type == NGHTTP2_HEADERS &&
      frame->headers.cat == NGHTTP2_HCAT_REQUEST) {
    c->streams[frame->hd.stream_id] = std::make_unique<Stream>();
  }
  return 0;
}

int OnHeader(nghttp2_session*, const nghttp2_frame* frame, const uint8_t* name,
             size_t namelen, const uint8_t* value, size_t valuelen, uint8_t,
             void* data) {
  auto* c = static_cast<Connection*>(data);
  auto it = c->streams.find(frame->hd.stream_id);
  if (it != c->streams.end() && namelen == 5 &&
      std::memcmp(name, ":path", 5) == 0) {
    it->second->path.assign(reinterpret_cast<const char*>(value), valuelen);
  }
  return 0;
}

int OnData(nghttp2_session*, uint8_t, int32_t stream_id, const uint8_t* bytes,
           size_t len, void* data) {
  auto* c = static_cast<Connection*>(data);
  auto it = c->streams.find(stream_id);
  if (it != c->streams.end()) {
    it->second->body.append(reinterpret_cast<const char*>(bytes), len);
  }
  return 0;
}

int OnFrame(nghttp2_session* session, const nghttp2_frame* frame, void* data) {
  auto* c = static_cast<Connection*>(data);
  if ((frame->hd.flags & NGHTTP2_FLAG_END_STREAM) == 0 ||
      (frame->hd.type != NGHTTP2_HEADERS && frame->hd.type != NGHTTP2_DATA)) {
    return 0;
  }
  auto it = c->streams.find(frame->hd.stream_id);
  if (it != c->streams.end()) Answer(session, frame->hd.stream_id, *it->second);
  return 0;
}

int OnClose(nghttp2_session*, int32_t stream_id, uint32_t, void* data) {
  static_cast<Connection*>(data)->streams.erase(stream_id);
  return 0;
}

nghttp2_session_callbacks* Callbacks() {
  static nghttp2_session_callbacks* callbacks = [] {
    nghttp2_session_callbacks* cb = nullptr;
    nghttp2_session_callbacks_new(&cb);
    nghttp2_session_callbacks_set_on_begin_headers_callback(cb, OnBeginHeaders);
    nghttp2_session_callbacks_set_on_header_callback(cb, OnHeader);
    nghttp2_session_callbacks_set_on_data_chunk_recv_callback(cb, OnData);
    nghttp2_session_callbacks_set_on_frame_recv_callback(cb, OnFrame);
    nghttp2_session_callbacks_set_on_stream_close_callback(cb, OnClose);
    return cb;
  }();
  return callbacks;
}

// Flushes everything nghttp2 has queued in one write; false when the
// connection is done.
bool Flush(Connection& c) {
  std::string out;
  for (;;) {
    const uint8_t* bytes = nullptr;
    const ssize_t n = nghttp2_session_mem_send(c.session, &bytes);
    if (n < 0) return false;
    if (n == 0) break;
    out.append(reinterpret_cast<const char*>(bytes), static_cast<size_t>(n));
  }
  for (size_t done = 0; done < out.size();) {
    const ssize_t n = ::write(c.fd, out.data() + done, out.size() - done);
    if (n <= 0) return false;
    done += static_cast<size_t>(n);
  }
  return nghttp2_session_want_read(c.session) != 0 ||
         nghttp2_session_want_write(c.session) != 0;
}

bool Receive(Connection& c) {
  uint8_t buffer[16384];
  const ssize_t n = ::read(c.fd, buffer, sizeof(buffer));
  if (n <= 0) return false;
  if (nghttp2_session_mem_recv(c.session, buffer, static_cast<size_t>(n)) < 0) {
    return false;
  }
  return Flush(c);
}

}  // namespace

int main(int argc, char** argv) {
  sockaddr_un addr{};
  if (argc != 2 || std::strlen(argv[1]) >= sizeof(addr.sun_path)) {
    std::fputs("usage: h2_floor_server <socket-path> (< 108 bytes)\n", stderr);
    return 2;
  }
  sigset_t stop_signals;
  sigemptyset(&stop_signals);
  sigaddset(&stop_signals, SIGTERM);
  sigaddset(&stop_signals, SIGINT);
  sigprocmask(SIG_BLOCK, &stop_signals, nullptr);
  const int signals = signalfd(-1, &stop_signals, SFD_CLOEXEC);
  addr.sun_family = AF_UNIX;
  std::strcpy(addr.sun_path, argv[1]);
  ::unlink(argv[1]);
  const int listener = ::socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0);
  const int epoll = epoll_create1(EPOLL_CLOEXEC);
  if (signals < 0 || listener < 0 || epoll < 0 ||
      ::bind(listener, reinterpret_cast<sockaddr*>(&addr), sizeof(addr)) != 0 ||
      ::listen(listener, 16) != 0) {
    std::perror("h2_floor_server");
    return 1;
  }
  epoll_event event{};
  event.events = EPOLLIN;
  event.data.ptr = nullptr;
  epoll_ctl(epoll, EPOLL_CTL_ADD, listener, &event);
  Connection stop_marker;
  event.data.ptr = &stop_marker;
  epoll_ctl(epoll, EPOLL_CTL_ADD, signals, &event);
  std::printf("ready\n");
  std::fflush(stdout);
  nghttp2_settings_entry settings[] = {
      {NGHTTP2_SETTINGS_MAX_CONCURRENT_STREAMS, 100}};
  std::map<Connection*, std::unique_ptr<Connection>> connections;
  for (;;) {
    epoll_event ready[16];
    const int n = epoll_wait(epoll, ready, 16, -1);
    for (int i = 0; i < n; ++i) {
      auto* c = static_cast<Connection*>(ready[i].data.ptr);
      if (c == &stop_marker) {
        ::unlink(argv[1]);
        return 0;
      }
      if (c == nullptr) {
        auto fresh = std::make_unique<Connection>();
        fresh->fd = ::accept4(listener, nullptr, nullptr, SOCK_CLOEXEC);
        if (fresh->fd < 0) continue;
        nghttp2_session_server_new(&fresh->session, Callbacks(), fresh.get());
        nghttp2_submit_settings(fresh->session, NGHTTP2_FLAG_NONE, settings, 1);
        event.data.ptr = fresh.get();
        epoll_ctl(epoll, EPOLL_CTL_ADD, fresh->fd, &event);
        if (!Flush(*fresh)) continue;
        connections[fresh.get()] = std::move(fresh);
      } else if (!Receive(*c)) {
        epoll_ctl(epoll, EPOLL_CTL_DEL, c->fd, nullptr);
        connections.erase(c);
      }
    }
  }
}
