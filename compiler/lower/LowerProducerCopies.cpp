// The producer's copies of a warp-specialized pipeline: the tensor maps its TMA boxes load
// through (one kernel parameter per tensor and box, encoded by the generated header at launch),
// and the element-by-element copy it falls back to when the launch could not encode them.
#include "lower/LowerImpl.h"

#include <fmt/format.h>

namespace tilec::lower::detail {

void KernelLowering::addTensorMaps(const PipelinePlan &plan, bool withPrologue) {
  for (size_t ci = 0; ci < plan.copies.size() && !failed_; ++ci)
    addTensorMap(plan.copies[ci], plan.tmaDims.at(ci));
  for (size_t ci = 0; withPrologue && ci < plan.consumerPrologue.size() && !failed_; ++ci)
    addTensorMap(plan.consumerPrologue[ci], plan.prologueTmaDims.at(ci));
  tmaEnabledParam_ = static_cast<int>(out_.params.size());
  out_.params.push_back({"tilec_tma", thir::ParamKind::TmaEnabled, DType::Int32, 0, {}});
}

void KernelLowering::addTensorMap(const tile::Stmt *st, TmaDims kept) {
  const tile::Copy &c = std::get<tile::Copy>(st->op);
  const tile::BufferPtr &src = c.src.buffer;
  const analysis::SharedLayout &l = shared_.at(c.dst.buffer->id).layout;
  // The map's dimensions are the tensor's, innermost first; the box is one panel of the tile
  // (its rows and a swizzled line of columns) and one element in every other dimension.
  thir::TensorMapInfo m;
  m.tensor = src->paramIndex;
  m.swizzleBytes = l.swizzleIsIdentity() ? 0 : l.swizzleBytes;
  thir::Expr stride = thir::constInt(dtypeBytes(src->dtype), DType::Int64);
  for (size_t d = src->shape.size(); d-- > 0;) {
    thir::Expr extent = hostExpr(src->shape[d]);
    if (!extent)
      return;
    if (d + 1 < src->shape.size()) {
      stride = thir::binary(thir::BinOp::Mul, m.dims.back(), stride);
      m.strides.push_back(stride);
    }
    m.dims.push_back(extent);
    m.box.push_back(d == kept.col   ? static_cast<int>(l.panelBytes / l.elementBytes)
                    : d == kept.row ? static_cast<int>(l.rows)
                                    : 1);
  }
  // One map per tensor and box: copies of the same view share it.
  int index = -1;
  for (size_t i = 0; i < out_.params.size(); ++i) {
    const thir::Param &p = out_.params[i];
    if (p.kind == thir::ParamKind::TensorMap && p.map.tensor == m.tensor && p.map.box == m.box &&
        p.map.swizzleBytes == m.swizzleBytes)
      index = static_cast<int>(i);
  }
  if (index < 0) {
    index = static_cast<int>(out_.params.size());
    out_.params.push_back({fmt::format("{}_tma{}", src->name, index), thir::ParamKind::TensorMap,
                           src->dtype, 0, std::move(m)});
  }
  tensorMapOf_[st] = index;
}

void KernelLowering::copyElementwise(const tile::Copy &c, TmaDims dims,
                                     const std::vector<thir::Expr> &starts, thir::Expr ptid,
                                     thir::Body &out) {
  const tile::BufferPtr &src = c.src.buffer, &dst = c.dst.buffer;
  std::vector<int64_t> shape = constShape(dst);
  const int64_t R = shape[0], W = shape[1];
  Type i32t{DType::Int32}, i64t{DType::Int64}, et{src->dtype};
  std::vector<thir::Expr> extents;
  for (const tile::Expr &e : src->shape)
    extents.push_back(thir::cast(lowerExpr(e, {}), i32t));
  thir::Expr rows = extents[dims.row], cols = extents[dims.col];
  thir::Expr r0 = starts[dims.row], c0 = starts[dims.col];
  // The other dimensions are single indices: an offset of the whole tile (an index outside the
  // tensor reads its last element, stored as zero), and the stride between the tile's rows.
  thir::Expr base, inside, rowStride = thir::cast(cols, i64t);
  for (size_t d = 0; d < extents.size(); ++d) {
    if (d == dims.row || d == dims.col)
      continue;
    thir::Expr stride = thir::constInt(1, DType::Int64);
    for (size_t e = d + 1; e < extents.size(); ++e)
      stride = thir::binary(thir::BinOp::Mul, stride, thir::cast(extents[e], i64t));
    thir::Expr index = thir::binary(thir::BinOp::Min, starts[d], sub(extents[d], i32(1)));
    thir::Expr term = thir::binary(thir::BinOp::Mul, thir::cast(index, i64t), stride);
    base = base ? thir::binary(thir::BinOp::Add, base, term) : term;
    thir::Expr ok = lt(starts[d], extents[d]);
    inside = inside ? thir::binary(thir::BinOp::And, inside, ok) : ok;
    if (d > dims.row)
      rowStride = thir::binary(thir::BinOp::Mul, rowStride, thir::cast(extents[d], i64t));
  }
  // This path runs when the launch could not encode tensor maps (row strides that are not a
  // multiple of 16 bytes), so element by element, and its speed is the latency of the loads:
  // each thread keeps U loads in flight (branch-free: an element outside the tensor reads the
  // nearest one inside and stores zero) before it stores them. Each thread keeps one column (P side
  // by side: a warp reads contiguous bytes of a row) and walks the rows.
  const int64_t P = std::min<int64_t>(W, kProducerThreads);
  const bool columnWalk = kProducerThreads % P == 0 && W % P == 0;
  const int64_t rowStep = columnWalk ? kProducerThreads / P : 0;
  // Each thread's U rows of a step must lie inside the tile: a tile of fewer rows than a step
  // (a one-row tile of scales) or of rows that are not a multiple of the step takes U = 1.
  int64_t U = 1;
  for (int64_t u : {8, 4, 2})
    if (columnWalk && R % (rowStep * u) == 0) {
      U = u;
      break;
    }
  auto counted = [&](thir::Expr begin, int64_t end, int64_t step) {
    thir::ForStmt loop;
    loop.var = nextVar_++;
    loop.varType = i32t;
    loop.begin = std::move(begin);
    loop.end = i32(end);
    loop.step = i32(step);
    return loop;
  };
  // Loads the elements (r, col) into fresh variables, then stores them to shared memory.
  auto elements = [&](const std::vector<thir::Expr> &rs, const std::vector<thir::Expr> &colsAt,
                      thir::Body &into) {
    std::vector<std::pair<thir::Expr, int>> loaded;
    for (size_t i = 0; i < rs.size(); ++i) {
      thir::Expr gr = add(r0, rs[i]), gc = add(c0, colsAt[i]);
      thir::Expr ok = thir::binary(thir::BinOp::And, lt(gr, rows), lt(gc, cols));
      if (inside)
        ok = thir::binary(thir::BinOp::And, ok, inside);
      // A clamped index (the last row and column; the tile is never empty) rather than a
      // select: LLVM sinks a load whose address is selected by `ok` into a branch, and the
      // loads then wait for each other.
      thir::Expr one = i32(1);
      thir::Expr cr = thir::binary(thir::BinOp::Min, gr, sub(rows, one));
      thir::Expr cc = thir::binary(thir::BinOp::Min, gc, sub(cols, one));
      thir::Expr index = thir::binary(
          thir::BinOp::Add, thir::binary(thir::BinOp::Mul, thir::cast(cr, i64t), rowStride),
          thir::cast(cc, i64t));
      if (base)
        index = thir::binary(thir::BinOp::Add, base, index);
      int v = nextVar_++;
      into.push_back({thir::DeclVar{
          v, et,
          thir::select(ok, thir::globalLoad(src->paramIndex, index, et, dtypeBytes(src->dtype)),
                       zeroOf(src->dtype))}});
      loaded.emplace_back(sharedOffset(dst, {rs[i], colsAt[i]}), v);
    }
    for (auto &[at, v] : loaded)
      into.push_back({thir::SharedStore{at, thir::var(v, et), /*ahead=*/true}});
  };
  if (!columnWalk) {
    thir::ForStmt loop = counted(ptid, R * W, kProducerThreads);
    thir::Expr e = thir::var(loop.var, i32t);
    elements({quot(e, W)}, {rem(e, W)}, loop.body);
    out.push_back({std::move(loop)});
    return;
  }
  thir::ForStmt columns = counted(rem(ptid, P), W, P);
  thir::Expr col = thir::var(columns.var, i32t);
  thir::ForStmt walk = counted(quot(ptid, P), R, rowStep * U);
  thir::Expr r = thir::var(walk.var, i32t);
  std::vector<thir::Expr> rs, colsAt;
  for (int64_t u = 0; u < U; ++u) {
    rs.push_back(u == 0 ? r : add(r, i32(u * rowStep)));
    colsAt.push_back(col);
  }
  elements(rs, colsAt, walk.body);
  columns.body.push_back({std::move(walk)});
  out.push_back({std::move(columns)});
}

} // namespace tilec::lower::detail
