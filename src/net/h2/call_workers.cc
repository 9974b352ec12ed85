#include "src/net/h2/call_workers.h"

#include <algorithm>
#include <utility>

#include "absl/strings/str_cat.h"
#include "absl/time/time.h"

namespace gpulet::h2 {

CallWorkers::CallWorkers(std::string name, int threads, size_t max_queued)
    : name_(std::move(name)), max_queued_(max_queued) {
  for (int i = 0; i < std::max(threads, 1); ++i) {
    threads_.emplace_back([this] { Work(); });
  }
  watcher_ = std::jthread([this](std::stop_token) { Watch(); });
}

CallWorkers::~CallWorkers() { Stop(); }

Clock::time_point CallWorkers::Budget(Clock::time_point deadline) {
  const Clock::duration left = deadline - Clock::now();
  const Clock::duration margin =
      std::min<Clock::duration>(left / 4, std::chrono::seconds(1));
  return deadline - std::max<Clock::duration>(margin, Clock::duration::zero());
}

bool CallWorkers::Submit(Clock::time_point deadline, Job job) {
  absl::MutexLock lock(&mu_);
  if (stopping_ || queue_.size() >= max_queued_) return false;
  queue_.push_back({deadline, std::move(job), std::stop_source()});
  return true;
}

void CallWorkers::Work() {
  for (;;) {
    Entry entry;
    {
      absl::MutexLock lock(&mu_);
      auto ready = [this]() ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_) {
        return stopping_ || !queue_.empty();
      };
      mu_.Await(absl::Condition(&ready));
      if (queue_.empty()) return;
      entry = std::move(queue_.front());
      queue_.pop_front();
      // Nothing is registered on the token yet: requesting runs nothing.
      if (stopping_ || entry.deadline <= Clock::now()) {
        entry.stop.request_stop();
      }
      running_.push_back(&entry);
      ++version_;
    }
    entry.job(entry.stop.get_token());
    absl::MutexLock lock(&mu_);
    running_.erase(std::find(running_.begin(), running_.end(), &entry));
    ++version_;
  }
}

// Requests the tokens of running jobs whose deadline passed. The requests
// run the jobs' stop callbacks, so they are made without the lock.
void CallWorkers::Watch() {
  mu_.Lock();
  while (!stopping_) {
    const Clock::time_point now = Clock::now();
    Clock::time_point earliest = Clock::time_point::max();
    std::vector<std::stop_source> due;
    for (Entry* e : running_) {
      if (e->stop.stop_requested()) continue;
      if (e->deadline <= now) {
        due.push_back(e->stop);
      } else {
        earliest = std::min(earliest, e->deadline);
      }
    }
    if (!due.empty()) {
      mu_.Unlock();
      for (std::stop_source& s : due) s.request_stop();
      mu_.Lock();
      continue;
    }
    const int seen = version_;
    auto changed = [this, seen]() ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_) {
      return stopping_ || version_ != seen;
    };
    if (earliest == Clock::time_point::max()) {
      mu_.Await(absl::Condition(&changed));
    } else {
      mu_.AwaitWithTimeout(absl::Condition(&changed),
                           absl::FromChrono(earliest - now));
    }
  }
  mu_.Unlock();
}

void CallWorkers::Stop() {
  std::vector<std::stop_source> running;
  {
    absl::MutexLock lock(&mu_);
    if (stopping_) return;
    stopping_ = true;
    for (Entry* e : running_) running.push_back(e->stop);
  }
  for (std::stop_source& s : running) s.request_stop();
  threads_.clear();  // joins; queued jobs run with a requested token
  watcher_ = std::jthread();
}

AsyncUnaryMethod OnWorkers(CallWorkers& workers, std::string what,
                           CallWork work) {
  auto shared = std::make_shared<const CallWork>(std::move(work));
  return [&workers, what = std::move(what), shared](std::string_view request,
                                                    UnaryResponder responder) {
    auto job = [shared, responder,
                bytes = std::string(request)](std::stop_token stop) {
      responder.Complete((*shared)(bytes, stop));
    };
    if (!workers.Submit(CallWorkers::Budget(responder.deadline()),
                        std::move(job))) {
      responder.Complete(absl::UnavailableError(
          absl::StrCat(what, ": ", workers.max_queued(),
                       " calls already waiting; try again")));
    }
  };
}

}  // namespace gpulet::h2
