// What the warps of one block share in the interpreter: shared memory, the named barriers
// (bar.sync / bar.arrive, counted in threads, a warp arriving as a whole), the mbarriers (phase,
// pending arrivals, transaction bytes: PTX ISA 9.7.13.15, cookbook 5) and the meeting point of a
// warpgroup's four warps at a wgmma. Waits go through the block's WarpScheduler, so a barrier
// that can never complete is reported as a deadlock naming what each warp waits for.
// Internal to the interpreter (threadir/Interpreter*.cpp).
#pragma once

#include "threadir/InterpreterHopper.h"
#include "threadir/InterpreterOrder.h"
#include "threadir/InterpreterSchedule.h"

#include <array>
#include <map>

namespace tilec::thir::interp {

/// Where the kernel's dynamic shared memory starts in the shared window (what SharedAddress
/// adds): 1024-byte aligned, as swizzled operands need, and not 0, so that an address used as
/// an offset (or the reverse) shows.
inline constexpr int64_t kSharedWindowBase = 1024;

class Block {
public:
  std::array<int64_t, 3> index{0, 0, 0}, grid{1, 1, 1};
  WarpScheduler scheduler;

  /// A fresh block of `warps` warps: shared memory poisoned, no barrier or mbarrier state.
  void reset(int64_t sharedBytes, int threads, int warps, int warpgroups);
  SharedView shared() {
    return {smem_.data(), static_cast<int64_t>(smem_.size()), kSharedWindowBase};
  }
  /// A store by warp `warp` (the generic proxy) of `n` bytes at `offset`: checked against the
  /// mbarriers it would overwrite.
  uint8_t *store(int warp, int64_t offset, int64_t n);
  /// fence.proxy.async in warp `warp`: its stores so far are visible to wgmma.
  void proxyFence(int warp) { fences_.fenced(warp); }
  /// A read by warp `warp` of `n` bytes at `offset`: checked against TMA loads it does not know
  /// complete (InterpreterOrder.h).
  void checkRead(int warp, int64_t offset, int64_t n) const;
  /// A TMA load wrote [offset, offset + n), completing on the mbarrier at `barrier`.
  void tmaWritten(int64_t offset, int64_t n, int64_t barrier);

  /// bar.arrive of warp `warp`, `count` threads, at barrier `id` of `threads` (0: the whole
  /// block).
  void barrierArrive(int warp, int id, int threads, int count);
  /// bar.sync: arrives, then waits (as warp `warp`) until the barrier completes.
  void barrierSync(int warp, int id, int threads, int count);
  /// A warp of `count` threads returned: whole-block barriers no longer wait for it.
  void warpReturned(int count);

  void mbarrierInit(int64_t offset, int64_t count);
  /// One thread's arrival (of warp `warp`), after expecting `txBytes` more bytes of
  /// transactions.
  void mbarrierArrive(int warp, int64_t offset, int64_t txBytes);
  /// An asynchronous copy completed `bytes` of transactions.
  void mbarrierCompleteTx(int64_t offset, int64_t bytes);
  /// Waits (as warp `warp`) until, for every (offset, parity), the phase of that parity has
  /// completed (try_wait.parity's rule: parity 1 passes on a fresh barrier).
  void mbarrierWait(int warp, const std::vector<std::pair<int64_t, int64_t>> &waits);

  /// Warp `warp` of warpgroup `group` has written its 32 threads' operands of wgmma `node` into
  /// wgmmaSlot(group); the last of the four warps to meet runs the group. Returns once it ran,
  /// the results in wgmmaSlot(group).acc.
  WgmmaGroup &wgmmaSlot(int group) { return wgmma_[static_cast<size_t>(group)].group; }
  void wgmmaMeet(int warp, int group, const Node *node, const Wgmma &w);
  /// wgmma.wait_group `pending` in warpgroup `group`: its groups but the last `pending` have
  /// completed. Until then the shared bytes they read may not be written (the interpreter runs a
  /// group as it is issued, so such a write would go unseen otherwise): `store` and
  /// `checkWrite` report one as an error.
  void wgmmaRetire(int group, int pending);
  void checkWrite(int64_t offset, int64_t n, const char *what) const;

private:
  struct NamedBarrier {
    int threads = 0, arrived = 0;
    uint64_t generation = 0;
    std::vector<int> warps; // arrived in this generation
  };
  struct Mbarrier {
    int64_t count = 0, pending = 0, tx = 0, phase = 0;
  };
  struct WgmmaMeeting {
    const Node *node = nullptr;
    int arrived = 0;
    uint64_t generation = 0;
    WgmmaGroup group;
    /// What each group in flight reads, oldest first.
    std::vector<std::vector<ByteRange>> inFlight;
  };
  void completeIfDue(NamedBarrier &b);
  Mbarrier &mbarrier(int64_t offset, const char *what);
  void completeIfDue(int64_t offset, Mbarrier &b);

  std::vector<uint8_t> smem_;
  int liveThreads_ = 0;
  std::map<int, NamedBarrier> barriers_;
  std::map<int64_t, Mbarrier> mbarriers_;
  std::vector<WgmmaMeeting> wgmma_;
  AsyncWriteOrder order_;
  ProxyFences fences_;
};

} // namespace tilec::thir::interp
