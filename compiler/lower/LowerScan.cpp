// Tile operations done through shared memory: cumsum, and the reductions that the register
// paths (rows of a 2-D fragment) do not cover. Each thread takes whole lines along the scanned
// or reduced dimension and walks them serially; a fragment's elements are spread over threads
// while a line is not, so a fragment goes through a row-major scratch array in shared memory.
#include "lower/LowerImpl.h"

#include <fmt/format.h>

namespace tilec::lower::detail {

namespace {

using analysis::FragmentLayout;

int64_t product(const std::vector<int64_t> &v) {
  int64_t p = 1;
  for (int64_t x : v)
    p *= x;
  return p;
}

/// for (v = thread; v < n; v += threads): the work-sharing loop over lines.
thir::ForStmt perThread(int var, int64_t n, int64_t threads, thir::Expr thread) {
  thir::ForStmt loop;
  loop.var = var;
  loop.varType = Type{DType::Int32};
  loop.begin = std::move(thread);
  loop.end = i32(n);
  loop.step = i32(threads);
  return loop;
}

thir::ForStmt counted(int var, int64_t n) {
  thir::ForStmt loop;
  loop.var = var;
  loop.varType = Type{DType::Int32};
  loop.begin = i32(0);
  loop.end = i32(n);
  loop.step = i32(1);
  return loop;
}

} // namespace

thir::Expr KernelLowering::tileLocation(const tile::BufferPtr &b,
                                        const std::vector<thir::Expr> &idx, int64_t scratch,
                                        DType scratchType) {
  if (b->scope == tile::Scope::Shared)
    return sharedOffset(b, idx);
  std::vector<int64_t> shape = constShape(b);
  thir::Expr flat = i32(0);
  for (size_t d = 0; d < idx.size(); ++d)
    flat =
        thir::binary(thir::BinOp::Add, thir::binary(thir::BinOp::Mul, flat, i32(shape[d])), idx[d]);
  return thir::binary(thir::BinOp::Add, i32(scratch),
                      thir::binary(thir::BinOp::Mul, flat, i32(dtypeBytes(scratchType))));
}

void KernelLowering::fragmentToScratch(const tile::BufferPtr &b, int64_t scratch, DType scratchType,
                                       thir::Body &out) {
  const FragmentLayout &l = fragmentLayouts_.at(b->id);
  for (const ChunkRef &ch : chunksOf(l))
    for (int64_t lane = 0; lane < l.vector; ++lane) {
      thir::SharedStore st{tileLocation(b, laneIndex(ch, lane), scratch, scratchType),
                           thir::cast(slotVar(b, ch.slot0 + lane), Type{scratchType})};
      if (ch.guard)
        out.push_back({thir::IfStmt{ch.guard, {{st}}, {}}});
      else
        out.push_back({st});
    }
}

void KernelLowering::fragmentFromScratch(const tile::BufferPtr &b, int64_t scratch,
                                         DType scratchType, std::optional<thir::BinOp> combine,
                                         thir::Body &out) {
  const FragmentLayout &l = fragmentLayouts_.at(b->id);
  for (const ChunkRef &ch : chunksOf(l))
    for (int64_t lane = 0; lane < l.vector; ++lane) {
      thir::Expr v = thir::sharedLoad(tileLocation(b, laneIndex(ch, lane), scratch, scratchType),
                                      Type{scratchType});
      if (combine)
        v = thir::binary(*combine, thir::cast(slotVar(b, ch.slot0 + lane), Type{scratchType}), v);
      int var = slotVars_.at(b->id).at(ch.slot0 + lane);
      thir::AssignVar set{var, thir::cast(v, Type{b->dtype})};
      if (ch.guard)
        out.push_back({thir::IfStmt{ch.guard, {{set}}, {}}});
      else
        out.push_back({set});
    }
}

std::optional<KernelLowering::Scratch>
KernelLowering::stageThroughShared(const tile::Stmt &s, const tile::Region &src,
                                   const tile::Region &dst, const char *what, DType acc,
                                   bool inPlace, thir::Body &out) {
  auto usable = [&](const tile::Region &r) {
    return fullBuffer(r) &&
           (r.buffer->scope == tile::Scope::Shared || r.buffer->scope == tile::Scope::Fragment);
  };
  if (!usable(src) || !usable(dst)) {
    unsupported(s.loc, fmt::format("{} of a part of a buffer or of a buffer outside shared memory "
                                   "and fragments",
                                   what));
    return std::nullopt;
  }
  const bool srcFragment = src.buffer->scope == tile::Scope::Fragment;
  const bool dstFragment = dst.buffer->scope == tile::Scope::Fragment;
  const int bytes = dtypeBytes(acc);
  const int64_t srcBytes = srcFragment ? product(constShape(src.buffer)) * bytes : 0;
  const int64_t dstBytes = dstFragment ? product(constShape(dst.buffer)) * bytes : 0;
  Scratch scratch;
  scratch.src = (scratchBase_ + 15) / 16 * 16;
  scratch.dst = inPlace ? scratch.src : scratch.src + srcBytes;
  // planShared made dynamicSharedBytes at least scratchBase_: with no fragment, nothing grows.
  const int64_t end = inPlace ? scratch.src + std::max(srcBytes, dstBytes) : scratch.dst + dstBytes;
  out_.dynamicSharedBytes = std::max<int>(out_.dynamicSharedBytes, static_cast<int>(end));
  if (srcFragment)
    fragmentToScratch(src.buffer, scratch.src, acc, out);
  return scratch;
}

void KernelLowering::unstageThroughShared(const tile::BufferPtr &dst, int64_t dstScratch, DType acc,
                                          std::optional<thir::BinOp> combine, thir::Body &out) {
  if (dst->scope == tile::Scope::Fragment)
    fragmentFromScratch(dst, dstScratch, acc, combine, out);
}

void KernelLowering::lowerCumsum(const tile::Stmt &s, const tile::Cumsum &c, thir::Body &out) {
  const tile::BufferPtr &src = c.src.buffer, &dst = c.dst.buffer;
  const DType acc = reduceAccumulator(src->dtype);
  // One scratch array serves both sides (in place) when both are fragments.
  std::optional<Scratch> scratch = stageThroughShared(s, c.src, c.dst, "cumsum", acc, true, out);
  if (!scratch)
    return;
  std::vector<int64_t> shape = constShape(src);
  const int dim = c.dim;
  const int64_t L = shape[dim], lines = product(shape) / std::max<int64_t>(L, 1);
  auto location = [&](const tile::BufferPtr &b, const std::vector<thir::Expr> &idx) {
    return tileLocation(b, idx, scratch->src, acc);
  };
  auto locType = [&](const tile::BufferPtr &b) {
    return Type{b->scope == tile::Scope::Shared ? b->dtype : acc};
  };
  // Line l: every index but `dim` from l (row-major over the other dimensions).
  thir::ForStmt lineLoop = perThread(nextVar_++, lines, tileThreads_, thread());
  std::vector<int64_t> others = shape;
  others.erase(others.begin() + dim);
  std::vector<thir::Expr> idx =
      unflatten(thir::var(lineLoop.var, Type{DType::Int32}), others.empty() ? shape : others);
  if (others.empty())
    idx.clear();
  int sum = nextVar_++;
  lineLoop.body.push_back({thir::DeclVar{sum, Type{acc}, zeroOf(acc)}});
  thir::ForStmt scan = counted(nextVar_++, L);
  thir::Expr j = thir::var(scan.var, Type{DType::Int32});
  idx.insert(idx.begin() + dim, c.reverse ? thir::binary(thir::BinOp::Sub, i32(L - 1), j) : j);
  thir::Expr x = thir::cast(thir::sharedLoad(location(src, idx), locType(src)), Type{acc});
  scan.body.push_back(
      {thir::AssignVar{sum, thir::binary(thir::BinOp::Add, thir::var(sum, Type{acc}), x)}});
  scan.body.push_back(
      {thir::SharedStore{location(dst, idx), thir::cast(thir::var(sum, Type{acc}), locType(dst))}});
  lineLoop.body.push_back({std::move(scan)});
  out.push_back({std::move(lineLoop)});
  unstageThroughShared(dst, scratch->dst, acc, std::nullopt, out);
}

void KernelLowering::lowerReduceThroughShared(const tile::Stmt &s, const tile::Reduce &r,
                                              thir::Body &out) {
  const tile::BufferPtr &src = r.src.buffer, &dst = r.dst.buffer;
  const DType acc = reduceAccumulator(src->dtype);
  // Scratch: the source (when a fragment), then the results (when the destination is one).
  std::optional<Scratch> scratch =
      stageThroughShared(s, r.src, r.dst, "a reduction", acc, false, out);
  if (!scratch)
    return;
  std::vector<int64_t> shape = constShape(src), outShape = constShape(dst);
  const int dim = r.dim;
  const int64_t L = shape[dim], outputs = product(outShape);
  const ReduceOp op = reduceOp(r.kind);
  thir::ForStmt outLoop = perThread(nextVar_++, outputs, tileThreads_, thread());
  std::vector<thir::Expr> outIdx =
      outShape.empty() ? std::vector<thir::Expr>{}
                       : unflatten(thir::var(outLoop.var, Type{DType::Int32}), outShape);
  int partial = nextVar_++;
  thir::Expr identity = reduceIdentity(op, acc);
  outLoop.body.push_back({thir::DeclVar{partial, Type{acc}, identity}});
  thir::ForStmt walk = counted(nextVar_++, L);
  std::vector<thir::Expr> idx = outIdx;
  idx.insert(idx.begin() + dim, thir::var(walk.var, Type{DType::Int32}));
  Type srcLoc{src->scope == tile::Scope::Shared ? src->dtype : acc};
  thir::Expr x =
      thir::cast(thir::sharedLoad(tileLocation(src, idx, scratch->src, acc), srcLoc), Type{acc});
  if (op.abs)
    x = thir::unary(thir::UnOp::Abs, x);
  walk.body.push_back(
      {thir::AssignVar{partial, thir::binary(op.combine, thir::var(partial, Type{acc}), x)}});
  outLoop.body.push_back({std::move(walk)});
  thir::Expr result = thir::var(partial, Type{acc});
  thir::Expr where = tileLocation(dst, outIdx, scratch->dst, acc);
  if (dst->scope == tile::Scope::Shared && !r.clear)
    result = thir::binary(op.combine,
                          thir::cast(thir::sharedLoad(where, Type{dst->dtype}), Type{acc}), result);
  Type dstLoc{dst->scope == tile::Scope::Shared ? dst->dtype : acc};
  outLoop.body.push_back({thir::SharedStore{where, thir::cast(result, dstLoc)}});
  out.push_back({std::move(outLoop)});
  unstageThroughShared(dst, scratch->dst, acc,
                       r.clear ? std::nullopt : std::optional<thir::BinOp>(op.combine), out);
}

} // namespace tilec::lower::detail
