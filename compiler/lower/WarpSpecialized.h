// Internal to lower/: the lowering of one warp-specialized kernel (PipelinePlan::warpSpecialized,
// sm_90a), split over LowerWarpSpecialized.cpp (the rings' barriers, the block's tiles, the
// producer) and LowerConsumers.cpp (the consumer warpgroups). The protocol is described at the
// top of LowerWarpSpecialized.cpp.
#pragma once

#include "lower/LowerImpl.h"

#include <functional>
#include <optional>
#include <set>
#include <vector>

namespace tilec::lower::detail {

class KernelLowering::WarpSpecialized {
public:
  /// Lowers `kl`'s kernel around the loop `plan` specializes.
  WarpSpecialized(KernelLowering &kl, const PipelinePlan &plan);
  /// Appends the whole kernel body to `out`.
  void lower(thir::Body &out);

private:
  /// Where iteration `it` of the current tile stands in the rings: its slot, the slot's phase
  /// parity, its version of the buffers, and (G > 1) whether it is the first or the last
  /// iteration of its slot.
  struct RingPosition {
    thir::Expr slot, phase, version, first, last;
  };

  // ---- Rings and tiles (LowerWarpSpecialized.cpp) --------------------------------------------
  /// Byte offsets of ring `ring`'s full and empty mbarriers of slot `slot`
  /// (PipelinePlan::barrierOffset).
  thir::Expr full(int ring, thir::Expr slot) const;
  thir::Expr empty(int ring, thir::Expr slot) const;
  /// The ring a copy's slots are in: one ring unless an overlap splits them.
  int ringOf(const tile::Stmt *copy) const;
  RingPosition position(thir::Expr it) const;
  /// `stmts` only where `cond` holds (a slot's first or last iteration); always when null.
  static void onlyIf(thir::Expr cond, thir::Body stmts, thir::Body &into);
  /// Thread 0 initializes every ring's barriers (and the prologue's), then the block syncs.
  void initBarriers(thir::Body &out);
  /// What a block does before the loop, for each tile: the default rasterization, then the
  /// statements before the loop (plan-pipelines checked they only bind values and clear
  /// registers), except the consumer prologue, which only `consumer` code runs; then the loop's
  /// bounds (begin_, n_). Without persistence this runs once in every thread.
  bool prelude(bool consumer, thir::Body &into);
  /// A persistent block's grid extents (gx_, gy_) and tile count (tiles_).
  bool declareGrid(thir::Body &out);
  /// `work` for each of the block's tiles (persistent), or once. With consumer groups, a
  /// group's tiles only (`group` is its index; null in the producer, which loads every tile).
  void forEachTile(bool consumer, thir::Expr group, thir::Body &into,
                   const std::function<void(thir::Body &)> &work);

  // ---- Producer (LowerWarpSpecialized.cpp) ---------------------------------------------------
  /// Where copy `c`'s tile starts in its source tensor, each dimension's index.
  std::optional<std::vector<thir::Expr>> tileStarts(const tile::Copy &c);
  /// One TMA box per panel of copy `st`'s tile, into its buffer's version at byte `version`, on
  /// mbarrier `bar`.
  void tmaBoxes(const tile::Stmt *st, TmaDims kept, const std::vector<thir::Expr> &starts,
                thir::Expr version, thir::Expr bar, thir::Body &into);
  /// The producer's loop over one tile's iterations, by TMA or element by element; `withPrologue`
  /// (a persistent block's TMA producer): with the tile's prologue after its first iteration.
  void producerLoop(bool useTma, thir::Body &into, bool withPrologue);
  /// The producer's TMA boxes of the consumer prologue on its mbarrier; per tile, first waiting
  /// until the consumers no longer read the tile before's.
  bool producerPrologue(thir::Body &into);
  bool lowerProducer(thir::Body &producer);

