// The consumer loop of a warp-specialized kernel whose scores warpgroup 0 computes alone
// (plan-score-warpgroup, docs/architecture.md): one loop per consumer warpgroup, each a sync
// group of its own, so that neither waits at a barrier of all 256 consumer threads.
//
//   warpgroup 0:  wait full[s]; its statements (the scores' gemms on one m64nN wgmma, the
//                 softmax), having waited on `free` (phase it - 1) before it first writes a
//                 handed-over buffer; then the hand-over (the shared copies of P and of the row
//                 values both read, fence.proxy.async, arrive `ready`); the statements of both
//                 (O's rescale, P@V); arrive empty[s]
//   warpgroup 1:  wait full[s]; the statements before the scores (lets); wait `ready` (phase
//                 it), read the row values; the statements of both; arrive `free`, empty[s]
//   after both:   the deferred sums, then warpgroup 0's row values read after the loop go to
//                 warpgroup 1 through shared memory (insert-barriers puts the consumers' barrier
//                 between)
//
// The parity of `ready` and `free` counts the iterations of the block (base_ + it), every one
// of which completes one phase of each.
#include "lower/WarpSpecialized.h"

namespace tilec::lower::detail {

void KernelLowering::WarpSpecialized::copyWhole(const tile::BufferPtr &from,
                                                const tile::BufferPtr &to, thir::Body &body) {
  tile::Stmt copy{from->loc,
                  tile::Copy{tile::wholeRegion(from, from->loc), tile::wholeRegion(to, to->loc)}};
  kl_.lowerStmt(copy, body, {});
}

// Warpgroup 0 holds the rows of a handed-over fragment it multiplies (P over its 128 threads,
// O's rows those of the warpgroup): its own gemm takes them from registers, which leaves its
// loop without a barrier of its own (nothing it reads in shared memory is written by its other
// threads), and only warpgroup 1 reads the shared copy.
bool KernelLowering::WarpSpecialized::aInRegisters(const tile::Stmt &st) const {
  const tile::Gemm &g = std::get<tile::Gemm>(st.op);
  return g.a.buffer->scope != tile::Scope::Shared &&
         analysis::wgmmaTakesAInRegisters(kl_.fragmentLayouts_.at(g.a.buffer->id),
                                          kl_.fragmentLayouts_.at(g.c.buffer->id));
}

void KernelLowering::WarpSpecialized::waitFree(thir::Expr all, thir::Body &body) {
  body.push_back(
      {thir::IfStmt{thir::binary(thir::BinOp::Gt, all, i32(0)),
                    {{thir::MbarrierWait{i32(score_->freeBarrier), rem(sub(all, i32(1)), 2)}}},
                    {}}});
}

void KernelLowering::WarpSpecialized::handOff(thir::Expr all, thir::Body &body) {
  const ScoreWarpgroup &sw = *score_;
  if (sw.firstHandedWrite >= sw.handOffAt)
    waitFree(all, body);
  for (const ScoreWarpgroup::Handover &h : sw.handedOver)
    if (h.shared != h.value)
      copyWhole(h.value, h.shared, body);
  for (const ScoreWarpgroup::Handover &h : sw.published)
    copyWhole(h.value, h.shared, body);
  // Warpgroup 1's wgmma reads P through the async proxy.
  body.push_back({thir::FenceProxyAsync{}});
  body.push_back({thir::MbarrierArrive{i32(sw.readyBarrier), nullptr}});
}

void KernelLowering::WarpSpecialized::receive(thir::Expr all, thir::Body &body) {
  body.push_back({thir::MbarrierWait{i32(score_->readyBarrier), rem(all, 2)}});
  for (const ScoreWarpgroup::Handover &h : score_->published)
    copyWhole(h.shared, h.value, body);
}

void KernelLowering::WarpSpecialized::scoreIteration(thir::Expr it, bool first, thir::Body &body) {
  const ScoreWarpgroup &sw = *score_;
  RingPosition at = position(it);
  body.push_back({thir::MbarrierWait{full(0, at.slot), at.phase}});
  atSlotOf(it);
  kl_.bind(*f_.vars[0], add(begin_, it), range_);
  thir::Expr all = base_ ? add(base_, it) : it;
  for (size_t i = 0; i < f_.body.size() && !kl_.failed_; ++i) {
    const tile::Stmt &st = f_.body[i];
    if (issued_.count(&st) || (!first && sw.owns(&st)))
      continue;
    if (i == sw.handOffAt) {
      if (first)
        handOff(all, body);
      else
        receive(all, body);
    }
    if (first && i == sw.firstHandedWrite)
      waitFree(all, body);
    // Warpgroup 0's chain of score gemms runs back to back (as in lowerIteration).
    kl_.wgmmaPending_ = first && chainsIntoNext(i) ? 1 : 0;
    auto rewritten = sw.rewritten.find(&st);
    const bool ownOperand = first && rewritten != sw.rewritten.end() && aInRegisters(st);
    kl_.lowerStmt(rewritten == sw.rewritten.end() || ownOperand ? st : rewritten->second, body, {});
  }
  kl_.wgmmaPending_ = 0;
  if (!first)
    body.push_back({thir::MbarrierArrive{i32(sw.freeBarrier), nullptr}});
  body.push_back({thir::MbarrierArrive{empty(0, at.slot), nullptr}});
}

void KernelLowering::WarpSpecialized::scoreLoops(thir::Body &into) {
  if (G_ != 1 || overlap_ || inFlight_ || pingPong_ || groups_ != 1 || C_ != 256)
    throw std::logic_error("plan-score-warpgroup chose a loop with another schedule");
  for (const auto &[id, placement] : score_->placements)
    kl_.shared_[id] = placement;
  thir::IfStmt split{thir::binary(thir::BinOp::Lt, tid_, i32(128)), {}, {}};
  split.thenGroup = thir::SyncGroup{kTurnBarrier, 128};
  split.elseGroup = thir::SyncGroup{kTurnBarrier + 1, 128};
  for (bool first : {true, false}) {
    std::set<int> savedDeclared = kl_.declaredHere_;
    thir::ForStmt loop = countingLoop(kl_.nextVar_++, n_);
    scoreIteration(thir::var(loop.var, i32t_), first, loop.body);
    leaveSlots();
    (first ? split.then : split.otherwise).push_back({std::move(loop)});
    kl_.declaredHere_ = savedDeclared;
  }
  into.push_back({std::move(split)});
}

void KernelLowering::WarpSpecialized::publishAfter(thir::Body &into) {
  if (score_->publishedAfter.empty())
    return;
  thir::IfStmt give{thir::binary(thir::BinOp::Lt, tid_, i32(128)), {}, {}};
  thir::IfStmt take{thir::binary(thir::BinOp::Ge, tid_, i32(128)), {}, {}};
  for (const ScoreWarpgroup::Handover &h : score_->publishedAfter) {
    copyWhole(h.value, h.shared, give.then);
    copyWhole(h.shared, h.value, take.then);
  }
  into.push_back({std::move(give)});
  into.push_back({std::move(take)});
}

} // namespace tilec::lower::detail
