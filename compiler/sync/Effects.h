// What one thread-IR statement does to shared memory, as the synchronization passes see it.
#pragma once

#include "threadir/ThreadIR.h"

#include <unordered_map>
#include <utility>
#include <vector>

namespace tilec::sync {

/// A set of shared-memory bytes: disjoint intervals, or every byte (an access without a region).
/// Like Triton's Membar with its allocation slices, accesses conflict only where sets overlap.
class Regions {
public:
  static Regions everything() {
    Regions r;
    r.all_ = true;
    return r;
  }
  /// Adds an access's region (none: every byte).
  void add(const std::optional<thir::SmemRegion> &r);
  bool empty() const { return !all_ && intervals_.empty(); }
  bool overlaps(const Regions &o) const;
  Regions &operator|=(const Regions &o);
  friend bool operator==(const Regions &, const Regions &) = default;

private:
  void insert(int64_t begin, int64_t end);
  bool all_ = false;
  std::vector<std::pair<int64_t, int64_t>> intervals_; // sorted, disjoint, not adjacent
};

/// The shared-memory accesses of a statement's own operands, or (summarize) of everything it
/// runs, nested bodies included.
struct Effects {
  Regions read;            // loads (ld.shared, ldmatrix) and wgmma's async-proxy reads
  Regions write;           // generic-proxy stores other threads may read without a protocol
  Regions atomic;          // atomic read-modify-writes: unordered among themselves
  bool asyncRead = false;  // some of `read` by the async proxy (wgmma through descriptors)
  bool landed = false;     // cp.async groups completing (cp.async.wait): generic writes
  bool aheadWrite = false; // a pipeline's stores ahead (ordered by its protocol)
  bool publish = false;    // an mbarrier arrival: data handed to threads it does not see
  Effects &operator|=(const Effects &o);
};

/// Memoizes expression effects by node: expressions are DAGs, often deeply shared.
class EffectsCache {
public:
  Effects of(const thir::Expr &e);
  /// The statement's own operands and kind, not its nested bodies.
  Effects ofStmt(const thir::Stmt &s);
  /// Everything `body` runs, nested bodies included; with `untilBarrier`, only what runs before
  /// the first barrier among its own statements.
  Effects summarize(const thir::Body &body, bool untilBarrier = false);

private:
  std::unordered_map<const thir::Node *, Effects> exprs_;
};

/// The state at the top of a loop body: the smallest `top` with top == entry | body(top), where
/// `body` walks one iteration from a state (the entry, joined with what iterations leave).
template <class State, class Body> State loopFixpoint(State entry, Body body) {
  State top = entry;
  for (;;) {
    State next = entry | body(top);
    if (next == top)
      return top;
    top = next;
  }
}

} // namespace tilec::sync
