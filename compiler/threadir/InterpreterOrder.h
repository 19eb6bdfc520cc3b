// Whether a warp's read of shared memory that a TMA load wrote is ordered after that load, in
// the interpreter. TMA loads complete as they are issued there, so a read that came too early
// would see the right data; instead each warp keeps what it knows: for each mbarrier, how many
// of its phases it knows complete (it waited for them, or learned so from a warp that did,
// through an mbarrier it waited on or a named barrier they both passed, as release/acquire
// orders them). A read of bytes whose TMA load completes in a phase the reading warp does not
// know complete is an error. Internal to the interpreter (threadir/Interpreter*.cpp).
#pragma once

#include <cstdint>
#include <map>
#include <string>
#include <vector>

namespace tilec::thir::interp {

class AsyncWriteOrder {
public:
  void reset(int warps);
  /// A TMA load into shared bytes [begin, end) completing in phase `phase` of the mbarrier at
  /// `barrier`; it replaces what loads wrote there before.
  void tmaWrite(int64_t begin, int64_t end, int64_t barrier, int64_t phase);
  /// A generic write of [begin, end): no TMA load's data is there any more.
  void forget(int64_t begin, int64_t end);
  /// An arrival of warp `warp` on the mbarrier at `barrier` releases what the warp knows.
  void arrive(int warp, int64_t barrier);
  /// The mbarrier at `barrier` completed a phase: `phases` of them are complete now.
  void phaseCompleted(int64_t barrier, int64_t phases);
  /// Warp `warp` waited on the mbarrier at `barrier` while `phases` of its phases were complete.
  void waited(int warp, int64_t barrier, int64_t phases);
  /// `warps` passed a named barrier together: each knows what any of them knew.
  void barrierPassed(const std::vector<int> &warps);
  /// An error message where warp `warp` may not read bytes [begin, end) yet, else empty.
  std::string checkRead(int warp, int64_t begin, int64_t end) const;

private:
  using Knowledge = std::map<int64_t, int64_t>; // mbarrier -> phases known complete
  static void merge(Knowledge &into, const Knowledge &from);
  struct Write {
    int64_t begin, end, barrier, phase;
  };
  struct Released {
    Knowledge pending, completed; // what arrivals released in the open phase; in the last one
  };
  std::vector<Knowledge> warps_;
  std::map<int64_t, Released> released_;
  std::vector<Write> writes_;
};

/// Shared-memory writes of the generic proxy (stores, cp.async, atomics) that the async proxy
/// (wgmma) may read only after the writing thread's fence.proxy.async (PTX ISA 9.7.15.4; a
/// barrier after the fence then orders the read): the interpreter's memory is coherent, so
/// without this check a missing fence would go unseen. Kept per warp.
class ProxyFences {
public:
  void reset(int warps);
  void written(int warp, int64_t begin, int64_t end);
  void fenced(int warp);
  /// An error message where an async-proxy read of [begin, end) meets a write not fenced yet.
  std::string checkAsyncRead(int64_t begin, int64_t end) const;

private:
  std::vector<std::map<int64_t, int64_t>> unfenced_; // per warp: disjoint [begin, end)
};

} // namespace tilec::thir::interp
