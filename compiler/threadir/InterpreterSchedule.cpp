#include "threadir/InterpreterSchedule.h"

#include "threadir/InterpreterValue.h"

#include <fmt/format.h>

#include <thread>

namespace tilec::thir::interp {

namespace {

/// Unwinds a warp whose block another warp stopped; carries no error of its own.
struct Aborted {};

} // namespace

int WarpScheduler::next(int w) const {
  const int n = static_cast<int>(warps_.size());
  for (int i = 1; i <= n; ++i) {
    const Warp &v = warps_[static_cast<size_t>((w + i) % n)];
    if (!v.done && (!v.ready || (*v.ready)()))
      return (w + i) % n;
  }
  return -1;
}

void WarpScheduler::pass(int w) {
  int v = next(w);
  if (v >= 0) {
    running_ = v;
  } else {
    bool all = true;
    std::string report;
    for (size_t i = 0; i < warps_.size(); ++i)
      if (!warps_[i].done) {
        all = false;
        report += fmt::format("; warp {} waits for {}", i,
                              warps_[i].what ? (*warps_[i].what)() : "its turn");
      }
    if (all) {
      running_ = -1;
    } else if (!aborted_) {
      aborted_ = true;
      error_ = "deadlock" + report;
    }
  }
  if (aborted_)
    for (size_t i = 0; i < warps_.size(); ++i)
      turns_[i].notify_one();
  else if (running_ >= 0)
    turns_[static_cast<size_t>(running_)].notify_one();
}

void WarpScheduler::abort(std::string error) {
  std::lock_guard<std::mutex> lock(mutex_);
  if (!aborted_) {
    aborted_ = true;
    error_ = std::move(error);
  }
  for (size_t i = 0; i < warps_.size(); ++i)
    turns_[i].notify_one();
}

void WarpScheduler::waitUntil(int w, const std::function<bool()> &ready,
                              const std::function<std::string()> &what) {
  if (ready())
    return;
  std::unique_lock<std::mutex> lock(mutex_);
  Warp &me = warps_[static_cast<size_t>(w)];
  me.ready = &ready;
  me.what = &what;
  pass(w);
  turns_[static_cast<size_t>(w)].wait(lock, [&] { return running_ == w || aborted_; });
  me.ready = nullptr;
  me.what = nullptr;
  if (aborted_)
    throw Aborted{};
}

void WarpScheduler::yield(int w) {
  std::unique_lock<std::mutex> lock(mutex_);
  pass(w);
  turns_[static_cast<size_t>(w)].wait(lock, [&] { return running_ == w || aborted_; });
  if (aborted_)
    throw Aborted{};
}

void WarpScheduler::run(int warps, const std::function<void(int)> &body) {
  warps_.assign(static_cast<size_t>(warps), Warp{});
  turns_ = std::make_unique<std::condition_variable[]>(static_cast<size_t>(warps));
  running_ = 0;
  aborted_ = false;
  error_.clear();
  std::vector<std::thread> threads;
  threads.reserve(static_cast<size_t>(warps));
  for (int w = 0; w < warps; ++w)
    threads.emplace_back([this, w, &body] {
      {
        std::unique_lock<std::mutex> lock(mutex_);
        turns_[static_cast<size_t>(w)].wait(lock, [&] { return running_ == w || aborted_; });
        if (aborted_)
          return;
      }
      try {
        body(w);
      } catch (const Aborted &) {
        return;
      } catch (const std::exception &e) {
        abort(e.what());
        return;
      }
      std::lock_guard<std::mutex> lock(mutex_);
      warps_[static_cast<size_t>(w)].done = true;
      pass(w);
    });
  for (std::thread &t : threads)
    t.join();
  if (aborted_)
    throw Stop(error_);
}

} // namespace tilec::thir::interp
