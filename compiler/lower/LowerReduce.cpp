// Reductions of fragments along a dimension: within a thread's slots, across the lanes of a
// row by shuffles, then across warps through shared scratch.
#include "lower/LowerImpl.h"

#include <fmt/format.h>

#include <stdexcept>

namespace tilec::lower::detail {

using analysis::FragmentLayout;

void KernelLowering::lowerReduce(const tile::Stmt &s, const tile::Reduce &r, thir::Body &out) {
  const tile::BufferPtr &src = r.src.buffer, &dst = r.dst.buffer;
  // bool values reduce as the integers 0 and 1 (reduceAccumulator): max is any, min is all,
  // sum counts the true ones; a bool output is then whether the result is non-zero.
  if (!isFloat(src->dtype) && !isInteger(src->dtype) && src->dtype != DType::Bool)
    throw std::logic_error("sema lets reductions read numbers and bools only");
  // A B operand's warps hold the same elements: combining every thread's values in registers
  // would count each several times.
  if (!isOnChip(src) || !isOnChip(dst) || !fullBuffer(r.src) || !fullBuffer(r.dst) ||
      src->shape.size() != 2 || r.dim != 1 ||
      fragmentLayouts_.at(src->id).kind == FragmentLayout::Kind::MmaOperandB)
    return lowerReduceThroughShared(s, r, out);
  const FragmentLayout &ls = fragmentLayouts_.at(src->id);
  const FragmentLayout &ld = fragmentLayouts_.at(dst->id);
  // Row-wise: the source holds whole rows per thread group and the result one value per row
  // (RowGroups -> GroupReplicated, MmaAccumulator -> MmaRows); otherwise the result is
  // replicated over the block.
  bool grouped = ld.rowValues() && ld.rowsOf(ls);
  if (!grouped && ld.kind != FragmentLayout::Kind::Replicated) {
    unsupported(s.loc, fmt::format("a reduction from '{}' ({}) into '{}' ({})", src->name,
                                   ls.describe(), dst->name, ld.describe()));
    return;
  }
  ReduceOp op = reduceOp(r.kind);
  const DType acc = reduceAccumulator(src->dtype);
  thir::Expr identity = reduceIdentity(op, acc);
  // One partial per row this thread holds: every row (Flat, Replicated) or its group's rows.
  int64_t nPartial = grouped ? ld.slots() : ls.rows();
  std::vector<int> partial;
  for (int64_t i = 0; i < nPartial; ++i) {
    partial.push_back(nextVar_++);
    out.push_back({thir::DeclVar{partial.back(), Type{acc}, identity}});
  }
  auto pvar = [&](int64_t i) { return thir::var(partial[i], Type{acc}); };
  auto element = [&](thir::Expr x) {
    x = thir::cast(x, Type{acc});
    return op.abs ? thir::unary(thir::UnOp::Abs, x) : x;
  };
  auto combine = [&](int64_t i, thir::Expr x) {
    out.push_back({thir::AssignVar{partial[i], thir::binary(op.combine, pvar(i), x)}});
  };
  // A thread's own values of each row, combined as a balanced tree: a chain of one combine
  // after another waits the latency of each (attention's row max and sum stalled there); the
  // order of a reduction is unspecified.
  std::vector<std::vector<thir::Expr>> terms(static_cast<size_t>(nPartial));
  for (const ChunkRef &c : chunksOf(ls)) {
    for (int64_t lane = 0; lane < ls.vector; ++lane) {
      thir::Expr x = element(slotVar(src, c.slot0 + lane));
      if (grouped) {
        terms[c.rowIter].push_back(c.guard ? thir::select(c.guard, x, identity) : x);
        continue;
      }
      for (int64_t row = c.range[0].lo; row <= c.range[0].hi; ++row) {
        thir::Expr take = c.guard;
        if (c.range[0].lo != c.range[0].hi)
          take = conj(take, thir::binary(thir::BinOp::Eq, c.index[0], i32(row)));
        terms[row].push_back(take ? thir::select(take, x, identity) : x);
      }
    }
  }
  for (int64_t i = 0; i < nPartial; ++i) {
    std::vector<thir::Expr> level = std::move(terms[i]);
    while (level.size() > 1) {
      std::vector<thir::Expr> next;
      for (size_t k = 0; k + 1 < level.size(); k += 2)
        next.push_back(thir::binary(op.combine, level[k], level[k + 1]));
      if (level.size() % 2)
        next.push_back(level.back());
      level = std::move(next);
    }
    if (!level.empty())
      combine(i, level.front());
  }
  // A deferred sum stays this thread's own (finishDeferredSums sums its accumulation).
  if (!isDeferredSum(s))
    reduceAcrossThreads(ls, grouped, op, acc, partial, out);
  for (int64_t i = 0; i < nPartial; ++i) {
    thir::Expr result = pvar(i);
    if (!r.clear)
      result = thir::binary(op.combine, thir::cast(slotVar(dst, i), Type{acc}), result);
    out.push_back(
        {thir::AssignVar{slotVars_.at(dst->id).at(i), thir::cast(result, Type{dst->dtype})}});
  }
}

void KernelLowering::reduceAcrossThreads(const FragmentLayout &ls, bool grouped, const ReduceOp &op,
                                         DType acc, const std::vector<int> &partial,
                                         thir::Body &out) {
  if (ls.kind == FragmentLayout::Kind::Replicated)
    return;
  const bool mma = grouped && ls.gemmAccumulator();
  // The lanes of a warp that share an accumulator row: the 4 of an mma quad, the 16 of an
  // MFMA lane group.
  const int64_t rowLanes = ls.kind == FragmentLayout::Kind::MfmaAccumulator ? 16 : 4;
  const int64_t nPartial = static_cast<int64_t>(partial.size());
  thir::Expr identity = reduceIdentity(op, acc);
  auto pvar = [&](int64_t i) { return thir::var(partial[i], Type{acc}); };
  auto combine = [&](int64_t i, thir::Expr x) {
    out.push_back({thir::AssignVar{partial[i], thir::binary(op.combine, pvar(i), x)}});
  };
  // Across the lanes that share a row (a butterfly within the lanes of a row group, or the
  // 4 lanes of an mma quad), then across the warps that share it through shared memory.
  int64_t laneSpan =
      mma ? rowLanes
          : std::min<int64_t>(grouped ? ls.groupThreads() : ls.threads, opts_.target.warpSize);
  for (int64_t i = 0; i < nPartial; ++i)
    for (int64_t mask = laneSpan / 2; mask >= 1; mask /= 2)
      combine(i, thir::shflXor(pvar(i), static_cast<int>(mask)));
  // Warps that share a row: `warps` of them from `firstWarp`, `warpStride` apart (the
  // warpgroups of a wgmma warp row hold its rows in their warps of the same rank).
  int64_t warps =
      mma ? ls.warpsN : (grouped ? ls.groupThreads() : ls.threads) / opts_.target.warpSize;
  int64_t warpStride = mma && ls.warpgroup ? 4 : 1;
  if (warps > 1) {
    int bytes = dtypeBytes(acc);
    thir::Expr tid = thread();
    thir::Expr warp = thir::binary(thir::BinOp::FloorDiv, tid, i32(opts_.target.warpSize));
    thir::Expr lane = thir::binary(thir::BinOp::Mod, tid, i32(opts_.target.warpSize));
    // An mma warp holds 8 rows per partial (one per quad), an MFMA wavefront 4 (one per lane
    // group): entry (i, warp, quad).
    int64_t rowsPerWarp = mma ? opts_.target.warpSize / rowLanes : 1;
    thir::Expr quad = mma ? thir::binary(thir::BinOp::FloorDiv, lane, i32(rowLanes)) : i32(0);
    int64_t totalWarps = ls.threads / opts_.target.warpSize;
    const thir::SmemRegion scratch{scratchBase_,
                                   scratchBase_ + nPartial * totalWarps * rowsPerWarp * bytes};
    out_.dynamicSharedBytes = std::max<int>(out_.dynamicSharedBytes, static_cast<int>(scratch.end));
    auto entryOffset = [&](thir::Expr warpIndex, int64_t i) {
      thir::Expr e =
          thir::binary(thir::BinOp::Add,
                       thir::binary(thir::BinOp::Mul,
                                    thir::binary(thir::BinOp::Add, i32(i * totalWarps), warpIndex),
                                    i32(rowsPerWarp)),
                       quad);
      return thir::binary(thir::BinOp::Add, i32(scratchBase_),
                          thir::binary(thir::BinOp::Mul, e, i32(bytes)));
    };
    thir::IfStmt leader;
    leader.cond = thir::binary(
        thir::BinOp::Eq, mma ? thir::binary(thir::BinOp::Mod, lane, i32(rowLanes)) : lane, i32(0));
    for (int64_t i = 0; i < nPartial; ++i)
      leader.then.push_back(
          {thir::SharedStore{entryOffset(warp, i), pvar(i), /*ahead=*/false, scratch}});
    out.push_back({std::move(leader)});
    int64_t span = warps * warpStride;
    thir::Expr firstWarp =
        span == totalWarps
            ? i32(0)
            : thir::binary(thir::BinOp::Mul, thir::binary(thir::BinOp::FloorDiv, warp, i32(span)),
                           i32(span));
    if (warpStride > 1)
      firstWarp = thir::binary(thir::BinOp::Add, firstWarp,
                               thir::binary(thir::BinOp::Mod, warp, i32(warpStride)));
    for (int64_t i = 0; i < nPartial; ++i) {
      out.push_back({thir::AssignVar{partial[i], identity}});
      for (int64_t w = 0; w < warps; ++w)
        combine(i,
                thir::sharedLoad(
                    entryOffset(thir::binary(thir::BinOp::Add, firstWarp, i32(w * warpStride)), i),
                    Type{acc}, scratch));
    }
  }
}

bool KernelLowering::isDeferredSum(const tile::Stmt &s) const {
  return std::any_of(deferredSums_.begin(), deferredSums_.end(),
                     [&](const DeferredSum &d) { return d.reduce == &s; });
}

void KernelLowering::finishDeferredSums(const tile::Stmt &loop, thir::Body &out) {
  for (const DeferredSum &d : deferredSums_) {
    if (d.loop != &loop)
      continue;
    const std::vector<int> &slots = slotVars_.at(d.accumulator->id);
    const DType dtype = d.accumulator->dtype;
    const DType acc = reduceAccumulator(dtype);
    std::vector<int> partial;
    for (int slot : slots) {
      partial.push_back(nextVar_++);
      out.push_back({thir::DeclVar{partial.back(), Type{acc},
                                   thir::cast(thir::var(slot, Type{dtype}), Type{acc})}});
    }
    reduceAcrossThreads(fragmentLayouts_.at(d.source->id), /*grouped=*/true,
                        reduceOp(tile::ReduceKind::Sum), acc, partial, out);
    for (size_t i = 0; i < slots.size(); ++i)
      out.push_back(
          {thir::AssignVar{slots[i], thir::cast(thir::var(partial[i], Type{acc}), Type{dtype})}});
  }
}

} // namespace tilec::lower::detail
