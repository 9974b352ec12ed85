// CallScope: the stop token of the kubelet call a thread is answering,
// requested when the call's time is up (its deadline less a margin for the
// answer) or the plugin server stops. The plugin server's workers set it
// around the handlers of a resource whose handlers wait on the network
// (PluginOptions::handlers_wait); such a handler passes CurrentCallStop()
// to what it waits on (the memory-share node agent's API calls), so the
// wait ends in time to answer with an error of its own. The handler
// signatures stay those of every other resource.
//
// Thread safety: per thread; scopes nest.
#pragma once

#include <stop_token>
#include <utility>

namespace gpulet::pluginapi {

namespace internal {
inline thread_local std::stop_token current_call_stop;
}  // namespace internal

// The token of the innermost scope on this thread; outside every scope, a
// token that is never requested.
inline std::stop_token CurrentCallStop() { return internal::current_call_stop; }

class CallScope {
 public:
  explicit CallScope(std::stop_token stop)
      : previous_(std::exchange(internal::current_call_stop, std::move(stop))) {
  }
  ~CallScope() { internal::current_call_stop = std::move(previous_); }
  CallScope(const CallScope&) = delete;
  CallScope& operator=(const CallScope&) = delete;

 private:
  std::stop_token previous_;
};

}  // namespace gpulet::pluginapi
