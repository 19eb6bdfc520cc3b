// The consumer warpgroups of a warp-specialized kernel (WarpSpecialized.h): each iteration waits
// for its slot, runs the loop's body (the producer's copies aside), and releases the slot, with
// the gemm in flight, the overlap and the ping-pong turns that the plan decided.
#include "lower/WarpSpecialized.h"

namespace tilec::lower::detail {

namespace {

/// Whether `body` holds a barrier or a store to shared memory.
bool sharesMemory(const thir::Body &body) {
  for (const thir::Stmt &st : body) {
    if (std::holds_alternative<thir::Barrier>(st.op) ||
        std::holds_alternative<thir::SharedStore>(st.op) ||
        std::holds_alternative<thir::SharedAtomic>(st.op))
      return true;
    if (auto *i = std::get_if<thir::IfStmt>(&st.op);
        i && (sharesMemory(i->then) || sharesMemory(i->otherwise)))
      return true;
    if (auto *f = std::get_if<thir::ForStmt>(&st.op); f && sharesMemory(f->body))
      return true;
  }
  return false;
}

} // namespace

thir::Wgmma::Turn KernelLowering::WarpSpecialized::overlapTurn(bool wait, bool pass) const {
  // With the overlap, FlashAttention-3's turn: a warpgroup issues an iteration's first gemm and
  // the previous iteration's tail in one turn, then runs its softmax while the other issues.
  // The first iteration's turn holds its first gemm only, the tail after the loop its own.
  return pingPong_ ? thir::Wgmma::Turn{kTurnBarrier, wait, pass} : thir::Wgmma::Turn{};
}

bool KernelLowering::WarpSpecialized::lowerConsumers(thir::Body &consumer) {
  kl_.barrierThreads_ = C_;
  if (!persistent_)
    loadPrologue(i32(0), consumer);
  if (kl_.failed_)
    return false;
  // Ping-pong: the second warpgroup gives the first its first turn; after the last tile the
  // first takes the turn the second handed over last, so that no arrival is left over.
  auto warpgroup = [&](int w) { return eq(quot(tid_, 128), i32(w)); };
  if (pingPong_ || groups_ > 1)
    consumer.push_back(
        {thir::IfStmt{warpgroup(1), {{thir::WarpgroupTurn{kTurnBarrier, /*pass=*/true}}}, {}}});
  // A group numbers its threads from 0 and synchronizes with nobody: plan-pipelines allowed
  // groups only where the consumers compute each tile apart (nothing shared, no barrier).
  thir::Expr group = groups_ > 1 ? quot(tid_, C_) : nullptr;
  if (groups_ > 1)
    kl_.thread_ = thir::binary(thir::BinOp::Mod, tid_, i32(C_));
  forEachTile(true, group, consumer, [&](thir::Body &into) { consumerTile(into); });
  kl_.thread_ = tid_;
  if (kl_.failed_)
    return false;
  if (groups_ > 1) {
    // The group that did not take the last turn of the block's tiles takes the one handed
    // over last: group 0 after an even number of tiles, group 1 after an odd one.
    thir::Expr block = thir::special(thir::Special::BlockIdxX),
               grid = thir::special(thir::Special::GridDimX);
    thir::Expr count =
        thir::binary(thir::BinOp::Div, add(sub(tiles_, block), sub(grid, i32(1))), grid);
    consumer.push_back({thir::IfStmt{eq(rem(add(count, group), 2), i32(0)),
                                     {{thir::WarpgroupTurn{kTurnBarrier, /*pass=*/false}}},
                                     {}}});
  }
  if (groups_ > 1 && sharesMemory(consumer))
    throw std::logic_error("consumer groups on their own tiles synchronize or share memory");
  if (pingPong_)
    consumer.push_back(
        {thir::IfStmt{warpgroup(0), {{thir::WarpgroupTurn{kTurnBarrier, /*pass=*/false}}}, {}}});
  kl_.barrierThreads_ = 0;
  return true;
}

void KernelLowering::WarpSpecialized::loadPrologue(thir::Expr parity, thir::Body &consumer) {
  thir::Body load;
  for (const tile::Stmt *st : plan_.consumerPrologue)
    if (!kl_.failed_)
      kl_.lowerStmt(*st, load, {});
  if (prologueByTma_)
    consumer.push_back({thir::IfStmt{
        tma_, {{thir::MbarrierWait{i32(plan_.prologueBarrier()), parity}}}, std::move(load)}});
  else
    consumer.insert(consumer.end(), std::make_move_iterator(load.begin()),
                    std::make_move_iterator(load.end()));
}

// The buffers of the ring read in iteration `it`: its slot's versions. Operands the iteration
// computes itself alternate between their two versions.
void KernelLowering::WarpSpecialized::atSlotOf(thir::Expr it) {
  for (const tile::Stmt *st : plan_.copies) {
    const tile::BufferPtr &b = std::get<tile::Copy>(st->op).dst.buffer;
    kl_.stageOffset_[b->id] = mul(position(it).version, kl_.shared_.at(b->id).layout.bytes());
  }
  for (int id : plan_.producedOperands)
    kl_.stageOffset_[id] = mul(rem(it, 2), kl_.shared_.at(id).layout.bytes());
}

void KernelLowering::WarpSpecialized::leaveSlots() {
  for (const tile::Stmt *st : plan_.copies)
    kl_.stageOffset_.erase(std::get<tile::Copy>(st->op).dst.buffer->id);
  for (int id : plan_.producedOperands)
    kl_.stageOffset_.erase(id);
}

// Overlap: the tail of iteration it - 1 (on that iteration's slot), issued behind this
// iteration's gemm, which the wait after it leaves in flight no longer. With two rings the
// tail's copies have their own: the tail waits for its slot, and the first ring's slot is free
// once the gemm the tail is issued behind completed.
void KernelLowering::WarpSpecialized::waitLate(thir::Expr it, thir::Body &body) {
  if (rings_ > 1) {
    RingPosition at = position(it);
    body.push_back({thir::MbarrierWait{full(lateRing_, at.slot), at.phase}});
  }
}

void KernelLowering::WarpSpecialized::releaseEarly(thir::Expr it, thir::Body &body) {
  if (rings_ > 1)
    body.push_back({thir::MbarrierArrive{empty(0, position(it).slot), nullptr}});
}

void KernelLowering::WarpSpecialized::issueRotated(thir::Expr it, thir::Body &body) {
  waitLate(sub(it, i32(1)), body);
  atSlotOf(sub(it, i32(1)));
  kl_.wgmmaPending_ = 2;
  for (const tile::Stmt *st : overlap_->rotated) {
    kl_.turn_ = st == &overlap_->gemm() ? overlapTurn(false, true) : thir::Wgmma::Turn{};
    kl_.lowerStmt(*st, body, {});
  }
  kl_.turn_ = {};
  kl_.wgmmaPending_ = 0;
  atSlotOf(it);
  body.push_back({thir::WgmmaWait{
      1, kl_.slotVars_.at(std::get<tile::Gemm>(overlap_->issueAfter->op).c.buffer->id)}});
  releaseEarly(it, body);
}

// Without a fence ptxas moves the wait for the tail's gemm up, above the softmax it was to
// overlap (64 of flash_attention's 66 exponentials ran after it); with a CTA fence before the
// wait all 66 run before it (docs/results/sass-overlap-pins-2026-12-03.txt).
void KernelLowering::WarpSpecialized::waitRotated(thir::Expr it, thir::Body &body) {
  body.push_back({thir::FenceCta{}});
  body.push_back({thir::WgmmaWait{
      0, kl_.slotVars_.at(std::get<tile::Gemm>(overlap_->gemm().op).c.buffer->id)}});
  body.push_back({thir::MbarrierArrive{empty(lateRing_, position(sub(it, i32(1))).slot), nullptr}});
}

bool KernelLowering::WarpSpecialized::chainsIntoNext(size_t i) const {
  auto *g = std::get_if<tile::Gemm>(&f_.body[i].op);
  if (!g)
    return false;
  for (size_t j = i + 1; j < f_.body.size(); ++j) {
    if (issued_.count(&f_.body[j]))
      continue;
    auto *next = std::get_if<tile::Gemm>(&f_.body[j].op);
    return next && !next->clearAccum && next->c.buffer == g->c.buffer;
  }
  return false;
}

// With the overlap, the first iteration (`peeled`, before the loop) runs without the tail,
// which the next one runs; the others run the previous tail behind their own gemm.
void KernelLowering::WarpSpecialized::lowerIteration(thir::Expr it, bool peeled, thir::Body &body) {
  RingPosition at = position(it);
  onlyIf(at.first, {{thir::MbarrierWait{full(0, at.slot), at.phase}}}, body);
  atSlotOf(it);
  kl_.bind(*f_.vars[0], add(begin_, it), range_);
  // With G iterations per slot only a slot's first iteration releases anything: the others
  // leave their groups in flight (wait_group G is no wait) and the first waits for all but its
  // own group before it releases the previous slot.
  kl_.wgmmaPending_ = inFlight_ ? G_ : 0;
  int pending = kl_.wgmmaPending_;
  for (size_t i = 0; i < f_.body.size(); ++i) {
    const tile::Stmt &st = f_.body[i];
    if (issued_.count(&st) || kl_.failed_)
      continue;
    // A gemm followed by one into the same accumulator (MLA's Q@K^T then Q_pe@K_pe^T) leaves
    // its group in flight: the tensor cores order the two, and the second one's wait covers
    // both, so they run back to back instead of draining in between.
    kl_.wgmmaPending_ = chainsIntoNext(i) ? std::max(pending, 1) : pending;
    if (overlap_ && !peeled && &st == overlap_->waitBefore)
      waitRotated(it, body);
    // Ping-pong (FlashAttention-3's scheduler barriers): a warpgroup's turn runs from its last
    // gemm of one iteration to its first gemm of the next, so that the tensor cores run one
    // warpgroup's gemms back to back while the other computes.
    kl_.turn_ = {};
    if (overlap_ && &st == overlap_->issueAfter)
      kl_.turn_ = overlapTurn(true, peeled);
    else if (pingPong_ && !overlap_ && !gemms_.empty() &&
             (&st == gemms_.front() || &st == gemms_.back()))
      kl_.turn_ = {kTurnBarrier, /*wait=*/&st == gemms_.back(), /*pass=*/&st == gemms_.front()};
    const bool issuesRotated = overlap_ && !peeled && &st == overlap_->issueAfter;
    if (issuesRotated)
      kl_.wgmmaPending_ = 1;
    kl_.lowerStmt(st, body, {});
    if (issuesRotated) {
      kl_.wgmmaPending_ = pending = 0;
      issueRotated(it, body);
    } else if (overlap_ && peeled && &st == overlap_->issueAfter) {
      releaseEarly(it, body);
    }
  }
  if (overlap_ && !peeled && !overlap_->waitBefore)
    waitRotated(it, body);
  kl_.turn_ = {};
  kl_.wgmmaPending_ = 0;
}

void KernelLowering::WarpSpecialized::consumerTile(thir::Body &into) {
  if (score_)
    scoreLoops(into);
  else
    mainLoop(into);
  // The loop's gemms have completed: the producer may load the next tile's prologue.
  if (prologueByTma_ && persistent_)
    into.push_back({thir::IfStmt{
        tma_, {{thir::MbarrierArrive{i32(plan_.prologueFreeBarrier()), nullptr}}}, {}}});
  kl_.finishDeferredSums(kl_.k_.body[next_], into);
  // Warpgroup 1 gets the finished row values warpgroup 0 alone computed.
  if (score_)
    publishAfter(into);
  for (size_t i = next_ + 1; i < kl_.k_.body.size() && !kl_.failed_; ++i)
    kl_.lowerStmt(kl_.k_.body[i], into, {});
}

void KernelLowering::WarpSpecialized::mainLoop(thir::Body &into) {
  thir::ForStmt loop = countingLoop(kl_.nextVar_++, n_);
  thir::Expr it = thir::var(loop.var, i32t_);
  if (overlap_) {
    // No branch on the first iteration inside the loop: ptxas then keeps each wgmma wait where
    // it stands rather than early in the softmax.
    thir::IfStmt first{thir::binary(thir::BinOp::Gt, n_, i32(0)), {}, {}};
    lowerIteration(i32(0), /*peeled=*/true, first.then);
    into.push_back({std::move(first)});
    loop.begin = i32(1);
  }
  lowerIteration(it, /*peeled=*/false, loop.body);
  RingPosition at = position(it);
  if (overlap_) {
    // The slot is released by the next iteration, once this one's last gemm completed.
  } else if (inFlight_) {
    // The group of iteration it - 1 has completed (wait_group 1, in the wgmma or after it):
    // when that was the last iteration of the previous slot, the slot is free.
    thir::Expr previous = rem(add(at.slot, i32(S_ - 1)), S_);
    thir::Expr cond = thir::binary(thir::BinOp::Gt, it, i32(0));
    if (at.first)
      cond = thir::binary(thir::BinOp::And, at.first, cond);
    thir::Body release;
    if (G_ > 1)
      release.push_back({thir::WgmmaWait{1, kl_.slotVars_.at(inFlight_->c.buffer->id)}});
    release.push_back({thir::MbarrierArrive{empty(0, previous), nullptr}});
    loop.body.push_back({thir::IfStmt{cond, std::move(release), {}}});
  } else {
    // Nothing of this slot is read any more (wgmma waited for its group).
    onlyIf(at.last, {{thir::MbarrierArrive{empty(0, at.slot), nullptr}}}, loop.body);
  }
  leaveSlots();
  // A turn that spans iterations is taken before the first and handed over after the last.
  // Consumer groups take turns over whole main loops: a group waits on the full barriers of
  // its tile's slots only after the other group waited on those of the tile before, so that a
  // slot's barrier is never two phases behind the one a group waits for (the parity would not
  // tell them apart).
  const bool spanning = (pingPong_ && !overlap_ && gemms_.size() > 1) || groups_ > 1;
  if (spanning)
    into.push_back({thir::WarpgroupTurn{kTurnBarrier, /*pass=*/false}});
  into.push_back({std::move(loop)});
  if (spanning)
    into.push_back({thir::WarpgroupTurn{kTurnBarrier, /*pass=*/true}});
  if (overlap_) {
    // The last iteration's tail, then its slot is free.
    thir::IfStmt tail{thir::binary(thir::BinOp::Gt, n_, i32(0)), {}, {}};
    thir::Expr lastIt = sub(n_, i32(1));
    waitLate(lastIt, tail.then);
    atSlotOf(lastIt);
    for (const tile::Stmt *st : overlap_->rotated) {
      kl_.turn_ = st == &overlap_->gemm() ? overlapTurn(true, true) : thir::Wgmma::Turn{};
      kl_.lowerStmt(*st, tail.then, {});
    }
    kl_.turn_ = {};
    leaveSlots();
    tail.then.push_back({thir::MbarrierArrive{empty(lateRing_, position(lastIt).slot), nullptr}});
    into.push_back({std::move(tail)});
  }
  if (inFlight_) {
    into.push_back({thir::WgmmaWait{0, kl_.slotVars_.at(inFlight_->c.buffer->id)}});
    // A persistent block's next tile goes on through the rings: the last slot is free now.
    if (persistent_) {
      RingPosition last = position(sub(n_, i32(1)));
      into.push_back({thir::IfStmt{thir::binary(thir::BinOp::Gt, n_, i32(0)),
                                   {{thir::MbarrierArrive{empty(0, last.slot), nullptr}}},
                                   {}}});
    }
  }
}

} // namespace tilec::lower::detail
