// How the interpreter runs the warps of one block: each warp on a thread of its own, exactly one
// of them running at a time, so that a warp can wait (at a barrier, on an mbarrier, for the
// other warps of its warpgroup) in the middle of evaluating anything while the others go on.
// A warp runs until it must wait; the baton then passes to the next warp, in warp order, whose
// wait is over. The order depends only on the program, so a run is deterministic. When no warp
// can go on, the block is deadlocked: every waiting warp says what it waits for.
// Internal to the interpreter (threadir/Interpreter*.cpp).
#pragma once

#include <condition_variable>
#include <functional>
#include <memory>
#include <mutex>
#include <string>
#include <vector>

namespace tilec::thir::interp {

class WarpScheduler {
public:
  /// Runs body(w) for each warp w in [0, warps) until every one returns, or one throws Stop or
  /// the warps deadlock; then rethrows that as Stop.
  void run(int warps, const std::function<void(int)> &body);
  /// Called by the running warp w: returns once ready() holds, running other warps meanwhile.
  /// `what` says what the warp waits for, in a deadlock's report.
  void waitUntil(int w, const std::function<bool()> &ready,
                 const std::function<std::string()> &what);

  /// Called by the running warp w: lets the next warp that can go on run first (w itself when
  /// no other can).
  void yield(int w);

private:
  struct Warp {
    bool done = false;
    const std::function<bool()> *ready = nullptr;
    const std::function<std::string()> *what = nullptr;
  };
  /// Under the lock: the next warp after `w` that can go on, or -1.
  int next(int w) const;
  /// Under the lock: hands the baton to the next warp, or reports a deadlock.
  void pass(int w);
  void abort(std::string error);

  std::mutex mutex_;
  /// Warp w sleeps on turns_[w] until the baton comes to it or the block stops.
  std::unique_ptr<std::condition_variable[]> turns_;
  std::vector<Warp> warps_;
  int running_ = -1;
  bool aborted_ = false;
  std::string error_;
};

} // namespace tilec::thir::interp
