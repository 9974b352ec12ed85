// AsyncCall: one RPC served on a DevicePluginService's completion queue
// (gRPC's async API). Every operation the call starts carries one of the
// call's own Tags; the service's queue thread hands the tag back to the
// call when the operation completes.
//
// Ownership: the service owns every call from its creation to the end
// Proceed() announces, or to the queue's shutdown. Thread safety: Proceed
// runs on the queue thread only.
#pragma once

namespace gpulet::plugin {

class AsyncCall;

// What gRPC's completion queue returns: the call and which of its
// operations completed.
struct AsyncTag {
  AsyncCall* call;
  int op;
};

class AsyncCall {
 public:
  virtual ~AsyncCall() = default;
  // Asks gRPC for the next call of this method (the first operation).
  virtual void Request() = 0;
  // The operation `op` completed (`ok` as gRPC reports it). Returns true
  // when nothing of the call is pending any more: the service destroys it.
  virtual bool Proceed(int op, bool ok) = 0;
};

}  // namespace gpulet::plugin
