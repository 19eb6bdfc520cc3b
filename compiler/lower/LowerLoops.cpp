// Loops: a serial loop (unrolled where its loads can stay in flight) and a Parallel loop
// distributed over the threads by its layout.
#include "lower/LowerImpl.h"

#include "tileir/OpInterface.h"

#include <functional>

namespace tilec::lower::detail {

void KernelLowering::lowerFor(const tile::Stmt &s, const tile::For &f, thir::Body &out,
                              const LaneContext &lc) {
  if (f.kind == tile::LoopKind::Parallel) {
    if (inParallel_) {
      unsupported(s.loc, "nested Parallel loops");
      return;
    }
    if (!lowerFragmentParallel(s, f, out))
      lowerParallel(s, f, out);
  } else {
    if (f.kind == tile::LoopKind::Pipelined && pipelines_.count(&f) && lc.lanes == 1)
      lowerPipelined(s, f, out);
    else
      lowerSerial(s, f, out, lc);
  }
}

// A serial loop of a few per-thread statements that reads global memory runs several iterations
// at a time (kLoadUnroll or more), so that their loads are in flight together rather than one
// latency per iteration (as nvcc unrolls such a loop of a CUDA kernel): MLA decode's combine of
// 64 splits waited for one partial row per iteration. A loop of at most kMaxFullUnroll iterations
// and kFullUnrollStatements statements in all is unrolled completely, every load in flight at once:
// the combine of 32 splits then took 6.7-7.2 us instead of 11.7 at batch 1. Both bounds are
// measured (docs/results.md, 2026-12-05): unrolled completely, the combine's 64 splits x 5
// statements kept 320 loaded values live and spilled (51 us instead of 12-20), and its two
// 64-iteration loops of one statement alone ran faster at batch 1 (17.7 us against 19.6) but
// slower at batch 8 (69 against 51). A longer loop runs as many iterations at a time as those
// bounds allow, up to 32: the 64-split combine's three loops by 32.
namespace {
constexpr int kLoadUnroll = 8;
constexpr int64_t kMaxUnrolledStatements = 32;
constexpr int64_t kMaxFullUnroll = 32;
constexpr int64_t kFullUnrollStatements = 160;

/// The statements one thread runs for one pass over `body` (a Parallel loop's elements divided
/// over `threads`; eight copies of a large body would only grow the code), or nullopt where it
/// runs a tile op, a barrier, a software pipeline or a loop whose count is not a constant.
/// `readsGlobal` is set where it reads a global tensor.
std::optional<int64_t> statementsPerThread(const tile::Body &body, int64_t threads,
                                           bool &readsGlobal) {
  int64_t total = 0;
  for (const tile::Stmt &st : body) {
    for (const tile::Expr *e : tile::operandsOf(st).exprs)
      tile::forEachNode(*e, [&](const tile::Node &n) {
        auto *l = std::get_if<tile::Load>(&n.op);
        readsGlobal = readsGlobal || (l && l->buffer->scope == tile::Scope::Global);
      });
    int64_t here = 1;
    if (auto *f = std::get_if<tile::For>(&st.op)) {
      if (f->kind == tile::LoopKind::Pipelined || f->step)
        return std::nullopt;
      int64_t count = 1;
      for (const tile::Expr &e : f->extents) {
        auto n = tile::asConstInt(e);
        if (!n)
          return std::nullopt;
        count = std::min(count * std::max<int64_t>(*n, 1), int64_t{1} << 40);
      }
      if (f->kind == tile::LoopKind::Parallel)
        count = (count + threads - 1) / threads;
      auto inner = statementsPerThread(f->body, threads, readsGlobal);
      if (!inner)
        return std::nullopt;
      here = count * *inner;
    } else if (auto *i = std::get_if<tile::If>(&st.op)) {
      auto then = statementsPerThread(i->then, threads, readsGlobal);
      auto otherwise = statementsPerThread(i->otherwise, threads, readsGlobal);
      if (!then || !otherwise)
        return std::nullopt;
      here += *then + *otherwise;
    } else if (!std::holds_alternative<tile::Let>(st.op) &&
               !std::holds_alternative<tile::Store>(st.op)) {
      return std::nullopt;
    }
    // Past the bound the exact count does not matter; capping it keeps the products small.
    total = std::min(total + here, kMaxUnrolledStatements + 1);
  }
  return total;
}

/// How a serial loop over `body`, `count` times, is unrolled: 0 not at all, -1 completely,
/// else by that factor.
int loadUnroll(const tile::Body &body, std::optional<int64_t> count, int64_t threads) {
  bool reads = false;
  auto statements = statementsPerThread(body, threads, reads);
  if (!count || *count < kLoadUnroll * 2 || !reads || !statements ||
      *statements > kMaxUnrolledStatements)
    return 0;
  if (*count <= kMaxFullUnroll && *count * *statements <= kFullUnrollStatements)
    return -1;
  // Longer loops: as many iterations at a time as the full unroll's bounds allow (a power of
  // two), at least kLoadUnroll.
  int factor = kLoadUnroll;
  while (factor * 2 <= kMaxFullUnroll && factor * 2 * *statements <= kFullUnrollStatements)
    factor *= 2;
  return factor;
}
} // namespace

void KernelLowering::lowerSerial(const tile::Stmt &s, const tile::For &f, thir::Body &out,
                                 const LaneContext &lc) {
  if (lc.lanes > 1) {
    unsupported(s.loc, "a loop inside a vectorized Parallel body");
    return;
  }
  thir::Expr begin = lowerExpr(f.begins[0], {}), extent = lowerExpr(f.extents[0], {});
  if (!begin || !extent)
    return;
  int counter = nextVar_++;
  thir::ForStmt loop;
  loop.var = counter;
  loop.varType = Type{DType::Int32};
  loop.begin = thir::constInt(0, DType::Int32);
  loop.end = thir::cast(extent, Type{DType::Int32});
  loop.step = thir::constInt(1, DType::Int32);
  loop.unroll = f.kind == tile::LoopKind::Unroll;
  if (f.kind == tile::LoopKind::Serial) {
    int unroll = loadUnroll(f.body, tile::asConstInt(f.extents[0]), tileThreads_);
    loop.unroll = loop.unroll || unroll < 0;
    if (unroll > 0)
      loop.unrollCount = unroll;
    batchedLoads_ = batchedLoads_ || unroll != 0;
  }
  thir::Expr it = thir::var(counter, Type{DType::Int32});
  thir::Expr value = f.step ? thir::binary(thir::BinOp::Mul, it,
                                           thir::cast(lowerExpr(f.step, {}), Type{DType::Int32}))
                            : it;
  value = thir::binary(thir::BinOp::Add, thir::cast(begin, Type{DType::Int32}), value);
  std::optional<Interval> r;
  auto b = tile::asConstInt(f.begins[0]), n = tile::asConstInt(f.extents[0]);
  if (b && n && !f.step)
    r = Interval{*b, *b + std::max<int64_t>(*n - 1, 0)};
  bind(*f.vars[0], value, r);
  const bool branches =
      !inParallel_ && (variesByThread(f.begins[0]) || variesByThread(f.extents[0]) ||
                       (f.step && variesByThread(f.step)));
  if (branches)
    threadVarying_.insert(f.vars[0]->id);
  threadBranches_ += branches;
  lowerBody(f.body, loop.body, lc);
  threadBranches_ -= branches;
  out.push_back({std::move(loop)});
}

void KernelLowering::lowerParallel(const tile::Stmt &s, const tile::For &f, thir::Body &out) {
  analysis::ParallelLayout plan = analysis::planParallelLoop(f, tileThreads_);
  // A per-thread variable declared outside and written inside is updated element by element.
  std::set<int> outerLets;
  for (const auto &[id, v] : letVars_)
    outerLets.insert(id);
  std::function<bool(const tile::Body &)> writesOuter = [&](const tile::Body &b) {
    for (const tile::Stmt &st : b) {
      if (auto *l = std::get_if<tile::Let>(&st.op); l && outerLets.count(l->var->id))
        return true;
      if (auto *sv = std::get_if<tile::Store>(&st.op); sv && sv->buffer->scope == tile::Scope::Var)
        return true;
    }
    return false;
  };
  if (writesOuter(f.body))
    plan.vector = 1;
  inParallel_ = true;
  int v = plan.vector;
  int64_t steps = plan.steps();
  int stepVar = nextVar_++;
  thir::ForStmt loop = countingLoop(stepVar, i32(steps));
  loop.unroll = steps <= 8;
  thir::Expr tid = thread();
  thir::Expr chunk =
      thir::binary(thir::BinOp::Add,
                   thir::binary(thir::BinOp::Mul, thir::var(stepVar, Type{DType::Int32}),
                                thir::constInt(plan.threads, DType::Int32)),
                   tid);
  thir::Expr flat = thir::binary(thir::BinOp::Mul, chunk, thir::constInt(v, DType::Int32));
  thir::Body *body = &loop.body;
  thir::IfStmt tailGuard;
  bool guarded = plan.chunks() % plan.threads != 0;
  if (guarded) {
    tailGuard.cond =
        thir::binary(thir::BinOp::Lt, chunk, thir::constInt(plan.chunks(), DType::Int32));
    body = &tailGuard.then;
  }
  // Loop variables from the flat index, row-major.
  auto bindVars = [&](thir::Expr flatIndex) {
    int64_t stride = 1;
    for (size_t d = f.vars.size(); d-- > 0;) {
      int64_t ext = *tile::asConstInt(f.extents[d]);
      thir::Expr x = flatIndex;
      if (stride != 1)
        x = thir::binary(thir::BinOp::FloorDiv, x, thir::constInt(stride, DType::Int32));
      if (d != 0)
        x = thir::binary(thir::BinOp::Mod, x, thir::constInt(ext, DType::Int32));
      bind(*f.vars[d], x, Interval{0, ext - 1});
      stride *= ext;
    }
  };
  std::set<int> savedDeclared = declaredHere_;
  if (v > 1) {
    // Vector path guard: every global access in bounds for all lanes, and aligned.
    std::vector<Access> accesses;
    gatherAccesses(f.body, accesses);
    LaneContext lc{v, f.vars.back()->id};
    bindVars(flat);
    // Identical conditions (the same access repeated) are tested once, and the rest combined
    // as a balanced tree: a body of thousands of accesses must not become an expression
    // thousands deep (every later stage recurses over expressions).
    std::vector<thir::Expr> conds;
    std::set<std::string> seen;
    auto conj = [&](thir::Expr c) {
      if (seen.insert(thir::printExpr(c, out_)).second)
        conds.push_back(c);
    };
    for (const Access &a : accesses) {
      bool moves = dependsOnLanesIndex(a.indices, lc);
      thir::Expr inb = inBounds(a, lc, moves ? v - 1 : 0, 0, IndexFacts::Grid);
      if (!inb)
        return;
      if (!std::holds_alternative<thir::ConstInt>(inb->op))
        conj(inb);
      if (moves && a.indices.size() > 1) {
        thir::Expr off = offset(a.buffer, a.indices, lc);
        conj(thir::binary(thir::BinOp::Eq, thir::binary(thir::BinOp::Mod, off, thir::constInt(v)),
                          thir::constInt(0)));
      }
    }
    thir::Expr ok = balancedAnd(conds);
    thir::Body fast;
    declaredHere_ = savedDeclared;
    lowerBody(f.body, fast, lc);
    for (auto it = vectorLets_.begin(); it != vectorLets_.end();)
      it = outerLets.count(*it) ? std::next(it) : vectorLets_.erase(it);
    if (!ok) {
      *body = std::move(fast);
    } else {
      thir::IfStmt split;
      split.cond = ok;
      split.then = std::move(fast);
      // Slow path: element by element with masks.
      int lane = nextVar_++;
      thir::ForStmt lanes = countingLoop(lane, i32(v));
      lanes.unroll = true;
      bindVars(thir::binary(thir::BinOp::Add, flat, thir::var(lane, Type{DType::Int32})));
      declaredHere_ = savedDeclared;
      lowerBody(f.body, lanes.body, {});
      split.otherwise.push_back({std::move(lanes)});
      body->push_back({std::move(split)});
    }
  } else {
    bindVars(flat);
    declaredHere_ = savedDeclared;
    lowerBody(f.body, *body, {});
  }
  declaredHere_ = savedDeclared;
  if (guarded)
    loop.body.push_back({std::move(tailGuard)});
  out.push_back({std::move(loop)});
  inParallel_ = false;
  // Per-element temporaries end with the loop.
  for (auto it = letVars_.begin(); it != letVars_.end();)
    it = outerLets.count(it->first) ? std::next(it) : letVars_.erase(it);
  layouts_.push_back({s.loc, plan});
}

} // namespace tilec::lower::detail
