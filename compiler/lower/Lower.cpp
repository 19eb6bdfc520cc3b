#include "lower/LowerImpl.h"

#include "support/IntMath.h"
#include "tileir/OpInterface.h"

#include <algorithm>
#include <fmt/format.h>

#include <stdexcept>

namespace tilec::lower {

namespace detail {

void collectAccesses(const tile::Expr &e, std::vector<Access> &out) {
  // Operands first: an access's indices are evaluated (and guarded) before the access.
  tile::forEachNode(
      e,
      [&](const tile::Node &n) {
        if (auto *l = std::get_if<tile::Load>(&n.op); l && l->buffer->scope == tile::Scope::Global)
          out.push_back({l->buffer, l->indices});
      },
      tile::WalkOrder::OperandsFirst);
}

std::optional<thir::Kernel> KernelLowering::run() {
  out_.name = k_.name;
  out_.threads = static_cast<int>(tileThreads_);
  for (const tile::Param &p : k_.params) {
    if (p.kind == tile::ParamKind::Tensor) {
      out_.params.push_back({p.tensor->name,
                             thir::ParamKind::Tensor,
                             p.tensor->dtype,
                             dtypeBytes(p.tensor->dtype),
                             {}});
    } else {
      int index = static_cast<int>(out_.params.size());
      out_.params.push_back({p.scalar->name, thir::ParamKind::Scalar, p.scalar->dtype, 0, {}});
      bind(*p.scalar, thir::param(index, p.scalar->dtype));
    }
  }
  for (const tile::VarPtr &d : k_.dims) {
    int index = static_cast<int>(out_.params.size());
    // A dimension may share its name with a parameter (`B: Tensor((B, N))`); thread IR names
    // each parameter once (its text form refers to them by name), so the dimension gets
    // underscores, as the header's launch function names it.
    std::string name = d->name;
    while (std::any_of(out_.params.begin(), out_.params.end(),
                       [&](const thir::Param &q) { return q.name == name; }))
      name += '_';
    out_.params.push_back({name, thir::ParamKind::Dim, DType::Int64, 0, {}});
    dimParams_[d->id] = index;
    bindings_[d->id] = {thir::cast(thir::param(index, DType::Int64), Type{DType::Int32}),
                        Interval{1, std::numeric_limits<int32_t>::max()}};
  }
  for (size_t i = 0; i < k_.grid.size() && i < 3; ++i) {
    out_.grid[i] = hostExpr(k_.grid[i]);
    if (!out_.grid[i])
      return std::nullopt;
  }
  // Tensor dimensions computed from the symbolic ones are checked at launch like those.
  for (const tile::Param &p : k_.params) {
    if (p.kind != tile::ParamKind::Tensor)
      continue;
    for (size_t d = 0; d < p.tensor->shape.size(); ++d) {
      const tile::Expr &e = p.tensor->shape[d];
      if (!tile::isComputedDim(e))
        continue;
      thir::Expr value = hostExpr(e);
      if (!value)
        return std::nullopt;
      out_.dimChecks.push_back(
          {value, fmt::format("{}'s dimension {} ({})", p.tensor->name, d, tile::printBare(e))});
    }
  }
  static constexpr thir::Special blockRegs[] = {thir::Special::BlockIdxX, thir::Special::BlockIdxY,
                                                thir::Special::BlockIdxZ};
  for (const tile::VarPtr &b : k_.blockIndices) {
    Interval r{0, std::numeric_limits<int32_t>::max() - 1};
    if (auto g = tile::asConstInt(k_.grid[b->index]))
      r.hi = *g - 1;
    bindings_[b->id] = {thir::special(blockRegs[b->index]), r};
  }
  // The thread's own indices; a warp-specialized kernel's consumers are threads 0 .. threads-1.
  const int64_t warp = opts_.target.warpSize;
  thir::Expr tid = thread();
  for (const tile::VarPtr &t : k_.threadIndices)
    switch (static_cast<tile::ThreadIndexKind>(t->index)) {
    case tile::ThreadIndexKind::Thread:
      bindings_[t->id] = {tid, Interval{0, tileThreads_ - 1}};
      break;
    case tile::ThreadIndexKind::Lane:
      bindings_[t->id] = {thir::binary(thir::BinOp::Mod, tid, i32(warp)), Interval{0, warp - 1}};
      break;
    case tile::ThreadIndexKind::Warp:
      bindings_[t->id] = {thir::binary(thir::BinOp::FloorDiv, tid, i32(warp)),
                          Interval{0, (tileThreads_ - 1) / warp}};
      break;
    }
  for (const tile::BufferPtr &b : k_.buffers) {
    if (b->scope == tile::Scope::Var) {
      int id = nextVar_++;
      varBuffers_[b->id] = id;
      thir::Expr init = b->initValue ? lowerExpr(b->initValue, {})
                                     : (isFloat(b->dtype) ? thir::constFloat(0.0, b->dtype)
                                                          : thir::constInt(0, b->dtype));
      if (!init)
        return std::nullopt;
      out_.body.push_back({thir::DeclVar{id, Type{b->dtype}, init}});
    }
  }
  if (!verifyFragmentLowering() || !checkRegisterLimit() || !declareFragments(out_.body))
    return std::nullopt;
  if (const PipelinePlan *ws = warpSpecializedLoop())
    lowerWarpSpecializedKernel(*ws, out_.body);
  else
    lowerBody(k_.body, out_.body, {});
  if (failed_ || !checkSharedLimit())
    return std::nullopt;
  // Loads unrolled to be in flight together need registers to land in; without launch bounds
  // ptxas sizes the kernel for full occupancy instead (the 64-split combine: 32 registers, its
  // loads one after another). Bounds that ask for fewer blocks per SM let it keep them.
  constexpr int64_t kBatchedLoadRegisters = 128;
  if (batchedLoads_ && out_.minBlocksPerSM == 0)
    out_.minBlocksPerSM = static_cast<int>(
        std::max<int64_t>(1, opts_.target.registersPerSM / (tileThreads_ * kBatchedLoadRegisters)));
  for (auto &[param, align] : paramAlign_)
    out_.params[param].alignBytes = std::max(out_.params[param].alignBytes, align);
  return std::move(out_);
}

bool KernelLowering::checkRegisterLimit() {
  // Fragments beyond the registers a thread may name could only live in local memory, which
  // defeats their purpose (and every fragment index is a register name).
  const int64_t limit = opts_.target.registersPerThread;
  int64_t total = 0, largest = 0;
  const tile::Buffer *big = nullptr;
  for (const tile::BufferPtr &b : k_.buffers) {
    auto it = fragmentLayouts_.find(b->id);
    if (it == fragmentLayouts_.end())
      continue;
    int64_t regs = (it->second.slots() * dtypeBytes(b->dtype) + 3) / 4;
    total += regs;
    if (regs > largest) {
      largest = regs;
      big = b.get();
    }
  }
  if (total <= limit)
    return true;
  diags_.error(big ? big->loc : k_.kernelLoc,
               fmt::format("kernel '{}' holds {} registers of fragments and local buffers per "
                           "thread ('{}' alone {}), more than the {} a thread can have; use "
                           "smaller tiles or more threads",
                           k_.name, total, big ? big->name : "", largest, limit));
  return false;
}

void KernelLowering::unsupported(SourceLoc loc, const std::string &what) {
  if (!failed_)
    diags_.error(loc, fmt::format("not supported yet: {}", what));
  failed_ = true;
}

void KernelLowering::bind(const tile::Var &v, thir::Expr e, std::optional<Interval> r) {
  bindings_[v.id] = {std::move(e), r};
}

thir::Expr KernelLowering::hostExpr(const tile::Expr &e) {
  if (auto c = tile::asConstInt(e))
    return thir::constInt(*c, DType::Int64);
  if (auto *r = std::get_if<tile::VarRef>(&e->op)) {
    if (auto it = dimParams_.find(r->var->id); it != dimParams_.end())
      return thir::param(it->second, DType::Int64);
  } else if (auto *b = std::get_if<tile::Binary>(&e->op)) {
    thir::Expr x = hostExpr(b->a), y = hostExpr(b->b);
    if (x && y && !isFloat(b->a->dtype))
      return thir::binary(mapBinOp(b->op), x, y);
  } else if (auto *c = std::get_if<tile::Cast>(&e->op)) {
    if (!c->reinterpret && !isFloat(e->dtype) && !isFloat(c->a->dtype))
      return hostExpr(c->a);
  }
  unsupported(e->loc, fmt::format("grid extent '{}' (grid extents are integer expressions of "
                                  "constants and symbolic dimensions)",
                                  tile::print(e)));
  return nullptr;
}

thir::Expr KernelLowering::widen(thir::Expr e, int lanes) {
  if (lanes > 1 && e->type.lanes == 1)
    return thir::broadcast(e, lanes);
  return e;
}

Interval valueRange(const tile::Expr &e,
                    const std::function<std::optional<Interval>(int)> &rangeOf) {
  if (auto c = tile::asConstInt(e))
    return {*c, *c};
  if (auto *r = std::get_if<tile::VarRef>(&e->op))
    return rangeOf(r->var->id).value_or(Interval{});
  if (auto *b = std::get_if<tile::Binary>(&e->op)) {
    Interval x = valueRange(b->a, rangeOf), y = valueRange(b->b, rangeOf);
    const int64_t big = std::numeric_limits<int64_t>::max() / 4;
    auto clamp = [&](int64_t v) { return std::max(-big, std::min(big, v)); };
    switch (b->op) {
    case tile::BinOp::Add:
      return {clamp(x.lo + y.lo), clamp(x.hi + y.hi)};
    case tile::BinOp::Sub:
      return {clamp(x.lo - y.hi), clamp(x.hi - y.lo)};
    case tile::BinOp::Mul:
      if (auto c = tile::asConstInt(b->b);
          c && *c >= 0 && *c < (1 << 30) && x.lo > -big / (1 << 30) && x.hi < big / (1 << 30))
        return {x.lo * *c, x.hi * *c};
      break;
    // `//` and `%` are floored (as in Python): by a positive constant d, x // d is monotonic and
    // x % d lies in [0, d - 1] whatever the sign of x.
    case tile::BinOp::FloorDiv:
      if (auto c = tile::asConstInt(b->b); c && *c > 0) {
        return {floorDiv(x.lo, *c), floorDiv(x.hi, *c)};
      }
      break;
    case tile::BinOp::Mod:
      if (auto c = tile::asConstInt(b->b); c && *c > 0) {
        if (x.lo >= 0 && x.hi < *c)
          return x;
        return {0, *c - 1};
      }
      break;
    default:
      break;
    }
  }
  return {};
}

Interval KernelLowering::range(const tile::Expr &e) {
  return valueRange(e, [&](int id) -> std::optional<Interval> {
    auto it = bindings_.find(id);
    return it != bindings_.end() ? it->second.range : std::nullopt;
  });
}

bool KernelLowering::indexesGridExtent(const tile::Expr &index, const tile::Expr &extent) {
  // Every way a block index is bound (the launch's blockIdx, a persistent block's tile, a
  // rasterized order) takes the values 0 .. grid extent - 1 along its axis.
  auto *i = std::get_if<tile::VarRef>(&index->op);
  auto *n = std::get_if<tile::VarRef>(&extent->op);
  if (!i || !n)
    return false;
  for (const tile::VarPtr &b : k_.blockIndices)
    if (b == i->var) {
      auto *g = std::get_if<tile::VarRef>(&k_.grid[b->index]->op);
      return g && g->var == n->var;
    }
  return false;
}

thir::Expr KernelLowering::inBounds(const Access &a, const LaneContext &lc, int extraLast,
                                    int spanLast, IndexFacts facts) {
  thir::Expr ok;
  auto conj = [&](thir::Expr c) { ok = ok ? thir::binary(thir::BinOp::And, ok, c) : c; };
  for (size_t d = 0; d < a.indices.size(); ++d) {
    Interval r = range(a.indices[d]);
    int extra = d + 1 == a.indices.size() ? extraLast : 0;
    int span = d + 1 == a.indices.size() ? spanLast : 0;
    auto shapeConst = tile::asConstInt(a.buffer->shape[d]);
    thir::Expr idx = lowerExpr(a.indices[d], lc, /*scalarIndex=*/true);
    if (!idx)
      return nullptr;
    idx = thir::cast(idx, Type{DType::Int64});
    if (r.lo + span < 0)
      conj(thir::binary(thir::BinOp::Ge,
                        span ? thir::binary(thir::BinOp::Add, idx, thir::constInt(span)) : idx,
                        thir::constInt(0)));
    if (facts == IndexFacts::Grid && extra == 0 &&
        indexesGridExtent(a.indices[d], a.buffer->shape[d]))
      continue;
    if (!shapeConst || r.hi + extra >= *shapeConst) {
      thir::Expr n = thir::cast(lowerExpr(a.buffer->shape[d], {}), Type{DType::Int64});
      conj(thir::binary(thir::BinOp::Lt, thir::binary(thir::BinOp::Add, idx, thir::constInt(extra)),
                        n));
    }
  }
  return ok ? ok : thir::constInt(1, DType::Bool);
}

thir::Expr KernelLowering::bytesInside(const Access &a, int vector, int elemBytes) {
  // The leading dimensions as inBounds checks them; the last one's start at 0 or after.
  thir::Expr ok;
  auto conj = [&](thir::Expr c) { ok = ok ? thir::binary(thir::BinOp::And, ok, c) : c; };
  size_t last = a.indices.size() - 1;
  thir::Expr remaining;
  for (size_t d = 0; d <= last; ++d) {
    thir::Expr idx = lowerExpr(a.indices[d], {}, /*scalarIndex=*/true);
    thir::Expr n = lowerExpr(a.buffer->shape[d], {});
    if (!idx || !n)
      return nullptr;
    idx = thir::cast(idx, Type{DType::Int64});
    n = thir::cast(n, Type{DType::Int64});
    if (range(a.indices[d]).lo < 0)
      conj(thir::binary(thir::BinOp::Ge, idx, thir::constInt(0)));
    if (d < last)
      conj(thir::binary(thir::BinOp::Lt, idx, n));
    else
      remaining = thir::binary(
          thir::BinOp::Min,
          thir::binary(thir::BinOp::Max, thir::binary(thir::BinOp::Sub, n, idx), thir::constInt(0)),
          thir::constInt(vector));
  }
  thir::Expr bytes = thir::cast(
      thir::binary(thir::BinOp::Mul, remaining, thir::constInt(elemBytes)), Type{DType::Int32});
  return ok ? thir::select(ok, bytes, thir::constInt(0, DType::Int32)) : bytes;
}

std::optional<std::pair<thir::Expr, thir::Expr>>
KernelLowering::sharedElement(const tile::BufferPtr &buf, const std::vector<tile::Expr> &idx) {
  std::vector<thir::Expr> index;
  for (const tile::Expr &i : idx) {
    thir::Expr x = lowerExpr(i, {}, /*scalarIndex=*/true);
    if (!x)
      return std::nullopt;
    index.push_back(thir::cast(x, Type{DType::Int32}));
  }
  thir::Expr ok = inBounds({buf, idx}, {}, 0, 0, IndexFacts::Grid);
  if (!ok)
    return std::nullopt;
  if (auto *c = std::get_if<thir::ConstInt>(&ok->op); c && c->value)
    ok = nullptr;
  return std::make_pair(sharedOffset(buf, index), ok);
}

thir::Expr KernelLowering::offset(const tile::BufferPtr &buf, const std::vector<tile::Expr> &idx,
                                  const LaneContext &lc) {
  thir::Expr off;
  for (size_t d = 0; d < idx.size(); ++d) {
    thir::Expr i = lowerExpr(idx[d], lc, /*scalarIndex=*/true);
    if (!i)
      return nullptr;
    i = thir::cast(i, Type{DType::Int64});
    if (off) {
      thir::Expr n = thir::cast(lowerExpr(buf->shape[d], {}), Type{DType::Int64});
      off = thir::binary(thir::BinOp::Add, thir::binary(thir::BinOp::Mul, off, n), i);
    } else {
      off = i;
    }
  }
  return off ? off : thir::constInt(0);
}

bool KernelLowering::dependsOnLanes(const tile::Expr &e, const LaneContext &lc) {
  if (lc.lanes == 1)
    return false;
  bool dep = false;
  tile::forEachNode(e, [&](const tile::Node &n) {
    if (auto *v = std::get_if<tile::VarRef>(&n.op))
      dep = dep || v->var->id == lc.innerVarId || vectorLets_.count(v->var->id);
  });
  return dep;
}

thir::Expr KernelLowering::lowerExpr(const tile::Expr &e, const LaneContext &lc, bool scalarIndex) {
  if (!knownTrue_.empty() && knownTrue_.count(e.get()))
    return thir::constInt(1, DType::Bool);
  LaneContext scalar = lc;
  if (scalarIndex || !dependsOnLanes(e, lc))
    scalar.lanes = 1;
  const LaneContext &c = scalar;
  return std::visit(
      [&](const auto &op) -> thir::Expr {
        using T = std::decay_t<decltype(op)>;
        if constexpr (std::is_same_v<T, tile::IntImm>) {
          return thir::constInt(op.value, e->dtype);
        } else if constexpr (std::is_same_v<T, tile::FloatImm>) {
          return thir::constFloat(op.value, e->dtype);
        } else if constexpr (std::is_same_v<T, tile::VarRef>) {
          if (auto it = letVars_.find(op.var->id); it != letVars_.end())
            return thir::var(it->second.first, it->second.second);
          if (auto it = bindings_.find(op.var->id); it != bindings_.end())
            return it->second.value;
          unsupported(e->loc, fmt::format("use of '{}' here", op.var->name));
          return nullptr;
        } else if constexpr (std::is_same_v<T, tile::Load>) {
          return lowerLoad(e, op, c);
        } else if constexpr (std::is_same_v<T, tile::Unary>) {
          if (e->dtype == DType::Float64 && !thir::hasFloat64(mapUnOp(op.op))) {
            unsupported(e->loc, fmt::format("{} on float64", tile::unOpName(op.op)));
            return nullptr;
          }
          thir::Expr a = lowerExpr(op.a, c);
          return a ? thir::unary(mapUnOp(op.op), a) : nullptr;
        } else if constexpr (std::is_same_v<T, tile::Binary>) {
          if (op.op == tile::BinOp::Pow && e->dtype == DType::Float64) {
            unsupported(e->loc, "pow on float64");
            return nullptr;
          }
          thir::Expr a = lowerExpr(op.a, c), b = lowerExpr(op.b, c);
          if (!a || !b)
            return nullptr;
          int lanes = std::max(a->type.lanes, b->type.lanes);
          return thir::binary(mapBinOp(op.op), widen(a, lanes), widen(b, lanes));
        } else if constexpr (std::is_same_v<T, tile::Select>) {
          thir::Expr cnd = lowerExpr(op.cond, c), a = lowerExpr(op.a, c), b = lowerExpr(op.b, c);
          if (!cnd || !a || !b)
            return nullptr;
          int lanes = std::max({cnd->type.lanes, a->type.lanes, b->type.lanes});
          return thir::select(widen(cnd, lanes), widen(a, lanes), widen(b, lanes));
        } else if constexpr (std::is_same_v<T, tile::Cast>) {
          thir::Expr a = lowerExpr(op.a, c);
          if (a && op.reinterpret)
            return thir::bitcast(a, Type{e->dtype, a->type.lanes});
          return a ? thir::cast(a, Type{e->dtype, a->type.lanes}) : nullptr;
        } else if constexpr (std::is_same_v<T, tile::Shuffle>) {
          thir::Expr v = lowerExpr(op.value, c), arg = lowerExpr(op.arg, c);
          if (!v || !arg)
            return nullptr;
          static constexpr thir::ShflMode modes[] = {thir::ShflMode::Xor, thir::ShflMode::Down,
                                                     thir::ShflMode::Up, thir::ShflMode::Idx};
          return thir::shfl(modes[static_cast<int>(op.kind)], v,
                            thir::cast(arg, Type{DType::Int32}));
        }
      },
      e->op);
}

thir::Expr KernelLowering::lowerLoad(const tile::Expr &e, const tile::Load &op,
                                     const LaneContext &lc) {
  const tile::BufferPtr &buf = op.buffer;
  if (buf->scope == tile::Scope::Var) {
    auto it = varBuffers_.find(buf->id);
    return thir::var(it->second, Type{buf->dtype});
  }
  if (isOnChip(buf))
    return fragmentRead(e, op);
  if (auto it = chunkLoads_.find(e.get()); it != chunkLoads_.end())
    return thir::extractLane(thir::var(it->second.first, it->second.second),
                             static_cast<int>(currentLane_));
  if (buf->scope == tile::Scope::Shared) {
    // analysis/ParallelLayout runs a loop that reads shared elements by its variable one element
    // at a time; an element the lanes share is read once (dependsOnLanes).
    if (lc.lanes > 1)
      throw std::logic_error("a lane-dependent shared read in a vectorized loop");
    auto at = sharedElement(buf, op.indices);
    if (!at)
      return nullptr;
    Type t{buf->dtype};
    const thir::SmemRegion region = sharedRegion(buf);
    if (!at->second)
      return thir::sharedLoad(at->first, t, region);
    // Out of the buffer reads as zero, as a global tensor's masked element does (from the
    // buffer's first element, so that the access stays in its region).
    thir::Expr zero =
        isFloat(buf->dtype) ? thir::constFloat(0.0, buf->dtype) : thir::constInt(0, buf->dtype);
    return thir::select(
        at->second,
        thir::sharedLoad(thir::select(at->second, at->first, i32(region.begin)), t, region), zero);
  }
  if (buf->scope != tile::Scope::Global)
    throw std::logic_error("a read of an unexpected buffer scope");
  int param = buf->paramIndex;
  thir::Expr off = offset(buf, op.indices, lc);
  if (!off)
    return nullptr;
  if (lc.lanes > 1) {
    // Fast path: the caller proved the whole vector in bounds and aligned.
    int align = lc.lanes * dtypeBytes(buf->dtype);
    noteAlign(param, align);
    return thir::globalLoad(param, off, Type{buf->dtype, lc.lanes}, align);
  }
  if (knownInBounds_.count(e.get()))
    return thir::globalLoad(param, off, Type{buf->dtype}, dtypeBytes(buf->dtype));
  return maskedGlobalLoad(buf, op.indices, off, lc);
}

thir::Expr KernelLowering::maskedGlobalLoad(const tile::BufferPtr &buf,
                                            const std::vector<tile::Expr> &indices, thir::Expr off,
                                            const LaneContext &lc) {
  const int param = buf->paramIndex;
  thir::Expr ok = inBounds({buf, indices}, lc, 0, 0, IndexFacts::Grid);
  if (!ok)
    return nullptr;
  if (auto *ci = std::get_if<thir::ConstInt>(&ok->op); ci && ci->value)
    return thir::globalLoad(param, off, Type{buf->dtype}, dtypeBytes(buf->dtype));
  // Out-of-bounds loads read element 0 (always valid: dims are positive) and yield 0.
  thir::Expr safe = thir::select(ok, off, thir::constInt(0));
  thir::Expr v = thir::globalLoad(param, safe, Type{buf->dtype}, dtypeBytes(buf->dtype));
  thir::Expr zero =
      isFloat(buf->dtype) ? thir::constFloat(0.0, buf->dtype) : thir::constInt(0, buf->dtype);
  return thir::select(ok, v, zero);
}

void KernelLowering::noteAlign(int param, int align) {
  int &a = paramAlign_[param];
  a = std::max(a, align);
}

void KernelLowering::lowerBody(const tile::Body &body, thir::Body &out, const LaneContext &lc) {
  for (const tile::Stmt &s : body) {
    if (failed_)
      return;
    lowerStmt(s, out, lc);
  }
}

void KernelLowering::lowerStmt(const tile::Stmt &s, thir::Body &out, const LaneContext &lc) {
  size_t before = out.size();
  std::visit(tile::Overloaded{
                 [&](const tile::Let &let) { lowerLet(let, out, lc); },
                 [&](const tile::Store &st) { lowerStore(s, st, out, lc); },
                 [&](const tile::For &f) {
                   lowerFor(s, f, out, lc);
                   finishDeferredSums(s, out);
                 },
                 [&](const tile::If &i) { lowerIf(s, i, out, lc); },
                 [&](const tile::Copy &c) { lowerCopy(s, c, out); },
                 [&](const tile::Fill &f) { lowerFill(s, f, out); },
                 [&](const tile::Reduce &r) { lowerReduce(s, r, out); },
                 [&](const tile::Gemm &g) { lowerGemm(s, g, out); },
                 [&](const tile::UseSwizzle &u) { lowerUseSwizzle(u, out); },
                 [&](const tile::Atomic &a) { lowerAtomic(s, a, out); },
                 [&](const tile::Cumsum &c) { lowerCumsum(s, c, out); },
                 [&](const tile::Print &p) { lowerPrint(s, p, out, lc); },
                 // Every shared tile of 128-byte lines is swizzled already.
                 [&](const tile::AnnotateLayout &) {},
                 [&](const tile::SyncThreads &) { out.push_back(barrier()); },
             },
             s.op);
  checkFloat8Conversions(s, out, before);
}

bool KernelLowering::variesByThread(const tile::Expr &e) const {
  bool varies = false;
  tile::forEachNode(e, [&](const tile::Node &n) {
    if (auto *r = std::get_if<tile::VarRef>(&n.op))
      varies = varies || r->var->kind == tile::VarKind::ThreadIndex ||
               threadVarying_.count(r->var->id) > 0;
  });
  return varies;
}

void KernelLowering::lowerLet(const tile::Let &let, thir::Body &out, const LaneContext &lc) {
  thir::Expr v = lowerExpr(let.value, lc);
  if (!v)
    return;
  if (!inParallel_ && (threadBranches_ > 0 || variesByThread(let.value)))
    threadVarying_.insert(let.var->id);
  Type t{let.var->dtype, v->type.lanes};
  auto it = letVars_.find(let.var->id);
  if (it == letVars_.end() || !declaredHere_.count(let.var->id)) {
    int id = nextVar_++;
    letVars_[let.var->id] = {id, t};
    declaredHere_.insert(let.var->id);
    if (t.lanes > 1)
      vectorLets_.insert(let.var->id);
    out.push_back({thir::DeclVar{id, t, thir::cast(v, t)}});
  } else {
    Type have = it->second.second;
    if (have.lanes != t.lanes)
      v = widen(v, have.lanes);
    out.push_back({thir::AssignVar{it->second.first, thir::cast(v, have)}});
  }
}

void KernelLowering::lowerIf(const tile::Stmt &s, const tile::If &i, thir::Body &out,
                             const LaneContext &lc) {
  thir::Expr c = lowerExpr(i.cond, {});
  if (!c)
    return;
  if (lc.lanes > 1) {
    unsupported(s.loc, "a branch inside a vectorized Parallel body");
    return;
  }
  thir::IfStmt is;
  is.cond = c;
  const bool branches = !inParallel_ && variesByThread(i.cond);
  threadBranches_ += branches;
  lowerBody(i.then, is.then, lc);
  lowerBody(i.otherwise, is.otherwise, lc);
  threadBranches_ -= branches;
  out.push_back({std::move(is)});
}

void KernelLowering::lowerStore(const tile::Stmt &s, const tile::Store &st, thir::Body &out,
                                const LaneContext &lc) {
  const tile::BufferPtr &buf = st.buffer;
  if (buf->scope == tile::Scope::Var) {
    thir::Expr v = lowerExpr(st.value, {});
    if (v)
      out.push_back({thir::AssignVar{varBuffers_.at(buf->id), thir::cast(v, Type{buf->dtype})}});
    return;
  }
  if (isOnChip(buf)) {
    if (lc.lanes > 1) {
      unsupported(s.loc, "a fragment write in a vectorized loop");
      return;
    }
    thir::Expr v = lowerExpr(st.value, {});
    if (v)
      fragmentWrite(s, st, thir::cast(v, Type{buf->dtype}), out);
    return;
  }
  if (buf->scope == tile::Scope::Shared) {
    // One element, by this thread (per-thread code, or a Parallel iteration that is not
    // vectorized); insert-barriers orders it against other threads' accesses.
    if (lc.lanes > 1) {
      unsupported(s.loc,
                  fmt::format("a write of shared buffer '{}' in a vectorized loop", buf->name));
      return;
    }
    auto at = sharedElement(buf, st.indices);
    thir::Expr v = lowerExpr(st.value, {});
    if (!at || !v)
      return;
    thir::Stmt store{
        thir::SharedStore{at->first, thir::cast(v, Type{buf->dtype}), false, sharedRegion(buf)}};
    if (at->second)
      out.push_back({thir::IfStmt{at->second, {store}, {}}});
    else
      out.push_back(std::move(store));
    return;
  }
  if (buf->scope != tile::Scope::Global)
    throw std::logic_error("a write of an unexpected buffer scope");
  thir::Expr off = offset(buf, st.indices, lc);
  bool vec = lc.lanes > 1 && dependsOnLanesIndex(st.indices, lc);
  thir::Expr v = lowerExpr(st.value, vec ? lc : LaneContext{});
  if (!off || !v)
    return;
  if (vec) {
    int align = lc.lanes * dtypeBytes(buf->dtype);
    noteAlign(buf->paramIndex, align);
    out.push_back({thir::GlobalStore{
        buf->paramIndex, off, thir::cast(widen(v, lc.lanes), Type{buf->dtype, lc.lanes}), align}});
    return;
  }
  thir::GlobalStore gs{buf->paramIndex, off, thir::cast(v, Type{buf->dtype}),
                       dtypeBytes(buf->dtype)};
  thir::Expr ok = inBounds({buf, st.indices}, lc, 0, 0, IndexFacts::Grid);
  if (!ok)
    return;
  if (auto *ci = std::get_if<thir::ConstInt>(&ok->op); ci && ci->value)
    return out.push_back({std::move(gs)});
  thir::IfStmt guard;
  guard.cond = ok;
  guard.then.push_back({std::move(gs)});
  out.push_back({std::move(guard)});
}

bool KernelLowering::dependsOnLanesIndex(const std::vector<tile::Expr> &idx,
                                         const LaneContext &lc) {
  for (const tile::Expr &i : idx)
    if (dependsOnLanes(i, lc))
      return true;
  return false;
}

void KernelLowering::gatherAccesses(const tile::Body &b, std::vector<Access> &out) {
  // Only the statements' own operands: a vectorized body has no nested bodies
  // (analysis::planParallelLoop runs a body with control flow one element at a time).
  for (const tile::Stmt &s : b) {
    tile::Operands o = tile::operandsOf(s);
    for (const tile::Expr *e : o.exprs)
      collectAccesses(*e, out);
    for (const tile::BufferUse &u : o.uses)
      if (u.indices && u.buffer->scope == tile::Scope::Global)
        out.push_back({u.buffer, *u.indices});
  }
}
} // namespace detail

using detail::KernelLowering;

namespace {

/// The first statement of `body` (nested bodies included) that holds an `Op`.
template <class Op> const tile::Stmt *findStmt(const tile::Body &body) {
  for (const tile::Stmt &s : body) {
    if (std::holds_alternative<Op>(s.op))
      return &s;
    const tile::Stmt *found = nullptr;
    if (auto *f = std::get_if<tile::For>(&s.op))
      found = findStmt<Op>(f->body);
    else if (auto *i = std::get_if<tile::If>(&s.op))
      found = findStmt<Op>(i->then) ? findStmt<Op>(i->then) : findStmt<Op>(i->otherwise);
    if (found)
      return found;
  }
  return nullptr;
}

/// What an AMD target cannot run yet, reported where the program asks for it.
bool supportedOnAmd(const tile::Kernel &k, const target::TargetInfo &t, DiagnosticEngine &diags) {
  bool ok = true;
  // A reduction's lane exchanges assume whole wavefronts beyond the first.
  if (k.threads > t.warpSize && k.threads % t.warpSize != 0) {
    diags.error(k.kernelLoc, fmt::format("threads={} is not a whole number of {}-lane wavefronts, "
                                         "as {} needs",
                                         k.threads, t.warpSize, t.arch));
    ok = false;
  }
  if (const tile::Stmt *pr = findStmt<tile::Print>(k.body)) {
    diags.error(pr->loc, fmt::format("not supported yet: print on {}", t.arch));
    ok = false;
  }
  return ok;
}

} // namespace

bool inferLayouts(const tile::Program &p, const target::TargetInfo &t, DiagnosticEngine &diags,
                  ProgramPlan &plan) {
  plan.kernels.resize(p.kernels.size());
  bool ok = true;
  for (size_t i = 0; i < p.kernels.size(); ++i) {
    if (t.isAmd() && !supportedOnAmd(p.kernels[i], t, diags)) {
      ok = false;
      continue;
    }
    ok = analysis::inferFragmentLayouts(p.kernels[i], diags,
                                        {t.hasWgmma, std::nullopt, !t.mfmaShapes.empty()},
                                        plan.kernels[i].fragments) &&
         ok;
  }
  return ok;
}

std::optional<Lowered> lowerToThreadIR(const tile::Program &p, const ProgramPlan &plan,
                                       DiagnosticEngine &diags, const Options &opts) {
  Lowered result;
  thir::Module &m = result.module;
  m.name = p.stem;
  bool ok = true;
  for (size_t i = 0; i < p.kernels.size(); ++i) {
    const tile::Kernel &k = p.kernels[i];
    KernelLowering kl(k, plan.kernels.at(i), diags, opts);
    auto lowered = kl.run();
    if (!lowered) {
      ok = false;
      continue;
    }
    result.dynamicSharedBytes[k.name] = lowered->dynamicSharedBytes;
    m.kernels.push_back(std::move(*lowered));
    for (const auto &[id, sb] : kl.shared_)
      result.shared.push_back({k.name, id, sb});
    for (auto &[loc, layout] : kl.layouts_)
      result.parallelLoops.push_back({k.name, loc, layout});
    for (auto &[id, layout] : kl.fragmentLayouts_)
      result.fragments.push_back({k.name, id, layout});
    recordPipelines(k, plan.kernels.at(i), opts, result.pipelines);
    for (const DeferredSum &d : plan.kernels.at(i).deferredSums)
      result.deferredSums.push_back(
          {k.name, d.reduce->loc, d.loop->loc, d.sum->name, d.accumulator->name});
    for (const ScoreWarpgroup &sw : plan.kernels.at(i).scoreWarpgroups) {
      ScoreWarpgroupRecord r{k.name, sw.loop->loc, sw.scores->name, {}, {}, {}, {}};
      for (const tile::Stmt *s : sw.owned)
        r.statements.push_back(s->loc);
      auto names = [](const std::vector<ScoreWarpgroup::Handover> &hs) {
        std::vector<std::string> n;
        for (const ScoreWarpgroup::Handover &h : hs)
          n.push_back(h.value->name);
        return n;
      };
      r.published = names(sw.published);
      r.publishedAfter = names(sw.publishedAfter);
      r.handedOver = names(sw.handedOver);
      result.scoreWarpgroups.push_back(std::move(r));
    }
  }
  if (!ok)
    return std::nullopt;
  return result;
}

std::optional<Lowered> lowerProgram(const tile::Program &p, DiagnosticEngine &diags,
                                    const Options &opts) {
  ProgramPlan plan;
  if (!inferLayouts(p, opts.target, diags, plan))
    return std::nullopt;
  planPipelines(p, opts.target, plan, {opts.overlapGemms, opts.pingPong, opts.pingPongTiles});
  planShared(p, opts.target, plan, opts.persistence);
  if (opts.deferRowSums)
    planDeferredSums(p, plan);
  return lowerToThreadIR(p, plan, diags, opts);
}

} // namespace tilec::lower
