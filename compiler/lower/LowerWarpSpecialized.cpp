// Lowering of warp-specialized pipelines (PipelinePlan::warpSpecialized, sm_90a): the kernel
// gains a producer warpgroup after its `threads` consumer threads.
//
//   all threads:  thread 0 initializes full[s] (1 arrival + the stage's bytes; 128 arrivals when
//                 the launch could not encode the tensor maps) and empty[s] (one arrival per
//                 consumer thread); fence; bar.sync 0; the statements before the loop
//   producer:     setmaxnreg.dec; for each iteration it, slot s = it % S, phase = it / S % 2
//                 (with G iterations per slot, it / G in place of it, the wait and arrive in the
//                 slot's first iteration, each iteration its own version it % (S G)):
//                 wait empty[s] (parity phase ^ 1, so the first pass through the ring does not
//                 wait); one thread: arrive.expect_tx(full[s]) and one TMA box per panel of each
//                 copy (or, without tensor maps, all producer threads copy element by element,
//                 fence the async proxy and arrive)
//   consumers:    setmaxnreg.inc; for each iteration: wait full[s] (parity phase); the body
//                 (in ping-pong, each wgmma waits for its warpgroup's turn and passes it on);
//                 release slot s by arriving on empty[s] — with the gemm in flight, release the
//                 previous iteration's slot once its wgmma group completed (wait_group 1; with
//                 G > 1 only in a slot's first iteration, the others keep G groups in flight); then
//                 the statements after the loop, whose block barriers become named barriers of
//                 the consumer threads (the producer has left)
//   overlap:      (PipelinePlan::overlap, --overlap-gemms) the first iteration runs before the
//                 loop without the body's tail; every later one issues its gemm (wait_group 1
//                 left in flight), then the previous iteration's tail on the previous slot
//                 (its gemm left in flight), waits for its own gemm (wait_group 1), runs on
//                 while the tail's gemm does, and waits for that (wait_group 0) before the
//                 first statement touching its registers; the last tail runs after the loop.
//                 The tail's copies have a ring of their own (ring 1, after ring 0's barriers):
//                 the producer fills both rings in each iteration, ring 0's slot is released
//                 once the iteration's gemm completed, ring 1's once the tail's did
#include "lower/WarpSpecialized.h"

#include "analysis/ParallelLayout.h"
#include "tileir/Arith.h"

#include <algorithm>

#include <fmt/format.h>