  // ---- Consumers (LowerConsumers.cpp) --------------------------------------------------------
  bool lowerConsumers(thir::Body &consumer);
  /// The consumers wait for the prologue the producer loaded, the phase of `parity`; without
  /// tensor maps (tilec_tma 0), or where the producer does not load it, they load it
  /// themselves.
  void loadPrologue(thir::Expr parity, thir::Body &consumer);
  /// One tile's main loop and the statements after it.
  void consumerTile(thir::Body &into);
  /// The main loop of both consumer warpgroups in step.
  void mainLoop(thir::Body &into);
  /// Iteration `it`'s statements (the producer's copies aside).
  void lowerIteration(thir::Expr it, bool peeled, thir::Body &body);
  /// Whether statement `i` of the loop body is a gemm that the next one (not issued by the
  /// producer) accumulates into.
  bool chainsIntoNext(size_t i) const;
  /// Points the ring's buffers at the versions iteration `it` reads, and leaves them.
  void atSlotOf(thir::Expr it);
  void leaveSlots();
  /// The overlap's tail on its own ring: its wait, the early release of ring 0's slot, the
  /// tail issued behind the iteration's gemm and the wait for it.
  void waitLate(thir::Expr it, thir::Body &body);
  void releaseEarly(thir::Expr it, thir::Body &body);
  void issueRotated(thir::Expr it, thir::Body &body);
  void waitRotated(thir::Expr it, thir::Body &body);
  thir::Wgmma::Turn overlapTurn(bool wait, bool pass) const;
  // ---- Scores on warpgroup 0 (LowerScoreWarpgroup.cpp, plan-score-warpgroup) ---------------
  /// One loop per consumer warpgroup, each a sync group of its own.
  void scoreLoops(thir::Body &into);
  /// Warpgroup 0's (`first`) or warpgroup 1's iteration `it`.
  void scoreIteration(thir::Expr it, bool first, thir::Body &body);
  /// Warpgroup 0 waits until warpgroup 1 has read what it handed over in the iteration before.
  void waitFree(thir::Expr all, thir::Body &body);
  /// Warpgroup 0 hands over an iteration's values; warpgroup 1 waits for them and reads them.
  void handOff(thir::Expr all, thir::Body &body);
  void receive(thir::Expr all, thir::Body &body);
  /// After the loops, warpgroup 1 gets the row values read after the loop.
  void publishAfter(thir::Body &into);
  /// Whether warpgroup 0's own gemm `st` (of both warpgroups) reads its A operand, handed over,
  /// from its registers.
  bool aInRegisters(const tile::Stmt &st) const;
  /// Lowers copy(from, to), both whole buffers.
  void copyWhole(const tile::BufferPtr &from, const tile::BufferPtr &to, thir::Body &body);

  /// setmaxnreg for both roles, once the occupancy is known (the whole kernel lowered).
  void splitRegisters(thir::Body &producer, thir::Body &consumer);

  /// Barrier 0 is the block's, 1 the consumers' (roles.elseGroup); a ping-pong's turns use 2, 3.
  static constexpr int kTurnBarrier = 2;

  KernelLowering &kl_;
  const PipelinePlan &plan_;
  const int C_, S_, G_;
  /// The plan decided where turns are taken (two consumer warpgroups, more than one stage).
  const bool pingPong_;
  const PipelinePlan::GemmOverlap *overlap_;
  /// A persistent block walks tiles blockIdx.x, + gridDim.x, ... of the grid; its iterations
  /// go on through the rings from one tile to the next (`base_` counts those of earlier tiles,
  /// rounded up to whole slots), so that the producer fills the slots the consumers freed while
  /// they finish the previous tile.
  const bool persistent_;
  /// Consumer groups of C threads each (threads g C .. g C + C - 1 form group g), group g taking
  /// the block's tiles g, g + groups, ... of those the producer loads in order: one group's
  /// epilogue runs while the next group's tile streams through the rings.
  const int groups_, consumers_;
  /// The consumers' prologue copies (attention's Q) by the producer's TMA, first, on a barrier
  /// of their own: they load beside the first K/V tiles instead of through the consumers'
  /// registers. A persistent block's producer loads each tile's where the plan says so
  /// (prologuePerTile), during the epilogue of the tile before; elsewhere its consumers do.
  const bool prologueByTma_;
  /// Ring r's barriers; one ring unless an overlap splits them. The overlap's tail reads the
  /// last ring.
  const int rings_, lateRing_;
  /// The loop's place in the kernel body, and the loop.
  const size_t next_;
  const tile::For &f_;
  /// Only a GEMM's loop (copies and one gemm) is rasterized by default.
  const bool rasterized_;
  /// The loop's scores warpgroup 0 computes alone, if plan-score-warpgroup said so.
  const ScoreWarpgroup *score_ = nullptr;
  /// The gemm a loop leaves in flight into the next iteration, if any.
  const tile::Gemm *inFlight_ = nullptr;
  /// The loop variable's range when the loop's bounds are constants.
  std::optional<Interval> range_;
  /// Statements the consumers do not run in the body (the producer's copies, the overlap's
  /// rotated tail) and the body's gemms.
  std::set<const tile::Stmt *> issued_;
  std::vector<const tile::Stmt *> gemms_;
  const thir::Expr tid_;
  /// Whether the launch encoded the tensor maps (the TmaEnabled parameter), once added.
  thir::Expr tma_;
  const Type i32t_{DType::Int32};
  // Set while lowering: the loop's bounds, and a persistent block's grid and tiles.
  thir::Expr begin_, n_, base_, gx_, gy_, tiles_;
  /// In forEachTile's work: how many tiles the block walked before this one (null elsewhere).
  thir::Expr tileOrdinal_;
};

} // namespace tilec::lower::detail
