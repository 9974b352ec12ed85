// CallWorkers: a few threads of their own that run the work of
// asynchronous calls (service.h) off the server's loop: a handler that
// waits on the network submits a job and returns at once.
//
// Each job runs with a stop token that is requested when the job's
// deadline passes (its call's deadline less a margin, Budget()) or when
// the workers stop, so work that honours it (the API client's requests
// do) gives up in time to answer with an error of its own before the
// server answers DEADLINE_EXCEEDED. A job still queued at its deadline
// runs with the token already requested. Bounds: `threads` jobs at once,
// `max_queued` waiting; Submit refuses past that.
//
// Stop (and the destructor) requests every token, runs the jobs still
// queued with a requested token (so each completes its responder, which
// the stopped server drops) and joins the threads.
//
// Thread safety: Submit from any thread; Stop from the owner, once the
// server whose calls submit is stopped.
#pragma once

#include <cstddef>
#include <deque>
#include <functional>
#include <stop_token>
#include <string>
#include <thread>
#include <vector>

#include "absl/base/thread_annotations.h"
#include "absl/status/statusor.h"
#include "absl/synchronization/mutex.h"
#include "src/net/h2/service.h"

namespace gpulet::h2 {

class CallWorkers {
 public:
  using Job = std::function<void(std::stop_token stop)>;

  CallWorkers(std::string name, int threads, size_t max_queued);
  ~CallWorkers();  // Stop()
  CallWorkers(const CallWorkers&) = delete;
  CallWorkers& operator=(const CallWorkers&) = delete;

  // The deadline a job of a call due at `deadline` gets: a margin (a
  // quarter of the time left, at most a second) before it, for the answer
  // to reach the client.
  static Clock::time_point Budget(Clock::time_point deadline);
  // Queues `job` to run with a token requested at `deadline`. False (the
  // job is dropped, not run) when `max_queued` jobs wait or after Stop.
  bool Submit(Clock::time_point deadline, Job job);
  void Stop();
  size_t max_queued() const { return max_queued_; }

 private:
  struct Entry {
    Clock::time_point deadline;
    Job job;
    std::stop_source stop;
  };
  void Work();
  void Watch();

  const std::string name_;
  const size_t max_queued_;
  absl::Mutex mu_;
  std::deque<Entry> queue_ ABSL_GUARDED_BY(mu_);
  // The running jobs' deadlines and tokens, one slot per thread.
  std::vector<Entry*> running_ ABSL_GUARDED_BY(mu_);
  bool stopping_ ABSL_GUARDED_BY(mu_) = false;
  int version_ ABSL_GUARDED_BY(mu_) = 0;  // changes wake the watcher
  std::vector<std::jthread> threads_;
  std::jthread watcher_;
};

// The work of an asynchronous method: the request's answer, computed on a
// worker; `stop` is requested when the call's time is up.
using CallWork = std::function<absl::StatusOr<std::string>(
    std::string_view request, std::stop_token stop)>;

// An asynchronous method running `work` on `workers` (which outlive the
// server's run) with the call's Budget; a call they cannot take is
// UNAVAILABLE "<what>: <n> calls already waiting; try again".
AsyncUnaryMethod OnWorkers(CallWorkers& workers, std::string what,
                           CallWork work);

}  // namespace gpulet::h2