namespace tilec::lower::detail {

namespace {

/// Registers per thread for the producer and the consumers when `blocks` blocks of the kernel
/// on one SM could not each give every thread 255 registers (none otherwise). A thread holds
/// what the launch bounds leave it at entry (the register file shared by the blocks' threads, in
/// multiples of 8: 168 for 384 threads and one block); the producer keeps 40 and the consumers
/// take what it gave up, so the block never asks for more than it holds (more deadlocks
/// setmaxnreg.inc, TileLang's annotate_warp_group_reg_alloc).
int registersAtEntry(int total, int blocks, const target::TargetInfo &t) {
  return std::min(t.registersPerThread, t.registersPerSM / (blocks * total)) / 8 * 8;
}

std::optional<std::pair<int, int>> registerSplit(int consumers, int blocks,
                                                 const target::TargetInfo &t) {
  int total = consumers + kProducerThreads;
  if (static_cast<int64_t>(total) * blocks * t.registersPerThread <= t.registersPerSM)
    return std::nullopt;
  const int pool = total * registersAtEntry(total, blocks, t), producer = 40;
  int consumer = (pool - kProducerThreads * producer) / consumers / 8 * 8;
  consumer = std::min(consumer, 256);
  return std::make_pair(producer, consumer);
}

/// Two blocks per SM when two fit in shared memory and, with the registers split between them,
/// the consumers keep their fragments and 64 more registers (the epilogue of one block then
/// runs beside the other's main loop); otherwise one.
int blocksPerSM(int consumers, int64_t sharedBytes, int64_t fragmentRegisters,
                const target::TargetInfo &t) {
  const int blocks = 2;
  const int64_t reservedPerBlock = 1024; // the driver's shared memory of each block (sm_80+)
  if (blocks * (sharedBytes + reservedPerBlock) > t.sharedPerSM ||
      blocks * (consumers + kProducerThreads) > t.maxThreadsPerSM)
    return 1;
  auto split = registerSplit(consumers, blocks, t);
  int consumer = split ? split->second : registersAtEntry(consumers + kProducerThreads, blocks, t);
  return fragmentRegisters + 64 <= consumer ? blocks : 1;
}

} // namespace

const PipelinePlan *KernelLowering::warpSpecializedLoop() const {
  for (const auto &[loop, p] : pipelines_)
    if (p.warpSpecialized)
      return &p;
  return nullptr;
}

thir::Stmt KernelLowering::barrier() const {
  return {thir::Barrier{barrierThreads_ ? 1 : 0, barrierThreads_}};
}

void KernelLowering::lowerWarpSpecializedKernel(const PipelinePlan &plan, thir::Body &out) {
  WarpSpecialized(*this, plan).lower(out);
}

namespace {

/// The index of the statement of `body` that is the loop `plan` specializes.
size_t loopIndex(const tile::Body &body, const std::map<const tile::For *, PipelinePlan> &plans,
                 const PipelinePlan &plan) {
  for (size_t i = 0; i < body.size(); ++i) {
    auto *f = std::get_if<tile::For>(&body[i].op);
    if (f && plans.count(f) && &plans.at(f) == &plan)
      return i;
  }
  throw std::logic_error("the warp-specialized loop is not a statement of the kernel body");
}

/// Block order matters to a GEMM's L2 reuse (at 8192^3 a row-major launch order reads the
/// operand panels from DRAM about again): without a use_swizzle the blocks are rasterized in
/// panels of 4 block columns, as gemm_relu asks for. Only a GEMM's loop (copies and one gemm)
/// is rasterized: attention's blocks of one head share its K and V, and launching them together
/// (as the grid does) keeps those in L2.
bool rasterizedByDefault(const tile::Body &body, const PipelinePlan &plan) {
  if (!plan.gemmInFlight)
    return true;
  for (const tile::Stmt &st : body)
    if (std::holds_alternative<tile::UseSwizzle>(st.op))
      return true;
  return false;
}

/// Whether the trip count of `loop`, statement `at` of `k`'s body, depends on the x block index,
/// itself or through the lets before it: the kernel's tiles then differ in work along x (causal
/// attention's row blocks).
bool tripCountFollowsX(const tile::Kernel &k, size_t at, const tile::For &loop) {
  std::vector<const tile::Var *> dependent;
  for (const tile::VarPtr &b : k.blockIndices)
    if (b->index == 0)
      dependent.push_back(b.get());
  auto mentioned = [&](const tile::Expr &e) {
    return std::any_of(dependent.begin(), dependent.end(),
                       [&](const tile::Var *v) { return analysis::mentions(e, *v); });
  };
  for (size_t i = 0; i < at && !dependent.empty(); ++i)
    if (auto *let = std::get_if<tile::Let>(&k.body[i].op); let && mentioned(let->value))
      dependent.push_back(let->var.get());
  return !dependent.empty() && (mentioned(loop.begins[0]) || mentioned(loop.extents[0]));
}

} // namespace

KernelLowering::WarpSpecialized::WarpSpecialized(KernelLowering &kl, const PipelinePlan &plan)
    : kl_(kl), plan_(plan), C_(static_cast<int>(kl.tileThreads_)), S_(plan.stages),
      G_(plan.itersPerSlot), pingPong_(plan.turns),
      overlap_(plan.overlap ? &*plan.overlap : nullptr),
      persistent_(walksTiles(plan, kl.opts_.persistence)),
      groups_(persistent_ ? plan.tileGroups : 1), consumers_(groups_ * C_),
      prologueByTma_(plan.producerLoadsPrologue() && (!persistent_ || plan.prologuePerTile)),
      rings_(overlap_ ? plan.rings() : 1), lateRing_(rings_ - 1),
      next_(loopIndex(kl.k_.body, kl.pipelines_, plan)),
      f_(std::get<tile::For>(kl.k_.body[next_].op)),
      rasterized_(rasterizedByDefault(kl.k_.body, plan)),
      tid_(thir::special(thir::Special::ThreadIdxX)) {
  if (plan.gemmInFlight)
    for (const tile::Stmt &st : f_.body)
      if (auto *g = std::get_if<tile::Gemm>(&st.op);
          g && !g->clearAccum && kl.isOnChip(g->c.buffer) &&
          kl.fragmentLayouts_.at(g->c.buffer->id).warpgroup)
        inFlight_ = g;
  auto b0 = tile::asConstInt(f_.begins[0]), n0 = tile::asConstInt(f_.extents[0]);
  if (b0 && n0)
    range_ = Interval{*b0, *b0 + std::max<int64_t>(*n0 - 1, 0)};
  for (const ScoreWarpgroup &sw : kl.scoreWarpgroups_)
    if (sw.loop == &kl.k_.body[next_])
      score_ = &sw;
  issued_.insert(plan.copies.begin(), plan.copies.end());
  if (overlap_)
    issued_.insert(overlap_->rotated.begin(), overlap_->rotated.end());
  for (const tile::Stmt &st : f_.body)
    if (std::holds_alternative<tile::Gemm>(st.op))
      gemms_.push_back(&st);
}

void KernelLowering::WarpSpecialized::lower(thir::Body &out) {
  kl_.out_.threads = consumers_ + kProducerThreads;
  kl_.addTensorMaps(plan_, prologueByTma_);
  if (kl_.failed_)
    return;
  tma_ = eq(thir::param(kl_.tmaEnabledParam_, DType::Int32), i32(1));
  initBarriers(out);
  if (persistent_ ? !declareGrid(out) : !prelude(false, out))
    return;
  thir::IfStmt roles{thir::binary(thir::BinOp::Ge, tid_, i32(consumers_)), {}, {}};
  roles.elseGroup = thir::SyncGroup{1, consumers_};
  if (!lowerProducer(roles.then) || !lowerConsumers(roles.otherwise))
    return;
  splitRegisters(roles.then, roles.otherwise);
  out.push_back({std::move(roles)});
}

// ---- Rings and tiles ---------------------------------------------------------------------------

thir::Expr KernelLowering::WarpSpecialized::full(int ring, thir::Expr slot) const {
  return add(i32(plan_.barrierOffset + 16 * S_ * ring), mul(slot, 8));
}

thir::Expr KernelLowering::WarpSpecialized::empty(int ring, thir::Expr slot) const {
  return add(i32(plan_.barrierOffset + 16 * S_ * ring + 8 * S_), mul(slot, 8));
}

int KernelLowering::WarpSpecialized::ringOf(const tile::Stmt *copy) const {
  return overlap_ ? plan_.ringOf(copy) : 0;
}

KernelLowering::WarpSpecialized::RingPosition
KernelLowering::WarpSpecialized::position(thir::Expr it) const {
  thir::Expr all = base_ ? add(base_, it) : it;
  thir::Expr round = G_ == 1 ? all : quot(all, G_);
  RingPosition p{rem(round, S_), rem(quot(round, S_), 2), rem(all, S_ * G_), nullptr, nullptr};
  if (G_ > 1) {
    p.first = eq(rem(it, G_), i32(0));
    p.last = thir::binary(thir::BinOp::Or, eq(rem(it, G_), i32(G_ - 1)), eq(it, sub(n_, i32(1))));
  }
  return p;
}

void KernelLowering::WarpSpecialized::onlyIf(thir::Expr cond, thir::Body stmts, thir::Body &into) {
  if (!cond) {
    for (thir::Stmt &st : stmts)
      into.push_back(std::move(st));
    return;
  }
  into.push_back({thir::IfStmt{cond, std::move(stmts), {}}});
}

void KernelLowering::WarpSpecialized::initBarriers(thir::Body &out) {
  thir::IfStmt init{eq(tid_, i32(0)), {}, {}};
  for (int r = 0; r < rings_; ++r)
    for (int s = 0; s < S_; ++s) {
      init.then.push_back(
          {thir::MbarrierInit{full(r, i32(s)), thir::select(tma_, i32(1), i32(kProducerThreads))}});
      init.then.push_back({thir::MbarrierInit{empty(r, i32(s)), i32(C_)}});
    }
  if (prologueByTma_)
    init.then.push_back({thir::MbarrierInit{i32(plan_.prologueBarrier()), i32(1)}});
  if (prologueByTma_ && persistent_)
    init.then.push_back({thir::MbarrierInit{i32(plan_.prologueFreeBarrier()), i32(consumers_)}});
  if (score_) {
    init.then.push_back({thir::MbarrierInit{i32(score_->readyBarrier), i32(128)}});
    init.then.push_back({thir::MbarrierInit{i32(score_->freeBarrier), i32(128)}});
  }
  init.then.push_back({thir::FenceMbarrierInit{}});
  out.push_back({std::move(init)});
  out.push_back({thir::Barrier{}});
}

bool KernelLowering::WarpSpecialized::prelude(bool consumer, thir::Body &into) {
  const tile::Body &body = kl_.k_.body;
  if (!rasterized_)
    kl_.lowerUseSwizzle(tile::UseSwizzle{kDefaultSwizzlePanel, true}, into);
  for (size_t i = 0; i < next_ && !kl_.failed_; ++i)
    if (std::find(plan_.consumerPrologue.begin(), plan_.consumerPrologue.end(), &body[i]) ==
        plan_.consumerPrologue.end())
      kl_.lowerStmt(body[i], into, {});
  if (consumer && tileOrdinal_)
    loadPrologue(rem(tileOrdinal_, 2), into);
  begin_ = kl_.lowerExpr(f_.begins[0], {});
  thir::Expr extent = kl_.lowerExpr(f_.extents[0], {});
  if (!begin_ || !extent)
    return false;
  begin_ = thir::cast(begin_, i32t_);
  int nVar = kl_.nextVar_++;
  into.push_back({thir::DeclVar{nVar, i32t_, thir::cast(extent, i32t_)}});
  n_ = thir::var(nVar, i32t_);
  return !kl_.failed_;
}

bool KernelLowering::WarpSpecialized::declareGrid(thir::Body &out) {
  thir::Expr extent[3];
  for (size_t i = 0; i < 3; ++i) {
    extent[i] = i < kl_.k_.grid.size() ? kl_.lowerExpr(kl_.k_.grid[i], {}) : i32(1);
    if (!extent[i])
      return false;
    int v = kl_.nextVar_++;
    out.push_back({thir::DeclVar{v, i32t_, thir::cast(extent[i], i32t_)}});
    extent[i] = thir::var(v, i32t_);
  }
  gx_ = extent[0];
  gy_ = extent[1];
  int v = kl_.nextVar_++;
  out.push_back({thir::DeclVar{
      v, i32t_,
      thir::binary(thir::BinOp::Mul, thir::binary(thir::BinOp::Mul, gx_, gy_), extent[2])}});
  tiles_ = thir::var(v, i32t_);
  return true;
}

void KernelLowering::WarpSpecialized::forEachTile(bool consumer, thir::Expr group, thir::Body &into,
                                                  const std::function<void(thir::Body &)> &work) {
  if (!persistent_) {
    work(into);
    return;
  }
  int baseVar = kl_.nextVar_++;
  into.push_back({thir::DeclVar{baseVar, i32t_, i32(0)}});
  base_ = thir::var(baseVar, i32t_);
  thir::ForStmt loop;
  loop.var = kl_.nextVar_++;
  loop.varType = i32t_;
  thir::Expr block = thir::special(thir::Special::BlockIdxX),
             grid = thir::special(thir::Special::GridDimX);
  loop.begin = group ? add(block, thir::binary(thir::BinOp::Mul, group, grid)) : block;
  loop.end = tiles_;
  loop.step = group ? mul(grid, groups_) : grid;
  std::set<int> savedDeclared = kl_.declaredHere_;
  thir::Expr tile = thir::var(loop.var, i32t_);
  kl_.bindPersistentTile(tile, gx_, gy_, loop.body);
  tileOrdinal_ = thir::binary(thir::BinOp::Div, sub(tile, block), grid);
  if (group)
    tileOrdinal_ = thir::binary(thir::BinOp::Div, tileOrdinal_, i32(groups_));
  if (!prelude(consumer, loop.body))
    return;
  thir::Expr slots = G_ == 1 ? n_ : mul(quot(add(n_, i32(G_ - 1)), G_), G_);
  // Every tile runs the same iterations (PipelinePlan::tileGroups): the tiles before this
  // one in the block's order (the other groups' included) used `slots` each.
  if (group)
    loop.body.push_back({thir::AssignVar{
        baseVar, thir::binary(thir::BinOp::Mul,
                              thir::binary(thir::BinOp::Div, sub(tile, block), grid), slots)}});
  work(loop.body);
  if (!group)
    loop.body.push_back({thir::AssignVar{baseVar, add(base_, slots)}});
  kl_.declaredHere_ = savedDeclared;
  kl_.persistentTile_.reset();
  base_ = nullptr;
  tileOrdinal_ = nullptr;
  into.push_back({std::move(loop)});
}

// ---- Producer ----------------------------------------------------------------------------------

std::optional<std::vector<thir::Expr>>
KernelLowering::WarpSpecialized::tileStarts(const tile::Copy &c) {
  std::vector<thir::Expr> starts;
  for (const tile::RegionDim &d : c.src.dims) {
    thir::Expr start = kl_.lowerExpr(d.begin, {});
    if (!start)
      return std::nullopt;
    starts.push_back(thir::cast(start, i32t_));
  }
  return starts;
}

void KernelLowering::WarpSpecialized::tmaBoxes(const tile::Stmt *st, TmaDims kept,
                                               const std::vector<thir::Expr> &starts,
                                               thir::Expr version, thir::Expr bar,
                                               thir::Body &into) {
  const tile::Copy &c = std::get<tile::Copy>(st->op);
  const SharedBuffer &sb = kl_.shared_.at(c.dst.buffer->id);
  const analysis::SharedLayout &l = sb.layout;
  int64_t boxCols = l.panelBytes / l.elementBytes;
  for (int64_t p = 0; p * l.panelBytes < l.rowBytes; ++p) {
    // Innermost first: the tile's columns of this panel, then the other dimensions.
    std::vector<thir::Expr> coords;
    for (size_t d = starts.size(); d-- > 0;)
      coords.push_back(d == kept.col && p > 0 ? add(starts[d], i32(p * boxCols)) : starts[d]);
    into.push_back({thir::TmaLoad{kl_.tensorMapOf_.at(st), std::move(coords),
                                  add(i32(sb.offset + p * l.rows * l.panelBytes), version), bar}});
  }
}

void KernelLowering::WarpSpecialized::producerLoop(bool useTma, thir::Body &into,
                                                   bool withPrologue) {
  thir::ForStmt loop = countingLoop(kl_.nextVar_++, n_);
  thir::Expr it = thir::var(loop.var, i32t_);
  RingPosition at = position(it);
  thir::Expr slot = at.slot;
  kl_.bind(*f_.vars[0], add(begin_, it));
  std::set<int> savedDeclared = kl_.declaredHere_;
  for (int ring = 0; ring < rings_; ++ring) {
    int64_t bytes = 0;
    for (const tile::Stmt *st : plan_.copies)
      if (ringOf(st) == ring)
        bytes += kl_.shared_.at(std::get<tile::Copy>(st->op).dst.buffer->id).layout.bytes();
    thir::Body enter = {{thir::MbarrierWait{empty(ring, slot),
                                            thir::binary(thir::BinOp::BitXor, at.phase, i32(1))}}};
    if (useTma) {
      // The slot's bytes: its G iterations' tiles, fewer in a last slot the loop does not fill.
      thir::Expr tx = i32(bytes * G_);
      if (G_ > 1)
        tx = mul(thir::binary(thir::BinOp::Min, i32(G_), sub(n_, it)), bytes);
      enter.push_back({thir::MbarrierArrive{full(ring, slot), tx}});
    }
    onlyIf(at.first, std::move(enter), loop.body);
    if (ring == 0)
      for (const tile::Stmt *l : plan_.lets)
        kl_.lowerStmt(*l, loop.body, {});
    for (size_t ci = 0; ci < plan_.copies.size(); ++ci) {
      const tile::Stmt *st = plan_.copies[ci];
      if (ringOf(st) != ring)
        continue;
      const tile::Copy &c = std::get<tile::Copy>(st->op);
      const SharedBuffer &sb = kl_.shared_.at(c.dst.buffer->id);
      const analysis::SharedLayout &l = sb.layout;
      thir::Expr version = mul(at.version, l.bytes());
      const TmaDims kept = plan_.tmaDims.at(ci);
      auto starts = tileStarts(c);
      if (!starts)
        return;
      if (useTma) {
        tmaBoxes(st, kept, *starts, version, full(ring, slot), loop.body);
      } else {
        kl_.stageOffset_[c.dst.buffer->id] = version;
        kl_.copyElementwise(c, kept, *starts, sub(tid_, i32(consumers_)), loop.body);
        kl_.stageOffset_.erase(c.dst.buffer->id);
      }
    }
    if (!useTma)
      onlyIf(at.last,
             {{thir::FenceProxyAsync{}}, {thir::MbarrierArrive{full(ring, slot), nullptr}}},
             loop.body);
  }
  // A tile's prologue after its first iteration's copies: the slots of its first iterations
  // free up while the consumers still run the tile before, the prologue's buffers only once they
  // finished it. A tile without iterations loads its prologue all the same.
  if (withPrologue) {
    thir::IfStmt first{eq(it, i32(0)), {}, {}};
    producerPrologue(first.then);
    loop.body.push_back({std::move(first)});
  }
  kl_.declaredHere_ = savedDeclared;
  into.push_back({std::move(loop)});
  if (withPrologue) {
    thir::IfStmt none{thir::binary(thir::BinOp::Le, n_, i32(0)), {}, {}};
    producerPrologue(none.then);
    into.push_back({std::move(none)});
  }
}

bool KernelLowering::WarpSpecialized::producerPrologue(thir::Body &into) {
  int64_t bytes = 0;
  for (const tile::Stmt *st : plan_.consumerPrologue)
    bytes += kl_.shared_.at(std::get<tile::Copy>(st->op).dst.buffer->id).layout.bytes();
  thir::Expr bar = i32(plan_.prologueBarrier());
  // The tile before's prologue is free once its consumers arrived (phase ordinal - 1; on the
  // first tile, parity 1 of the fresh barrier passes at once).
  if (tileOrdinal_)
    into.push_back(
        {thir::MbarrierWait{i32(plan_.prologueFreeBarrier()),
                            thir::binary(thir::BinOp::BitXor, rem(tileOrdinal_, 2), i32(1))}});
  into.push_back({thir::MbarrierArrive{bar, i32(bytes)}});
  for (size_t ci = 0; ci < plan_.consumerPrologue.size(); ++ci) {
    const tile::Stmt *st = plan_.consumerPrologue[ci];
    auto starts = tileStarts(std::get<tile::Copy>(st->op));
    if (!starts)
      return false;
    tmaBoxes(st, plan_.prologueTmaDims.at(ci), *starts, i32(0), bar, into);
  }
  return true;
}

bool KernelLowering::WarpSpecialized::lowerProducer(thir::Body &producer) {
  thir::IfStmt which{tma_, {}, {}};
  thir::IfStmt leader{eq(tid_, i32(consumers_)), {}, {}};
  if (prologueByTma_ && !persistent_ && !producerPrologue(leader.then))
    return false;
  forEachTile(false, nullptr, leader.then,
              [&](thir::Body &into) { producerLoop(true, into, prologueByTma_ && persistent_); });
  which.then.push_back({std::move(leader)});
  forEachTile(false, nullptr, which.otherwise,
              [&](thir::Body &into) { producerLoop(false, into, false); });
  producer.push_back({std::move(which)});
  return !kl_.failed_;
}

void KernelLowering::WarpSpecialized::splitRegisters(thir::Body &producer, thir::Body &consumer) {
  // Occupancy is known once the whole kernel is lowered: its shared memory and fragments.
  int64_t fragmentRegisters = 0;
  for (const auto &[id, vars] : kl_.slotVars_)
    fragmentRegisters += static_cast<int64_t>(vars.size());
  const int blocks =
      blocksPerSM(consumers_, kl_.out_.dynamicSharedBytes, fragmentRegisters, kl_.opts_.target);
  if (blocks > 1)
    kl_.out_.minBlocksPerSM = blocks;
  if (persistent_) {
    kl_.out_.persistentBlocksPerSM = blocks;
    // The balance assumes x = tile mod grid x: no rasterization, neither the default one (not
    // applied where rasterized_ holds) nor the program's use_swizzle.
    const tile::Body &body = kl_.k_.body;
    const bool xMajor =
        rasterized_ && std::none_of(body.begin(), body.end(), [](const tile::Stmt &st) {
          return std::holds_alternative<tile::UseSwizzle>(st.op);
        });
    kl_.out_.persistentBalanceX = xMajor && tripCountFollowsX(kl_.k_, next_, f_);
  }
  if (auto split = registerSplit(consumers_, blocks, kl_.opts_.target)) {
    producer.insert(producer.begin(), {thir::SetMaxNReg{false, split->first}});
    consumer.insert(consumer.begin(), {thir::SetMaxNReg{true, split->second}});
  }
}

} // namespace tilec::lower::detail
