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
#include "lower/LowerImpl.h"

#include "tileir/Arith.h"

#include <fmt/format.h>

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
  const int C = static_cast<int>(tileThreads_), S = plan.stages, G = plan.itersPerSlot;
  // The plan decided where turns are taken (two consumer warpgroups, more than one stage).
  const bool pingPong = plan.turns;
  const PipelinePlan::GemmOverlap *overlap = plan.overlap ? &*plan.overlap : nullptr;
  // Barrier 0 is the block's, 1 the consumers' (roles.elseGroup); a ping-pong's turns use 2, 3.
  const int kTurnBarrier = 2;
  // With the overlap, FlashAttention-3's turn: a warpgroup issues an iteration's first gemm and
  // the previous iteration's tail in one turn, then runs its softmax while the other issues.
  // The first iteration's turn holds its first gemm only, the tail after the loop its own.
  auto overlapTurn = [&](bool wait, bool pass) {
    return pingPong ? thir::Wgmma::Turn{kTurnBarrier, wait, pass} : thir::Wgmma::Turn{};
  };
  // A persistent block walks tiles blockIdx.x, + gridDim.x, ... of the grid; its iterations
  // go on through the rings from one tile to the next (`base` counts those of earlier tiles,
  // rounded up to whole slots), so that the producer fills the slots the consumers freed while
  // they finish the previous tile.
  const bool persistent = walksTiles(plan, opts_.persistence);
  // Consumer groups of C threads each (threads g C .. g C + C - 1 form group g), group g taking
  // the block's tiles g, g + groups, ... of those the producer loads in order: one group's
  // epilogue runs while the next group's tile streams through the rings.
  const int groups = persistent ? plan.tileGroups : 1;
  const int consumers = groups * C;
  out_.threads = consumers + kProducerThreads;
  // The consumers' prologue copies (attention's Q) by the producer's TMA, first, on a barrier of
  // their own: they load beside the first K/V tiles instead of through the consumers' registers.
  // A persistent block's consumers load them per tile as before.
  const bool prologueByTma = plan.producerLoadsPrologue() && !persistent;
  addTensorMaps(plan, prologueByTma);
  if (failed_)
    return;
  thir::Expr tid = thir::special(thir::Special::ThreadIdxX);
  thir::Expr tma = eq(thir::param(tmaEnabledParam_, DType::Int32), i32(1));
  // Ring r's barriers (PipelinePlan::barrierOffset); one ring unless an overlap splits them.
  const int rings = overlap ? plan.rings() : 1;
  auto ringOf = [&](const tile::Stmt *copy) { return overlap ? plan.ringOf(copy) : 0; };
  auto full = [&](int r, thir::Expr s) {
    return add(i32(plan.barrierOffset + 16 * S * r), mul(s, 8));
  };
  auto empty = [&](int r, thir::Expr s) {
    return add(i32(plan.barrierOffset + 16 * S * r + 8 * S), mul(s, 8));
  };
  {
    thir::IfStmt init{eq(tid, i32(0)), {}, {}};
    for (int r = 0; r < rings; ++r)
      for (int s = 0; s < S; ++s) {
        init.then.push_back({thir::MbarrierInit{full(r, i32(s)),
                                                thir::select(tma, i32(1), i32(kProducerThreads))}});
        init.then.push_back({thir::MbarrierInit{empty(r, i32(s)), i32(C)}});
      }
    if (prologueByTma)
      init.then.push_back({thir::MbarrierInit{i32(plan.prologueBarrier()), i32(1)}});
    init.then.push_back({thir::FenceMbarrierInit{}});
    out.push_back({std::move(init)});
    out.push_back({thir::Barrier{}});
  }
  // Block order matters to a GEMM's L2 reuse (at 8192^3 a row-major launch order reads the
  // operand panels from DRAM about again): without a use_swizzle the blocks are rasterized
  // in panels of 4 block columns, as gemm_relu asks for.
  // Only a GEMM's loop (copies and one gemm) is rasterized: attention's blocks of one head share
  // its K and V, and launching them together (as the grid does) keeps those in L2.
  bool rasterized = !plan.gemmInFlight;
  for (const tile::Stmt &st : k_.body)
    rasterized = rasterized || std::holds_alternative<tile::UseSwizzle>(st.op);
  size_t next = 0;
  while (next < k_.body.size()) {
    auto *f = std::get_if<tile::For>(&k_.body[next].op);
    if (f && pipelines_.count(f) && &pipelines_.at(f) == &plan)
      break;
    ++next;
  }
  if (next == k_.body.size())
    throw std::logic_error("the warp-specialized loop is not a statement of the kernel body");
  const tile::Stmt *loopStmt = &k_.body[next];
  const tile::For &f = std::get<tile::For>(loopStmt->op);
  Type i32t{DType::Int32};
  // What a block does before the loop, for each tile: the default rasterization, then the
  // statements before the loop (plan-pipelines checked they only bind values and clear
  // registers), except the consumer prologue, which only `consumer` code runs; then the loop's
  // bounds. Without persistence this runs once in every thread.
  thir::Expr begin, n;
  auto prelude = [&](bool consumer, thir::Body &into) {
    if (!rasterized)
      lowerUseSwizzle(tile::UseSwizzle{kDefaultSwizzlePanel, true}, into);
    for (size_t i = 0; i < next && !failed_; ++i)
      if (std::find(plan.consumerPrologue.begin(), plan.consumerPrologue.end(), &k_.body[i]) ==
          plan.consumerPrologue.end())
        lowerStmt(k_.body[i], into, {});
    for (const tile::Stmt *st : plan.consumerPrologue)
      if (consumer && !failed_)
        lowerStmt(*st, into, {});
    begin = lowerExpr(f.begins[0], {});
    thir::Expr extent = lowerExpr(f.extents[0], {});
    if (!begin || !extent)
      return false;
    begin = thir::cast(begin, i32t);
    int nVar = nextVar_++;
    into.push_back({thir::DeclVar{nVar, i32t, thir::cast(extent, i32t)}});
    n = thir::var(nVar, i32t);
    return !failed_;
  };
  thir::Expr base, gx, gy, tiles;
  if (persistent) {
    thir::Expr extent[3];
    for (size_t i = 0; i < 3; ++i) {
      extent[i] = i < k_.grid.size() ? lowerExpr(k_.grid[i], {}) : i32(1);
      if (!extent[i])
        return;
      int v = nextVar_++;
      out.push_back({thir::DeclVar{v, i32t, thir::cast(extent[i], i32t)}});
      extent[i] = thir::var(v, i32t);
    }
    gx = extent[0];
    gy = extent[1];
    int v = nextVar_++;
    out.push_back({thir::DeclVar{
        v, i32t,
        thir::binary(thir::BinOp::Mul, thir::binary(thir::BinOp::Mul, gx, gy), extent[2])}});
    tiles = thir::var(v, i32t);
  } else if (!prelude(false, out)) {
    return;
  }
  // `work` for each of the block's tiles (persistent), or once. With consumer groups, a group's
  // tiles only (`group` is its index; null in the producer, which loads every tile).
  auto forEachTile = [&](bool consumer, thir::Expr group, thir::Body &into, auto &&work) {
    if (!persistent) {
      work(into);
      return;
    }
    int baseVar = nextVar_++;
    into.push_back({thir::DeclVar{baseVar, i32t, i32(0)}});
    base = thir::var(baseVar, i32t);
    thir::ForStmt loop;
    loop.var = nextVar_++;
    loop.varType = i32t;
    thir::Expr block = thir::special(thir::Special::BlockIdxX),
               grid = thir::special(thir::Special::GridDimX);
    loop.begin = group ? add(block, thir::binary(thir::BinOp::Mul, group, grid)) : block;
    loop.end = tiles;
    loop.step = group ? mul(grid, groups) : grid;
    std::set<int> savedDeclared = declaredHere_;
    thir::Expr tile = thir::var(loop.var, i32t);
    bindPersistentTile(tile, gx, gy, loop.body);
    if (!prelude(consumer, loop.body))
      return;
    thir::Expr slots = G == 1 ? n : mul(quot(add(n, i32(G - 1)), G), G);
    // Every tile runs the same iterations (PipelinePlan::tileGroups): the tiles before this
    // one in the block's order (the other groups' included) used `slots` each.
    if (group)
      loop.body.push_back({thir::AssignVar{
          baseVar, thir::binary(thir::BinOp::Mul,
                                thir::binary(thir::BinOp::Div, sub(tile, block), grid), slots)}});
    work(loop.body);
    if (!group)
      loop.body.push_back({thir::AssignVar{baseVar, add(base, slots)}});
    declaredHere_ = savedDeclared;
    persistentTile_.reset();
    base = nullptr;
    into.push_back({std::move(loop)});
  };
  // Where iteration `it` of the current tile stands in the rings: its slot, the slot's phase
  // parity, its version of the buffers, and (G > 1) whether it is the first or the last
  // iteration of its slot.
  struct RingPosition {
    thir::Expr slot, phase, version, first, last;
  };
  auto position = [&](thir::Expr it) {
    thir::Expr all = base ? add(base, it) : it;
    thir::Expr round = G == 1 ? all : quot(all, G);
    RingPosition p{rem(round, S), rem(quot(round, S), 2), rem(all, S * G), nullptr, nullptr};
    if (G > 1) {
      p.first = eq(rem(it, G), i32(0));
      p.last = thir::binary(thir::BinOp::Or, eq(rem(it, G), i32(G - 1)), eq(it, sub(n, i32(1))));
    }
    return p;
  };
  // `stmts` only in the first (or last) iteration of a slot.
  auto onlyIf = [](thir::Expr cond, thir::Body stmts, thir::Body &into) {
    if (!cond) {
      for (thir::Stmt &st : stmts)
        into.push_back(std::move(st));
      return;
    }
    into.push_back({thir::IfStmt{cond, std::move(stmts), {}}});
  };

  // Where copy `c`'s tile starts in its source tensor, each dimension's index.
  auto tileStarts = [&](const tile::Copy &c) -> std::optional<std::vector<thir::Expr>> {
    std::vector<thir::Expr> starts;
    for (const tile::RegionDim &d : c.src.dims) {
      thir::Expr start = lowerExpr(d.begin, {});
      if (!start)
        return std::nullopt;
      starts.push_back(thir::cast(start, i32t));
    }
    return starts;
  };
  // One TMA box per panel of copy `st`'s tile, into its buffer's version at byte `version`, on
  // mbarrier `bar`.
  auto tmaBoxes = [&](const tile::Stmt *st, TmaDims kept, const std::vector<thir::Expr> &starts,
                      thir::Expr version, thir::Expr bar, thir::Body &into) {
    const tile::Copy &c = std::get<tile::Copy>(st->op);
    const SharedBuffer &sb = shared_.at(c.dst.buffer->id);
    const analysis::SharedLayout &l = sb.layout;
    int64_t boxCols = l.panelBytes / l.elementBytes;
    for (int64_t p = 0; p * l.panelBytes < l.rowBytes; ++p) {
      // Innermost first: the tile's columns of this panel, then the other dimensions.
      std::vector<thir::Expr> coords;
      for (size_t d = starts.size(); d-- > 0;)
        coords.push_back(d == kept.col && p > 0 ? add(starts[d], i32(p * boxCols)) : starts[d]);
      into.push_back(
          {thir::TmaLoad{tensorMapOf_.at(st), std::move(coords),
                         add(i32(sb.offset + p * l.rows * l.panelBytes), version), bar}});
    }
  };

  thir::IfStmt roles{thir::binary(thir::BinOp::Ge, tid, i32(consumers)), {}, {}};
  roles.elseGroup = thir::SyncGroup{1, consumers};
  // ---- Producer ----------------------------------------------------------------------------
  thir::Body &producer = roles.then;
  auto producerLoop = [&](bool useTma, thir::Body &into) {
    thir::ForStmt loop = countingLoop(nextVar_++, n);
    thir::Expr it = thir::var(loop.var, i32t);
    RingPosition at = position(it);
    thir::Expr slot = at.slot;
    bind(*f.vars[0], add(begin, it));
    std::set<int> savedDeclared = declaredHere_;
    for (int ring = 0; ring < rings; ++ring) {
      int64_t bytes = 0;
      for (const tile::Stmt *st : plan.copies)
        if (ringOf(st) == ring)
          bytes += shared_.at(std::get<tile::Copy>(st->op).dst.buffer->id).layout.bytes();
      thir::Body enter = {{thir::MbarrierWait{
          empty(ring, slot), thir::binary(thir::BinOp::BitXor, at.phase, i32(1))}}};
      if (useTma) {
        // The slot's bytes: its G iterations' tiles, fewer in a last slot the loop does not fill.
        thir::Expr tx = i32(bytes * G);
        if (G > 1)
          tx = mul(thir::binary(thir::BinOp::Min, i32(G), sub(n, it)), bytes);
        enter.push_back({thir::MbarrierArrive{full(ring, slot), tx}});
      }
      onlyIf(at.first, std::move(enter), loop.body);
      if (ring == 0)
        for (const tile::Stmt *l : plan.lets)
          lowerStmt(*l, loop.body, {});
      for (size_t ci = 0; ci < plan.copies.size(); ++ci) {
        const tile::Stmt *st = plan.copies[ci];
        if (ringOf(st) != ring)
          continue;
        const tile::Copy &c = std::get<tile::Copy>(st->op);
        const SharedBuffer &sb = shared_.at(c.dst.buffer->id);
        const analysis::SharedLayout &l = sb.layout;
        thir::Expr version = mul(at.version, l.bytes());
        const TmaDims kept = plan.tmaDims.at(ci);
        auto starts = tileStarts(c);
        if (!starts)
          return;
        if (useTma) {
          tmaBoxes(st, kept, *starts, version, full(ring, slot), loop.body);
        } else {
          stageOffset_[c.dst.buffer->id] = version;
          copyElementwise(c, kept, *starts, sub(tid, i32(consumers)), loop.body);
          stageOffset_.erase(c.dst.buffer->id);
        }
      }
      if (!useTma)
        onlyIf(at.last,
               {{thir::FenceProxyAsync{}}, {thir::MbarrierArrive{full(ring, slot), nullptr}}},
               loop.body);
    }
    declaredHere_ = savedDeclared;
    into.push_back({std::move(loop)});
  };
  thir::IfStmt which{tma, {}, {}};
  thir::IfStmt leader{eq(tid, i32(consumers)), {}, {}};
  if (prologueByTma) {
    int64_t bytes = 0;
    for (const tile::Stmt *st : plan.consumerPrologue)
      bytes += shared_.at(std::get<tile::Copy>(st->op).dst.buffer->id).layout.bytes();
    thir::Expr bar = i32(plan.prologueBarrier());
    leader.then.push_back({thir::MbarrierArrive{bar, i32(bytes)}});
    for (size_t ci = 0; ci < plan.consumerPrologue.size(); ++ci) {
      const tile::Stmt *st = plan.consumerPrologue[ci];
      auto starts = tileStarts(std::get<tile::Copy>(st->op));
      if (!starts)
        return;
      tmaBoxes(st, plan.prologueTmaDims.at(ci), *starts, i32(0), bar, leader.then);
    }
  }
  forEachTile(false, nullptr, leader.then, [&](thir::Body &into) { producerLoop(true, into); });
  which.then.push_back({std::move(leader)});
  forEachTile(false, nullptr, which.otherwise,
              [&](thir::Body &into) { producerLoop(false, into); });
  producer.push_back({std::move(which)});
  if (failed_)
    return;

  // ---- Consumers ---------------------------------------------------------------------------
  thir::Body &consumer = roles.otherwise;
  barrierThreads_ = C;
  if (!persistent) {
    // Without tensor maps (tilec_tma 0) the consumers load the prologue themselves.
    thir::Body load;
    for (const tile::Stmt *st : plan.consumerPrologue)
      if (!failed_)
        lowerStmt(*st, load, {});
    if (prologueByTma)
      consumer.push_back({thir::IfStmt{
          tma, {{thir::MbarrierWait{i32(plan.prologueBarrier()), i32(0)}}}, std::move(load)}});
    else
      consumer.insert(consumer.end(), std::make_move_iterator(load.begin()),
                      std::make_move_iterator(load.end()));
  }
  if (failed_)
    return;
  const tile::Gemm *inFlight = nullptr;
  if (plan.gemmInFlight)
    for (const tile::Stmt &st : f.body)
      if (auto *g = std::get_if<tile::Gemm>(&st.op); g && !g->clearAccum && isOnChip(g->c.buffer) &&
                                                     fragmentLayouts_.at(g->c.buffer->id).warpgroup)
        inFlight = g;
  auto consumerTile = [&](thir::Body &into) {
    std::optional<Interval> r;
    auto b0 = tile::asConstInt(f.begins[0]), n0 = tile::asConstInt(f.extents[0]);
    if (b0 && n0)
      r = Interval{*b0, *b0 + std::max<int64_t>(*n0 - 1, 0)};
    std::set<const tile::Stmt *> issued(plan.copies.begin(), plan.copies.end());
    if (overlap)
      issued.insert(overlap->rotated.begin(), overlap->rotated.end());
    // Ping-pong (FlashAttention-3's scheduler barriers): a warpgroup's turn runs from its
    // last gemm of one iteration to its first gemm of the next, so that the tensor cores run
    // one warpgroup's gemms back to back while the other computes.
    std::vector<const tile::Stmt *> gemms;
    for (const tile::Stmt &st : f.body)
      if (std::holds_alternative<tile::Gemm>(st.op))
        gemms.push_back(&st);
    // The buffers of the ring read in iteration `it`: its slot's versions.
    // Operands the iteration computes itself alternate between their two versions.
    auto atSlotOf = [&](thir::Expr iteration) {
      for (const tile::Stmt *st : plan.copies) {
        const tile::BufferPtr &b = std::get<tile::Copy>(st->op).dst.buffer;
        stageOffset_[b->id] = mul(position(iteration).version, shared_.at(b->id).layout.bytes());
      }
      for (int id : plan.producedOperands)
        stageOffset_[id] = mul(rem(iteration, 2), shared_.at(id).layout.bytes());
    };
    auto leaveSlots = [&] {
      for (const tile::Stmt *st : plan.copies)
        stageOffset_.erase(std::get<tile::Copy>(st->op).dst.buffer->id);
      for (int id : plan.producedOperands)
        stageOffset_.erase(id);
    };
    // Overlap: the tail of iteration it - 1 (on that iteration's slot), issued behind this
    // iteration's gemm, which the wait after it leaves in flight no longer.
    // With two rings the tail's copies have their own: the tail waits for its slot, and the
    // first ring's slot is free once the gemm the tail is issued behind completed.
    const int lateRing = rings - 1;
    auto waitLate = [&](thir::Expr iteration, thir::Body &body) {
      if (rings > 1) {
        RingPosition at = position(iteration);
        body.push_back({thir::MbarrierWait{full(lateRing, at.slot), at.phase}});
      }
    };
    auto releaseEarly = [&](thir::Expr it, thir::Body &body) {
      if (rings > 1)
        body.push_back({thir::MbarrierArrive{empty(0, position(it).slot), nullptr}});
    };
    auto issueRotated = [&](thir::Expr it, thir::Body &body) {
      waitLate(sub(it, i32(1)), body);
      atSlotOf(sub(it, i32(1)));
      wgmmaPending_ = 2;
      for (const tile::Stmt *st : overlap->rotated) {
        turn_ = st == &overlap->gemm() ? overlapTurn(false, true) : thir::Wgmma::Turn{};
        lowerStmt(*st, body, {});
      }
      turn_ = {};
      wgmmaPending_ = 0;
      atSlotOf(it);
      body.push_back({thir::WgmmaWait{
          1, slotVars_.at(std::get<tile::Gemm>(overlap->issueAfter->op).c.buffer->id)}});
      releaseEarly(it, body);
    };
    // Without a fence ptxas moves the wait for the tail's gemm up, above the softmax it was to
    // overlap (64 of flash_attention's 66 exponentials ran after it); with a CTA fence before
    // the wait all 66 run before it (docs/results/sass-overlap-pins-2026-12-03.txt).
    auto waitRotated = [&](thir::Expr it, thir::Body &body) {
      body.push_back({thir::FenceCta{}});
      body.push_back({thir::WgmmaWait{
          0, slotVars_.at(std::get<tile::Gemm>(overlap->gemm().op).c.buffer->id)}});
      body.push_back(
          {thir::MbarrierArrive{empty(lateRing, position(sub(it, i32(1))).slot), nullptr}});
    };
    // Iteration `it`'s statements (the producer's copies aside). With the overlap, the first
    // iteration (`peeled`, before the loop) runs without the tail, which the next one runs;
    // the others run the previous tail behind their own gemm.
    auto chainsIntoNext = [&](size_t i) {
      auto *g = std::get_if<tile::Gemm>(&f.body[i].op);
      if (!g)
        return false;
      for (size_t j = i + 1; j < f.body.size(); ++j) {
        if (issued.count(&f.body[j]))
          continue;
        auto *next = std::get_if<tile::Gemm>(&f.body[j].op);
        return next && !next->clearAccum && next->c.buffer == g->c.buffer;
      }
      return false;
    };
    auto lowerIteration = [&](thir::Expr it, bool peeled, thir::Body &body) {
      RingPosition at = position(it);
      onlyIf(at.first, {{thir::MbarrierWait{full(0, at.slot), at.phase}}}, body);
      atSlotOf(it);
      bind(*f.vars[0], add(begin, it), r);
      // With G iterations per slot only a slot's first iteration releases anything: the others
      // leave their groups in flight (wait_group G is no wait) and the first waits for all but
      // its own group before it releases the previous slot.
      wgmmaPending_ = inFlight ? G : 0;
      int pending = wgmmaPending_;
      for (size_t i = 0; i < f.body.size(); ++i) {
        const tile::Stmt &st = f.body[i];
        if (issued.count(&st) || failed_)
          continue;
        // A gemm followed by one into the same accumulator (MLA's Q@K^T then Q_pe@K_pe^T)
        // leaves its group in flight: the tensor cores order the two, and the second one's
        // wait covers both, so they run back to back instead of draining in between.
        wgmmaPending_ = chainsIntoNext(i) ? std::max(pending, 1) : pending;
        if (overlap && !peeled && &st == overlap->waitBefore)
          waitRotated(it, body);
        turn_ = {};
        if (overlap && &st == overlap->issueAfter)
          turn_ = overlapTurn(true, peeled);
        else if (pingPong && !overlap && !gemms.empty() &&
                 (&st == gemms.front() || &st == gemms.back()))
          turn_ = {kTurnBarrier, /*wait=*/&st == gemms.back(), /*pass=*/&st == gemms.front()};
        const bool issuesRotated = overlap && !peeled && &st == overlap->issueAfter;
        if (issuesRotated)
          wgmmaPending_ = 1;
        lowerStmt(st, body, {});
        if (issuesRotated) {
          wgmmaPending_ = pending = 0;
          issueRotated(it, body);
        } else if (overlap && peeled && &st == overlap->issueAfter) {
          releaseEarly(it, body);
        }
      }
      if (overlap && !peeled && !overlap->waitBefore)
        waitRotated(it, body);
      turn_ = {};
      wgmmaPending_ = 0;
    };
    thir::ForStmt loop = countingLoop(nextVar_++, n);
    thir::Expr it = thir::var(loop.var, i32t);
    if (overlap) {
      // No branch on the first iteration inside the loop: ptxas then keeps each wgmma wait
      // where it stands rather than early in the softmax.
      thir::IfStmt first{thir::binary(thir::BinOp::Gt, n, i32(0)), {}, {}};
      lowerIteration(i32(0), /*peeled=*/true, first.then);
      into.push_back({std::move(first)});
      loop.begin = i32(1);
    }
    lowerIteration(it, /*peeled=*/false, loop.body);
    RingPosition at = position(it);
    if (overlap) {
      // The slot is released by the next iteration, once this one's last gemm completed.
    } else if (inFlight) {
      // The group of iteration it - 1 has completed (wait_group 1, in the wgmma or after it):
      // when that was the last iteration of the previous slot, the slot is free.
      thir::Expr previous = rem(add(at.slot, i32(S - 1)), S);
      thir::Expr cond = thir::binary(thir::BinOp::Gt, it, i32(0));
      if (at.first)
        cond = thir::binary(thir::BinOp::And, at.first, cond);
      thir::Body release;
      if (G > 1)
        release.push_back({thir::WgmmaWait{1, slotVars_.at(inFlight->c.buffer->id)}});
      release.push_back({thir::MbarrierArrive{empty(0, previous), nullptr}});
      loop.body.push_back({thir::IfStmt{cond, std::move(release), {}}});
    } else {
      // Nothing of this slot is read any more (wgmma waited for its group).
      onlyIf(at.last, {{thir::MbarrierArrive{empty(0, at.slot), nullptr}}}, loop.body);
    }
    leaveSlots();
    // A turn that spans iterations is taken before the first and handed over after the last.
    // Consumer groups take turns over whole main loops: a group waits on the full barriers of
    // its tile's slots only after the other group waited on those of the tile before, so that
    // a slot's barrier is never two phases behind the one a group waits for (the parity
    // would not tell them apart).
    const bool spanning = (pingPong && !overlap && gemms.size() > 1) || groups > 1;
    if (spanning)
      into.push_back({thir::WarpgroupTurn{kTurnBarrier, /*pass=*/false}});
    into.push_back({std::move(loop)});
    if (spanning)
      into.push_back({thir::WarpgroupTurn{kTurnBarrier, /*pass=*/true}});
    if (overlap) {
      // The last iteration's tail, then its slot is free.
      thir::IfStmt tail{thir::binary(thir::BinOp::Gt, n, i32(0)), {}, {}};
      thir::Expr lastIt = sub(n, i32(1));
      waitLate(lastIt, tail.then);
      atSlotOf(lastIt);
      for (const tile::Stmt *st : overlap->rotated) {
        turn_ = st == &overlap->gemm() ? overlapTurn(true, true) : thir::Wgmma::Turn{};
        lowerStmt(*st, tail.then, {});
      }
      turn_ = {};
      leaveSlots();
      tail.then.push_back({thir::MbarrierArrive{empty(lateRing, position(lastIt).slot), nullptr}});
      into.push_back({std::move(tail)});
    }
    if (inFlight) {
      into.push_back({thir::WgmmaWait{0, slotVars_.at(inFlight->c.buffer->id)}});
      // A persistent block's next tile goes on through the rings: the last slot is free now.
      if (persistent) {
        RingPosition last = position(sub(n, i32(1)));
        into.push_back({thir::IfStmt{thir::binary(thir::BinOp::Gt, n, i32(0)),
                                     {{thir::MbarrierArrive{empty(0, last.slot), nullptr}}},
                                     {}}});
      }
    }
    for (size_t i = next + 1; i < k_.body.size() && !failed_; ++i)
      lowerStmt(k_.body[i], into, {});
  };
  // Ping-pong: the second warpgroup gives the first its first turn; after the last tile the
  // first takes the turn the second handed over last, so that no arrival is left over.
  auto warpgroup = [&](int w) { return eq(quot(tid, 128), i32(w)); };
  if (pingPong || groups > 1)
    consumer.push_back(
        {thir::IfStmt{warpgroup(1), {{thir::WarpgroupTurn{kTurnBarrier, /*pass=*/true}}}, {}}});
  // A group numbers its threads from 0 and synchronizes with nobody: plan-pipelines allowed
  // groups only where the consumers compute each tile apart (nothing shared, no barrier).
  thir::Expr group = groups > 1 ? quot(tid, C) : nullptr;
  if (groups > 1)
    thread_ = thir::binary(thir::BinOp::Mod, tid, i32(C));
  forEachTile(true, group, consumer, consumerTile);
  thread_ = tid;
  if (failed_)
    return;
  if (groups > 1) {
    // The group that did not take the last turn of the block's tiles takes the one handed
    // over last: group 0 after an even number of tiles, group 1 after an odd one.
    thir::Expr block = thir::special(thir::Special::BlockIdxX),
               grid = thir::special(thir::Special::GridDimX);
    thir::Expr count =
        thir::binary(thir::BinOp::Div, add(sub(tiles, block), sub(grid, i32(1))), grid);
    consumer.push_back({thir::IfStmt{eq(rem(add(count, group), 2), i32(0)),
                                     {{thir::WarpgroupTurn{kTurnBarrier, /*pass=*/false}}},
                                     {}}});
  }
  if (groups > 1 && sharesMemory(consumer))
    throw std::logic_error("consumer groups on their own tiles synchronize or share memory");
  if (pingPong)
    consumer.push_back(
        {thir::IfStmt{warpgroup(0), {{thir::WarpgroupTurn{kTurnBarrier, /*pass=*/false}}}, {}}});
  barrierThreads_ = 0;
  // Occupancy is known once the whole kernel is lowered: its shared memory and fragments.
  int64_t fragmentRegisters = 0;
  for (const auto &[id, vars] : slotVars_)
    fragmentRegisters += static_cast<int64_t>(vars.size());
  const int blocks =
      blocksPerSM(consumers, out_.dynamicSharedBytes, fragmentRegisters, opts_.target);
  if (blocks > 1)
    out_.minBlocksPerSM = blocks;
  if (persistent)
    out_.persistentBlocksPerSM = blocks;
  if (auto split = registerSplit(consumers, blocks, opts_.target)) {
    producer.insert(producer.begin(), {thir::SetMaxNReg{false, split->first}});
    consumer.insert(consumer.begin(), {thir::SetMaxNReg{true, split->second}});
  }
  out.push_back({std::move(roles)});
}

} // namespace tilec::lower::detail
