// Fragments (register tiles) and the tile operations on them: elementwise Parallel loops,
// copies between global memory and fragments, fills, reductions. The layouts come from
// analysis::inferFragmentLayouts; this file spells them out per thread. Every per-thread slot is
// a separate variable, and every loop over a thread's slots is unrolled here, so that slot
// numbers are compile-time constants and the fragment lives in registers.
#include "lower/LowerImpl.h"

#include "tileir/Arith.h"

#include <fmt/format.h>

namespace tilec::lower::detail {

namespace {

using analysis::FragmentLayout;

thir::Expr i32(int64_t v) { return thir::constInt(v, DType::Int32); }

thir::Expr zeroOf(DType t) {
  return isFloat(t) ? thir::constFloat(0.0, t) : thir::constInt(0, t);
}

bool fullBuffer(const tile::Region &r) {
  for (size_t d = 0; d < r.dims.size(); ++d) {
    if (r.dims[d].dropped || tile::asConstInt(r.dims[d].begin) != 0 ||
        tile::asConstInt(r.dims[d].extent) != tile::asConstInt(r.buffer->shape[d]))
      return false;
  }
  return true;
}

void collectBuffers(const tile::Expr &e, std::vector<tile::BufferPtr> &out) {
  std::visit(
      [&](const auto &op) {
        using T = std::decay_t<decltype(op)>;
        if constexpr (std::is_same_v<T, tile::Load>) {
          out.push_back(op.buffer);
          for (const tile::Expr &i : op.indices)
            collectBuffers(i, out);
        } else if constexpr (std::is_same_v<T, tile::Unary> || std::is_same_v<T, tile::Cast>) {
          collectBuffers(op.a, out);
        } else if constexpr (std::is_same_v<T, tile::Binary>) {
          collectBuffers(op.a, out);
          collectBuffers(op.b, out);
        } else if constexpr (std::is_same_v<T, tile::Select>) {
          collectBuffers(op.cond, out);
          collectBuffers(op.a, out);
          collectBuffers(op.b, out);
        }
      },
      e->op);
}

void collectBuffers(const tile::Body &b, std::vector<tile::BufferPtr> &out) {
  for (const tile::Stmt &s : b) {
    if (auto *l = std::get_if<tile::Let>(&s.op)) {
      collectBuffers(l->value, out);
    } else if (auto *st = std::get_if<tile::Store>(&s.op)) {
      out.push_back(st->buffer);
      collectBuffers(st->value, out);
      for (const tile::Expr &i : st->indices)
        collectBuffers(i, out);
    } else if (auto *f = std::get_if<tile::For>(&s.op)) {
      collectBuffers(f->body, out);
    } else if (auto *i = std::get_if<tile::If>(&s.op)) {
      collectBuffers(i->cond, out);
      collectBuffers(i->then, out);
      collectBuffers(i->otherwise, out);
    }
  }
}

std::vector<int64_t> shapeOf(const std::vector<tile::Expr> &shape) {
  std::vector<int64_t> s;
  for (const tile::Expr &e : shape)
    s.push_back(tile::asConstInt(e).value_or(-1));
  return s;
}

struct ReduceOp {
  thir::BinOp combine;
  double identity;
  bool abs;
};

ReduceOp reduceOp(tile::ReduceKind k) {
  const double inf = std::numeric_limits<double>::infinity();
  switch (k) {
  case tile::ReduceKind::Max:
    return {thir::BinOp::Max, -inf, false};
  case tile::ReduceKind::Min:
    return {thir::BinOp::Min, inf, false};
  case tile::ReduceKind::Sum:
    return {thir::BinOp::Add, 0.0, false};
  case tile::ReduceKind::AbsMax:
    return {thir::BinOp::Max, 0.0, true};
  case tile::ReduceKind::AbsSum:
    return {thir::BinOp::Add, 0.0, true};
  }
  return {thir::BinOp::Add, 0.0, false};
}

} // namespace

bool KernelLowering::isOnChip(const tile::BufferPtr &b) const {
  return b->scope == tile::Scope::Fragment || b->scope == tile::Scope::Local;
}

bool KernelLowering::declareFragments(thir::Body &out) {
  for (const tile::BufferPtr &b : k_.buffers) {
    if (!isOnChip(b))
      continue;
    const FragmentLayout &l = fragmentLayouts_.at(b->id);
    std::vector<int> &ids = slotVars_[b->id];
    for (int64_t i = 0; i < l.slots(); ++i) {
      ids.push_back(nextVar_++);
      out.push_back({thir::DeclVar{ids.back(), Type{b->dtype}, zeroOf(b->dtype)}});
    }
  }
  return true;
}

thir::Expr KernelLowering::slotVar(const tile::BufferPtr &b, int64_t slot) {
  return thir::var(slotVars_.at(b->id).at(static_cast<size_t>(slot)), Type{b->dtype});
}

tile::Expr KernelLowering::flatIndex(const tile::BufferPtr &b,
                                     const std::vector<tile::Expr> &indices) {
  tile::Expr flat;
  for (size_t d = 0; d < indices.size(); ++d) {
    tile::Expr i = tile::makeCast(indices[d], DType::Int32);
    flat = flat ? tile::makeBinary(tile::BinOp::Add,
                                   tile::makeBinary(tile::BinOp::Mul, flat, b->shape[d]), i)
                : i;
  }
  return flat ? flat : tile::intImm(0);
}

void KernelLowering::bindFlat(const tile::For &f, const thir::Expr &flat, int64_t lo, int64_t hi) {
  int64_t stride = 1;
  for (size_t d = f.vars.size(); d-- > 0;) {
    int64_t ext = *tile::asConstInt(f.extents[d]);
    int64_t vlo = lo / stride, vhi = hi / stride;
    Interval r{0, ext - 1};
    if (d == 0)
      r = {vlo, vhi};
    else if (vhi - vlo < ext && vlo % ext <= vhi % ext)
      r = {vlo % ext, vhi % ext};
    thir::Expr x;
    if (r.lo == r.hi) {
      x = i32(r.lo);
    } else {
      x = flat;
      if (stride != 1)
        x = thir::binary(thir::BinOp::FloorDiv, x, i32(stride));
      if (d != 0)
        x = thir::binary(thir::BinOp::Mod, x, i32(ext));
    }
    bind(*f.vars[d], x, r);
    stride *= ext;
  }
}

thir::Expr KernelLowering::fragmentRead(const tile::Expr &e, const tile::Load &op) {
  const tile::BufferPtr &buf = op.buffer;
  const FragmentLayout &l = fragmentLayouts_.at(buf->id);
  if (l.kind == FragmentLayout::Kind::Distributed) {
    bool own = element_ && element_->layout->sameAs(l) &&
               op.indices.size() == element_->loopVarIds.size();
    for (size_t d = 0; own && d < op.indices.size(); ++d) {
      auto *ref = std::get_if<tile::VarRef>(&op.indices[d]->op);
      own = ref && ref->var->id == element_->loopVarIds[d];
    }
    if (own)
      return slotVar(buf, element_->slot);
    unsupported(e->loc, fmt::format("reading fragment '{}' at an element other than the Parallel "
                                    "loop's own (its elements are spread over threads)",
                                    buf->name));
    return nullptr;
  }
  tile::Expr flat = flatIndex(buf, op.indices);
  Interval r = range(flat);
  int64_t total = l.total();
  if (r.lo == r.hi && r.lo >= 0 && r.lo < total)
    return slotVar(buf, r.lo);
  if (r.lo >= 0 && r.hi < total && r.hi - r.lo < 64) {
    thir::Expr fl = lowerExpr(flat, {});
    if (!fl)
      return nullptr;
    thir::Expr v = slotVar(buf, r.hi);
    for (int64_t c = r.hi - 1; c >= r.lo; --c)
      v = thir::select(thir::binary(thir::BinOp::Eq, fl, i32(c)), slotVar(buf, c), v);
    return v;
  }
  unsupported(e->loc, fmt::format("an index into '{}' that is not known at compile time "
                                  "(fragments live in registers)",
                                  buf->name));
  return nullptr;
}

void KernelLowering::fragmentWrite(const tile::Stmt &s, const tile::Store &st, thir::Expr value,
                                   thir::Body &out) {
  const tile::BufferPtr &buf = st.buffer;
  const FragmentLayout &l = fragmentLayouts_.at(buf->id);
  if (l.kind == FragmentLayout::Kind::Distributed) {
    bool own = element_ && element_->layout->sameAs(l) &&
               st.indices.size() == element_->loopVarIds.size();
    for (size_t d = 0; own && d < st.indices.size(); ++d) {
      auto *ref = std::get_if<tile::VarRef>(&st.indices[d]->op);
      own = ref && ref->var->id == element_->loopVarIds[d];
    }
    if (!own) {
      unsupported(s.loc, fmt::format("writing fragment '{}' outside a Parallel loop over its own "
                                     "elements (its elements are spread over threads)",
                                     buf->name));
      return;
    }
    out.push_back({thir::AssignVar{slotVars_.at(buf->id).at(element_->slot), value}});
    return;
  }
  tile::Expr flat = flatIndex(buf, st.indices);
  Interval r = range(flat);
  int64_t total = l.total();
  if (r.lo == r.hi && r.lo >= 0 && r.lo < total) {
    out.push_back({thir::AssignVar{slotVars_.at(buf->id).at(r.lo), value}});
    return;
  }
  if (r.lo >= 0 && r.hi < total && r.hi - r.lo < 64) {
    thir::Expr fl = lowerExpr(flat, {});
    if (!fl)
      return;
    for (int64_t c = r.lo; c <= r.hi; ++c)
      out.push_back({thir::AssignVar{
          slotVars_.at(buf->id).at(c),
          thir::select(thir::binary(thir::BinOp::Eq, fl, i32(c)), value, slotVar(buf, c))}});
    return;
  }
  unsupported(s.loc, fmt::format("an index into '{}' that is not known at compile time "
                                 "(fragments live in registers)",
                                 buf->name));
}

bool KernelLowering::lowerFragmentParallel(const tile::Stmt &s, const tile::For &f,
                                           thir::Body &out) {
  std::vector<tile::BufferPtr> bufs;
  collectBuffers(f.body, bufs);
  std::vector<int64_t> loopShape;
  for (const tile::Expr &e : f.extents)
    loopShape.push_back(*tile::asConstInt(e));
  const FragmentLayout *anchor = nullptr;
  bool anyOnChip = false;
  for (const tile::BufferPtr &b : bufs) {
    if (!isOnChip(b))
      continue;
    anyOnChip = true;
    const FragmentLayout &l = fragmentLayouts_.at(b->id);
    if (!anchor && l.kind == FragmentLayout::Kind::Distributed && l.shape == loopShape)
      anchor = &l;
  }
  if (!anyOnChip)
    return false;
  std::vector<int> loopVarIds;
  for (const tile::VarPtr &v : f.vars)
    loopVarIds.push_back(v->id);
  std::set<int> outerLets;
  for (const auto &[id, v] : letVars_)
    outerLets.insert(id);
  std::set<int> savedDeclared = declaredHere_;
  auto endElement = [&]() {
    declaredHere_ = savedDeclared;
    for (auto it = letVars_.begin(); it != letVars_.end();)
      it = outerLets.count(it->first) ? std::next(it) : letVars_.erase(it);
  };
  inParallel_ = true;
  if (!anchor) {
    // Every thread runs every iteration: the loop only touches replicated data.
    int64_t total = 1;
    for (int64_t e : loopShape)
      total *= e;
    if (total > 1024) {
      unsupported(s.loc, fmt::format("a Parallel loop of {} iterations over replicated "
                                     "fragments (the limit is 1024)",
                                     total));
      inParallel_ = false;
      return true;
    }
    for (int64_t flat = 0; flat < total && !failed_; ++flat) {
      bindFlat(f, i32(flat), flat, flat);
      lowerBody(f.body, out, {});
      endElement();
    }
    inParallel_ = false;
    analysis::ParallelLayout pl;
    pl.total = total;
    pl.threads = k_.threads;
    pl.vector = 1;
    pl.reason = "replicated: every thread runs every iteration";
    layouts_.push_back({s.loc, pl});
    return true;
  }
  const FragmentLayout &l = *anchor;
  int64_t T = l.threads, v = l.vector, chunks = l.chunks(), total = l.total();
  thir::Expr tid = thir::special(thir::Special::ThreadIdxX);
  for (int64_t step = 0; step < l.steps() && !failed_; ++step) {
    thir::Expr chunk = thir::binary(thir::BinOp::Add, i32(step * T), tid);
    thir::Body *target = &out;
    thir::IfStmt guard;
    bool guarded = (step + 1) * T > chunks;
    if (guarded) {
      guard.cond = thir::binary(thir::BinOp::Lt, chunk, i32(chunks));
      target = &guard.then;
    }
    for (int64_t lane = 0; lane < v && !failed_; ++lane) {
      thir::Expr flat = thir::binary(thir::BinOp::Add,
                                     thir::binary(thir::BinOp::Mul, chunk, i32(v)), i32(lane));
      int64_t lo = step * T * v + lane;
      int64_t hi = std::min((step * T + T - 1) * v + lane, total - 1);
      bindFlat(f, flat, lo, hi);
      element_ = ElementContext{&l, loopVarIds, step * v + lane};
      lowerBody(f.body, *target, {});
      element_.reset();
      endElement();
    }
    if (guarded)
      out.push_back({std::move(guard)});
  }
  inParallel_ = false;
  analysis::ParallelLayout pl;
  pl.total = total;
  pl.threads = T;
  pl.vector = static_cast<int>(v);
  pl.reason = "follows the fragment layout: " + l.vectorReason;
  layouts_.push_back({s.loc, pl});
  return true;
}

void KernelLowering::lowerFill(const tile::Stmt &s, const tile::Fill &f, thir::Body &out) {
  const tile::BufferPtr &buf = f.dst.buffer;
  if (!isOnChip(buf) || !fullBuffer(f.dst)) {
    unsupported(s.loc, fmt::format("fill of {} buffer '{}'{}", tile::scopeName(buf->scope),
                                   buf->name, isOnChip(buf) ? " (a part of it)" : ""));
    return;
  }
  thir::Expr v = lowerExpr(f.value, {});
  if (!v)
    return;
  v = thir::cast(v, Type{buf->dtype});
  for (int id : slotVars_.at(buf->id))
    out.push_back({thir::AssignVar{id, v}});
}

void KernelLowering::lowerCopy(const tile::Stmt &s, const tile::Copy &c, thir::Body &out) {
  const tile::Region &src = c.src, &dst = c.dst;
  bool srcChip = isOnChip(src.buffer), dstChip = isOnChip(dst.buffer);
  if (srcChip && dstChip) {
    const FragmentLayout &ls = fragmentLayouts_.at(src.buffer->id);
    const FragmentLayout &ld = fragmentLayouts_.at(dst.buffer->id);
    if (!fullBuffer(src) || !fullBuffer(dst) || !ls.sameAs(ld)) {
      unsupported(s.loc, fmt::format("copy from '{}' to '{}' between different fragment layouts "
                                     "or parts of fragments",
                                     src.buffer->name, dst.buffer->name));
      return;
    }
    for (int64_t i = 0; i < ls.slots(); ++i)
      out.push_back({thir::AssignVar{slotVars_.at(dst.buffer->id).at(i),
                                     thir::cast(slotVar(src.buffer, i), Type{dst.buffer->dtype})}});
    return;
  }
  if (!srcChip && !dstChip) {
    unsupported(s.loc, fmt::format("copy from {} '{}' to {} '{}'", tile::scopeName(src.buffer->scope),
                                   src.buffer->name, tile::scopeName(dst.buffer->scope),
                                   dst.buffer->name));
    return;
  }
  const tile::Region &chip = srcChip ? src : dst;
  const tile::Region &glob = srcChip ? dst : src;
  if (glob.buffer->scope != tile::Scope::Global) {
    unsupported(s.loc, fmt::format("copy between {} '{}' and {} '{}'",
                                   tile::scopeName(src.buffer->scope), src.buffer->name,
                                   tile::scopeName(dst.buffer->scope), dst.buffer->name));
    return;
  }
  if (!fullBuffer(chip)) {
    unsupported(s.loc, fmt::format("copy to or from a part of fragment '{}'", chip.buffer->name));
    return;
  }
  const FragmentLayout &l = fragmentLayouts_.at(chip.buffer->id);
  // Synthetic loop variables walk the fragment's elements; the global indices follow the region.
  tile::For walker;
  walker.kind = tile::LoopKind::Parallel;
  for (size_t d = 0; d < l.shape.size(); ++d) {
    walker.vars.push_back(std::make_shared<tile::Var>(tile::Var{
        -1000 - static_cast<int>(d), fmt::format("e{}", d), DType::Int32, tile::VarKind::LoopVar,
        s.loc, 0}));
    walker.extents.push_back(tile::intImm(l.shape[d]));
  }
  std::vector<tile::Expr> globalIdx;
  size_t k = 0;
  for (const tile::RegionDim &d : glob.dims) {
    if (d.dropped) {
      globalIdx.push_back(d.begin);
      continue;
    }
    globalIdx.push_back(tile::makeBinary(tile::BinOp::Add, d.begin,
                                         tile::varRef(walker.vars.at(k++), s.loc)));
  }
  const tile::BufferPtr &gbuf = glob.buffer;
  int gparam = gbuf->paramIndex;
  DType gt = gbuf->dtype, ft = chip.buffer->dtype;
  int gbytes = dtypeBytes(gt);
  // One element: masked scalar access.
  auto scalarElement = [&](int64_t slot, thir::Body &body) {
    thir::Expr off = offset(gbuf, globalIdx, {});
    thir::Expr ok = inBounds({gbuf, globalIdx}, {}, 0);
    if (!off || !ok)
      return;
    bool always = std::holds_alternative<thir::ConstInt>(ok->op);
    if (!srcChip) {
      thir::Expr safe = always ? off : thir::select(ok, off, thir::constInt(0));
      thir::Expr v = thir::globalLoad(gparam, safe, Type{gt}, gbytes);
      if (!always)
        v = thir::select(ok, v, zeroOf(gt));
      body.push_back({thir::AssignVar{slotVars_.at(chip.buffer->id).at(slot), thir::cast(v, Type{ft})}});
    } else {
      thir::GlobalStore st{gparam, off, thir::cast(slotVar(chip.buffer, slot), Type{gt}), gbytes};
      if (always) {
        body.push_back({std::move(st)});
      } else {
        thir::IfStmt g;
        g.cond = ok;
        g.then.push_back({std::move(st)});
        body.push_back({std::move(g)});
      }
    }
  };
  if (l.kind == FragmentLayout::Kind::Replicated) {
    // Loads: every thread reads every element. Stores: element e is written by thread e % T.
    thir::Expr tid = thir::special(thir::Special::ThreadIdxX);
    for (int64_t e = 0; e < l.total() && !failed_; ++e) {
      bindFlat(walker, i32(e), e, e);
      if (!srcChip) {
        scalarElement(e, out);
      } else {
        thir::IfStmt mine;
        mine.cond = thir::binary(thir::BinOp::Eq, tid, i32(e % l.threads));
        scalarElement(e, mine.then);
        out.push_back({std::move(mine)});
      }
    }
    return;
  }
  int64_t T = l.threads, v = l.vector, chunks = l.chunks(), total = l.total();
  bool lastMoves = !glob.dims.back().dropped;
  thir::Expr tid = thir::special(thir::Special::ThreadIdxX);
  for (int64_t step = 0; step < l.steps() && !failed_; ++step) {
    thir::Expr chunk = thir::binary(thir::BinOp::Add, i32(step * T), tid);
    thir::Expr flat0 = thir::binary(thir::BinOp::Mul, chunk, i32(v));
    thir::Body *target = &out;
    thir::IfStmt guard;
    bool guarded = (step + 1) * T > chunks;
    if (guarded) {
      guard.cond = thir::binary(thir::BinOp::Lt, chunk, i32(chunks));
      target = &guard.then;
    }
    int64_t lo = step * T * v, hi = std::min((step * T + T - 1) * v, total - 1);
    if (v > 1 && lastMoves) {
      // Lane 0 of the chunk addresses a whole vector: in bounds and aligned -> one access.
      bindFlat(walker, flat0, lo, hi);
      thir::Expr off = offset(gbuf, globalIdx, {});
      thir::Expr ok = inBounds({gbuf, globalIdx}, {}, static_cast<int>(v - 1));
      if (!off || !ok)
        return;
      thir::Expr aligned = thir::binary(
          thir::BinOp::Eq, thir::binary(thir::BinOp::Mod, off, thir::constInt(v)),
          thir::constInt(0));
      thir::Expr cond = thir::binary(thir::BinOp::And, ok, aligned);
      int align = static_cast<int>(v) * gbytes;
      if (align > 16)
        align = 16;
      noteAlign(gparam, align);
      thir::IfStmt split;
      split.cond = cond;
      if (!srcChip) {
        int vecVar = nextVar_++;
        split.then.push_back(
            {thir::DeclVar{vecVar, Type{gt, static_cast<int>(v)},
                           thir::globalLoad(gparam, off, Type{gt, static_cast<int>(v)}, align)}});
        for (int64_t lane = 0; lane < v; ++lane)
          split.then.push_back(
              {thir::AssignVar{slotVars_.at(chip.buffer->id).at(step * v + lane),
                               thir::cast(thir::extractLane(thir::var(vecVar, Type{gt, static_cast<int>(v)}),
                                                            static_cast<int>(lane)),
                                          Type{ft})}});
      } else {
        std::vector<thir::Expr> elems;
        for (int64_t lane = 0; lane < v; ++lane)
          elems.push_back(thir::cast(slotVar(chip.buffer, step * v + lane), Type{gt}));
        split.then.push_back({thir::GlobalStore{gparam, off, thir::makeVector(std::move(elems)), align}});
      }
      for (int64_t lane = 0; lane < v && !failed_; ++lane) {
        bindFlat(walker, thir::binary(thir::BinOp::Add, flat0, i32(lane)), lo + lane,
                 std::min(hi + lane, total - 1));
        scalarElement(step * v + lane, split.otherwise);
      }
      target->push_back({std::move(split)});
    } else {
      for (int64_t lane = 0; lane < v && !failed_; ++lane) {
        bindFlat(walker, thir::binary(thir::BinOp::Add, flat0, i32(lane)), lo + lane,
                 std::min(hi + lane, total - 1));
        scalarElement(step * v + lane, *target);
      }
    }
    if (guarded)
      out.push_back({std::move(guard)});
  }
}

void KernelLowering::lowerReduce(const tile::Stmt &s, const tile::Reduce &r, thir::Body &out) {
  const tile::BufferPtr &src = r.src.buffer, &dst = r.dst.buffer;
  if (!isOnChip(src) || !isOnChip(dst) || !fullBuffer(r.src) || !fullBuffer(r.dst) ||
      src->shape.size() != 2 || r.dim != 1) {
    unsupported(s.loc, "this reduction (supported: a whole 2-D fragment along its last "
                       "dimension into a whole fragment)");
    return;
  }
  const FragmentLayout &ls = fragmentLayouts_.at(src->id);
  const FragmentLayout &ld = fragmentLayouts_.at(dst->id);
  if (ld.kind != FragmentLayout::Kind::Replicated) {
    unsupported(s.loc, fmt::format("a reduction into '{}', whose layout is not replicated",
                                   dst->name));
    return;
  }
  ReduceOp op = reduceOp(r.kind);
  const DType acc = src->dtype == DType::Float64 ? DType::Float64 : DType::Float32;
  if (!isFloat(src->dtype)) {
    unsupported(s.loc, fmt::format("a reduction of {} values", dtypeName(src->dtype)));
    return;
  }
  int64_t R = ls.shape[0], C = ls.shape[1];
  thir::Expr identity = thir::constFloat(op.identity, acc);
  std::vector<int> partial;
  for (int64_t row = 0; row < R; ++row) {
    partial.push_back(nextVar_++);
    out.push_back({thir::DeclVar{partial.back(), Type{acc}, identity}});
  }
  auto pvar = [&](int64_t row) { return thir::var(partial[row], Type{acc}); };
  auto element = [&](thir::Expr x) {
    x = thir::cast(x, Type{acc});
    return op.abs ? thir::unary(thir::UnOp::Abs, x) : x;
  };
  auto combine = [&](int64_t row, thir::Expr x) {
    out.push_back({thir::AssignVar{partial[row], thir::binary(op.combine, pvar(row), x)}});
  };
  if (ls.kind == FragmentLayout::Kind::Replicated) {
    for (int64_t row = 0; row < R; ++row)
      for (int64_t col = 0; col < C; ++col)
        combine(row, element(slotVar(src, row * C + col)));
  } else {
    int64_t T = ls.threads, v = ls.vector, chunks = ls.chunks(), total = ls.total();
    thir::Expr tid = thir::special(thir::Special::ThreadIdxX);
    for (int64_t step = 0; step < ls.steps(); ++step) {
      thir::Expr chunk = thir::binary(thir::BinOp::Add, i32(step * T), tid);
      bool guarded = (step + 1) * T > chunks;
      thir::Expr valid = guarded ? thir::binary(thir::BinOp::Lt, chunk, i32(chunks)) : nullptr;
      for (int64_t lane = 0; lane < v; ++lane) {
        int64_t lo = step * T * v + lane, hi = std::min((step * T + T - 1) * v + lane, total - 1);
        thir::Expr x = element(slotVar(src, step * v + lane));
        int64_t rlo = lo / C, rhi = hi / C;
        thir::Expr flat = thir::binary(thir::BinOp::Add,
                                       thir::binary(thir::BinOp::Mul, chunk, i32(v)), i32(lane));
        thir::Expr row = thir::binary(thir::BinOp::FloorDiv, flat, i32(C));
        for (int64_t rr = rlo; rr <= rhi; ++rr) {
          thir::Expr take = valid;
          if (rlo != rhi) {
            thir::Expr here = thir::binary(thir::BinOp::Eq, row, i32(rr));
            take = take ? thir::binary(thir::BinOp::And, take, here) : here;
          }
          combine(rr, take ? thir::select(take, x, identity) : x);
        }
      }
    }
    // Across the warp, then across warps through shared memory.
    for (int64_t row = 0; row < R; ++row)
      for (int mask = 16; mask >= 1; mask /= 2)
        combine(row, thir::shflXor(pvar(row), mask));
    int64_t warps = T / 32;
    if (warps > 1) {
      int bytes = dtypeBytes(acc);
      out_.sharedScratchBytes =
          std::max<int>(out_.sharedScratchBytes, static_cast<int>(R * warps * bytes));
      thir::Expr warp = thir::binary(thir::BinOp::FloorDiv, tid, i32(32));
      thir::Expr laneId = thir::binary(thir::BinOp::Mod, tid, i32(32));
      thir::IfStmt leader;
      leader.cond = thir::binary(thir::BinOp::Eq, laneId, i32(0));
      for (int64_t row = 0; row < R; ++row)
        leader.then.push_back({thir::SharedStore{
            thir::binary(thir::BinOp::Mul,
                         thir::binary(thir::BinOp::Add, i32(row * warps), warp), i32(bytes)),
            pvar(row)}});
      out.push_back({thir::Barrier{}});
      out.push_back({std::move(leader)});
      out.push_back({thir::Barrier{}});
      for (int64_t row = 0; row < R; ++row) {
        out.push_back({thir::AssignVar{partial[row], identity}});
        for (int64_t w = 0; w < warps; ++w)
          combine(row, thir::sharedLoad(i32((row * warps + w) * bytes), Type{acc}));
      }
    }
  }
  for (int64_t row = 0; row < R; ++row) {
    thir::Expr result = pvar(row);
    if (!r.clear)
      result = thir::binary(op.combine, thir::cast(slotVar(dst, row), Type{acc}), result);
    out.push_back({thir::AssignVar{slotVars_.at(dst->id).at(row), thir::cast(result, Type{dst->dtype})}});
  }
}

} // namespace tilec::lower::detail
