// Fragments (register tiles) and the tile operations on them: elementwise Parallel loops,
// copies between global memory and fragments, fills (reductions: LowerReduce.cpp). The layouts come
// from analysis::inferFragmentLayouts; this file spells them out per thread. Every per-thread slot
// is a separate variable, and every loop over a thread's slots is unrolled here, so that slot
// numbers are compile-time constants and the fragment lives in registers.
#include "lower/LowerImpl.h"

#include "analysis/ParallelLayout.h"
#include "tileir/Arith.h"
#include "tileir/OpInterface.h"

#include <functional>
#include <stdexcept>

#include <fmt/format.h>

namespace tilec::lower::detail {

using analysis::FragmentLayout;

MmaWarp mmaWarp(const FragmentLayout &l, thir::Expr thread) {
  // The mma instruction families are defined on 32-lane warps, MFMA on 64-lane wavefronts.
  IndexExpr warp = IndexExpr{std::move(thread)} / l.warpLanes();
  return {l.warpRowOf(warp).e, l.warpColOf(warp).e};
}

thir::Expr mmaTileRow(const FragmentLayout &l, thir::Expr wm, int64_t mi) {
  return l.tileRowOf(IndexExpr{wm}, mi).e;
}

bool KernelLowering::isOnChip(const tile::BufferPtr &b) const {
  return b->scope == tile::Scope::Fragment || b->scope == tile::Scope::Local;
}

namespace {

/// Evaluates an index expression of chunksOf for one thread (the only non-constant it reads).
std::optional<int64_t> evalForThread(const thir::Expr &e, int64_t tid) {
  if (auto *c = std::get_if<thir::ConstInt>(&e->op))
    return c->value;
  if (auto *s = std::get_if<thir::SpecialReg>(&e->op))
    return s->reg == thir::Special::ThreadIdxX ? std::optional<int64_t>(tid) : std::nullopt;
  if (auto *c = std::get_if<thir::Cast>(&e->op))
    return evalForThread(c->a, tid);
  auto *b = std::get_if<thir::Binary>(&e->op);
  if (!b)
    return std::nullopt;
  auto x = evalForThread(b->a, tid), y = evalForThread(b->b, tid);
  if (!x || !y)
    return std::nullopt;
  switch (b->op) {
  case thir::BinOp::Add:
    return *x + *y;
  case thir::BinOp::Mul:
    return *x * *y;
  case thir::BinOp::FloorDiv:
    return *y > 0 && *x >= 0 ? std::optional<int64_t>(*x / *y) : std::nullopt;
  case thir::BinOp::Mod:
    return *y > 0 && *x >= 0 ? std::optional<int64_t>(*x % *y) : std::nullopt;
  case thir::BinOp::Lt:
    return *x < *y;
  case thir::BinOp::Eq:
    return *x == *y;
  case thir::BinOp::And:
    return *x && *y;
  default:
    return std::nullopt;
  }
}

} // namespace

bool KernelLowering::verifyFragmentLowering() {
  for (const tile::BufferPtr &b : k_.buffers) {
    if (!isOnChip(b))
      continue;
    const FragmentLayout &l = fragmentLayouts_.at(b->id);
    auto fail = [&](const std::string &why) {
      diags_.error(b->loc, fmt::format("internal compiler error: the layout of '{}' ({}) is "
                                       "inconsistent: {}",
                                       b->name, l.describe(), why));
      failed_ = true;
      return false;
    };
    if (auto why = analysis::verifyOwnership(l))
      return fail(*why);
    std::vector<ChunkRef> chunks = chunksOf(l);
    for (int64_t t = 0; t < l.threads; ++t) {
      std::vector<bool> seen(static_cast<size_t>(l.slots()), false);
      for (const ChunkRef &c : chunks) {
        std::optional<int64_t> live = c.guard ? evalForThread(c.guard, t) : 1;
        std::vector<int64_t> idx;
        for (const thir::Expr &i : c.index)
          if (auto v = evalForThread(i, t))
            idx.push_back(*v);
        if (!live || idx.size() != c.index.size())
          return fail("an index expression could not be evaluated");
        for (int64_t lane = 0; lane < l.vector; ++lane) {
          int64_t slot = c.slot0 + lane;
          seen.at(static_cast<size_t>(slot)) = true;
          std::optional<int64_t> flat;
          if (*live) {
            int64_t f = 0;
            for (size_t d = 0; d < idx.size(); ++d)
              f = f * l.shape[d] + idx[d] + (d + 1 == idx.size() ? lane : 0);
            flat = f;
          }
          if (flat != l.elementAt(t, slot))
            return fail(
                fmt::format("thread {} slot {}: lowering uses element {}, the layout "
                            "says {}",
                            t, slot, flat ? std::to_string(*flat) : "none",
                            l.elementAt(t, slot) ? std::to_string(*l.elementAt(t, slot)) : "none"));
        }
      }
      if (std::find(seen.begin(), seen.end(), false) != seen.end())
        return fail(fmt::format("thread {} never visits one of its slots", t));
    }
  }
  return true;
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

namespace {

/// Row-major decomposition of a flat index whose value lies in [lo, hi]: an index that is the
/// same over the whole range becomes a constant.
void decompose(const thir::Expr &flat, int64_t lo, int64_t hi, const std::vector<int64_t> &shape,
               std::vector<thir::Expr> &index, std::vector<Interval> &range) {
  size_t rank = shape.size();
  index.assign(rank, nullptr);
  range.assign(rank, Interval{});
  int64_t stride = 1;
  for (size_t d = rank; d-- > 0;) {
    int64_t ext = shape[d];
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
    index[d] = x;
    range[d] = r;
    stride *= ext;
  }
}

} // namespace

std::vector<ChunkRef> KernelLowering::chunksOf(const FragmentLayout &l) {
  std::vector<ChunkRef> out;
  thir::Expr tid = thread();
  int64_t T = l.threads, v = l.vector;
  switch (l.kind) {
  case FragmentLayout::Kind::Flat: {
    int64_t chunks = l.chunks(), total = l.total();
    for (int64_t step = 0; step < l.steps(); ++step) {
      ChunkRef c;
      c.slot0 = step * v;
      thir::Expr chunk = thir::binary(thir::BinOp::Add, i32(step * T), tid);
      if ((step + 1) * T > chunks)
        c.guard = thir::binary(thir::BinOp::Lt, chunk, i32(chunks));
      int64_t lo = step * T * v, hi = std::min((step * T + T - 1) * v, total - v);
      decompose(thir::binary(thir::BinOp::Mul, chunk, i32(v)), lo, hi, l.shape, c.index, c.range);
      out.push_back(std::move(c));
    }
    break;
  }
  case FragmentLayout::Kind::RowGroups: {
    int64_t G = l.groups, P = l.groupThreads(), R = l.rows(), cpr = l.chunksPerRow();
    thir::Expr g = P == 1 ? tid : thir::binary(thir::BinOp::FloorDiv, tid, i32(P));
    thir::Expr tg = thir::binary(thir::BinOp::Mod, tid, i32(P));
    for (int64_t ri = 0; ri < l.rowsPerGroup(); ++ri) {
      for (int64_t sq = 0; sq < l.stepsPerRow(); ++sq) {
        ChunkRef c;
        c.rowIter = ri;
        c.slot0 = (ri * l.stepsPerRow() + sq) * v;
        thir::Expr row = G == 1 ? i32(ri) : thir::binary(thir::BinOp::Add, i32(ri * G), g);
        thir::Expr q = thir::binary(thir::BinOp::Add, i32(sq * P), tg);
        if ((ri + 1) * G > R)
          c.guard = thir::binary(thir::BinOp::Lt, row, i32(R));
        if ((sq + 1) * P > cpr)
          c.guard = conj(c.guard, thir::binary(thir::BinOp::Lt, q, i32(cpr)));
        c.index = {row, thir::binary(thir::BinOp::Mul, q, i32(v))};
        c.range = {Interval{ri * G, std::min(ri * G + G - 1, R - 1)},
                   Interval{sq * P * v, std::min(sq * P + P - 1, cpr - 1) * v}};
        if (G == 1)
          c.range[0] = {ri, ri};
        if (P == 1 || c.range[1].lo == c.range[1].hi)
          c.index[1] = i32(c.range[1].lo);
        out.push_back(std::move(c));
      }
    }
    break;
  }
  case FragmentLayout::Kind::Replicated: {
    for (int64_t e = 0; e < l.total(); ++e) {
      ChunkRef c;
      c.slot0 = e;
      decompose(i32(e), e, e, l.shape, c.index, c.range);
      out.push_back(std::move(c));
    }
    break;
  }
  case FragmentLayout::Kind::MmaAccumulator:
  case FragmentLayout::Kind::MmaRows: {
    bool acc = l.kind == FragmentLayout::Kind::MmaAccumulator;
    int64_t WN = acc ? l.warpTileN() : 8, NI = WN / 8;
    thir::Expr lane = thir::binary(thir::BinOp::Mod, tid, i32(opts_.target.warpSize));
    thir::Expr g = thir::binary(thir::BinOp::FloorDiv, lane, i32(4));
    thir::Expr t4 = thir::binary(thir::BinOp::Mod, lane, i32(4));
    MmaWarp w = mmaWarp(l, thread());
    thir::Expr colBase =
        thir::binary(thir::BinOp::Add, thir::binary(thir::BinOp::Mul, w.col, i32(WN)),
                     thir::binary(thir::BinOp::Mul, t4, i32(2)));
    for (int64_t mi = 0; mi < l.warpTileM() / 16; ++mi) {
      // The rows tile mi covers over all warp rows, for the range analysis.
      int64_t lo = l.tileRow(0, mi), hi = lo;
      for (int64_t wm = 0; wm < l.warpsM; ++wm) {
        lo = std::min(lo, l.tileRow(wm, mi));
        hi = std::max(hi, l.tileRow(wm, mi));
      }
      thir::Expr row = thir::binary(thir::BinOp::Add, mmaTileRow(l, w.row, mi), g);
      for (int64_t ni = 0; ni < NI; ++ni)
        for (int64_t h = 0; h < 2; ++h) {
          ChunkRef c;
          c.slot0 = acc ? (mi * NI + ni) * 4 + 2 * h : mi * 2 + h;
          c.rowIter = mi * 2 + h;
          c.index = {thir::binary(thir::BinOp::Add, row, i32(8 * h))};
          c.range = {Interval{lo + 8 * h, hi + 8 * h + 7}};
          if (acc) {
            c.index.push_back(thir::binary(thir::BinOp::Add, colBase, i32(ni * 8)));
            c.range.push_back(Interval{ni * 8, (l.warpsN - 1) * WN + ni * 8 + 6});
          }
          out.push_back(std::move(c));
        }
    }
    break;
  }
  case FragmentLayout::Kind::MfmaAccumulator:
  case FragmentLayout::Kind::MfmaRows: {
    // Single elements: lane l holds rows 4 (l / 16) + i of column l % 16 in each 16 x 16 block.
    bool acc = l.kind == FragmentLayout::Kind::MfmaAccumulator;
    int64_t WN = acc ? l.warpTileN() : 16, NI = WN / 16;
    thir::Expr lane = thir::binary(thir::BinOp::Mod, tid, i32(64));
    thir::Expr group4 =
        thir::binary(thir::BinOp::Mul, thir::binary(thir::BinOp::FloorDiv, lane, i32(16)), i32(4));
    MmaWarp w = mmaWarp(l, thread());
    thir::Expr colBase =
        thir::binary(thir::BinOp::Add, thir::binary(thir::BinOp::Mul, w.col, i32(WN)),
                     thir::binary(thir::BinOp::Mod, lane, i32(16)));
    for (int64_t mi = 0; mi < l.warpTileM() / 16; ++mi) {
      int64_t lo = l.tileRow(0, mi), hi = l.tileRow(l.warpsM - 1, mi);
      thir::Expr row = thir::binary(thir::BinOp::Add, mmaTileRow(l, w.row, mi), group4);
      for (int64_t ni = 0; ni < NI; ++ni)
        for (int64_t i = 0; i < 4; ++i) {
          ChunkRef c;
          c.slot0 = acc ? (mi * NI + ni) * 4 + i : mi * 4 + i;
          c.rowIter = mi * 4 + i;
          c.index = {thir::binary(thir::BinOp::Add, row, i32(i))};
          c.range = {Interval{lo + i, hi + 12 + i}};
          if (acc) {
            c.index.push_back(thir::binary(thir::BinOp::Add, colBase, i32(ni * 16)));
            c.range.push_back(Interval{ni * 16, (l.warpsN - 1) * WN + ni * 16 + 15});
          }
          out.push_back(std::move(c));
        }
    }
    break;
  }
  case FragmentLayout::Kind::MmaOperandB: {
    // Chunks of 2 consecutive k ((N, K): adjacent elements) or single elements ((K, N)).
    int64_t WN = l.operandWarpN(), NI = WN / 8, KI = l.operandK() / 16;
    thir::Expr lane = thir::binary(thir::BinOp::Mod, tid, i32(opts_.target.warpSize));
    thir::Expr g = thir::binary(thir::BinOp::FloorDiv, lane, i32(4));
    thir::Expr t2 =
        thir::binary(thir::BinOp::Mul, thir::binary(thir::BinOp::Mod, lane, i32(4)), i32(2));
    thir::Expr nBase = thir::binary(
        thir::BinOp::Add, thir::binary(thir::BinOp::Mul, mmaWarp(l, thread()).col, i32(WN)), g);
    for (int64_t kk = 0; kk < KI; ++kk)
      for (int64_t ni = 0; ni < NI; ++ni)
        for (int64_t h = 0; h < 2; ++h)
          for (int64_t e = 0; e < 2; e += l.vector) {
            ChunkRef c;
            c.slot0 = (kk * NI + ni) * 4 + 2 * h + e;
            int64_t k0 = kk * 16 + 8 * h + e;
            thir::Expr n = thir::binary(thir::BinOp::Add, nBase, i32(ni * 8));
            thir::Expr k = thir::binary(thir::BinOp::Add, t2, i32(k0));
            Interval rn{ni * 8, (l.warpsN - 1) * WN + ni * 8 + 7}, rk{k0, k0 + 6};
            c.index = l.nByK ? std::vector<thir::Expr>{n, k} : std::vector<thir::Expr>{k, n};
            c.range = l.nByK ? std::vector<Interval>{rn, rk} : std::vector<Interval>{rk, rn};
            out.push_back(std::move(c));
          }
    break;
  }
  case FragmentLayout::Kind::GroupReplicated: {
    int64_t G = l.groups, P = l.groupThreads(), R = l.rows();
    thir::Expr g = P == 1 ? tid : thir::binary(thir::BinOp::FloorDiv, tid, i32(P));
    for (int64_t ri = 0; ri < l.rowsPerGroup(); ++ri) {
      ChunkRef c;
      c.slot0 = ri;
      c.rowIter = ri;
      thir::Expr row = G == 1 ? i32(ri) : thir::binary(thir::BinOp::Add, i32(ri * G), g);
      if ((ri + 1) * G > R)
        c.guard = thir::binary(thir::BinOp::Lt, row, i32(R));
      c.index = {row};
      c.range = {G == 1 ? Interval{ri, ri} : Interval{ri * G, std::min(ri * G + G - 1, R - 1)}};
      out.push_back(std::move(c));
    }
    break;
  }
  }
  return out;
}

void KernelLowering::bindChunk(const std::vector<tile::VarPtr> &vars, const ChunkRef &c,
                               int64_t lane) {
  for (size_t d = 0; d < vars.size(); ++d) {
    thir::Expr x = c.index[d];
    Interval r = c.range[d];
    if (d + 1 == vars.size() && lane != 0) {
      x = std::holds_alternative<thir::ConstInt>(x->op)
              ? i32(std::get<thir::ConstInt>(x->op).value + lane)
              : thir::binary(thir::BinOp::Add, x, i32(lane));
      r = {r.lo + lane, r.hi + lane};
    }
    bind(*vars[d], x, r);
  }
}

bool KernelLowering::isOwnElement(const std::vector<tile::Expr> &indices) const {
  if (!element_ || indices.size() != element_->loopVarIds.size())
    return false;
  for (size_t d = 0; d < indices.size(); ++d) {
    auto *ref = std::get_if<tile::VarRef>(&indices[d]->op);
    if (!ref || ref->var->id != element_->loopVarIds[d])
      return false;
  }
  return true;
}

int64_t KernelLowering::ownSlot(const tile::BufferPtr &buf,
                                const std::vector<tile::Expr> &indices) const {
  if (!element_)
    return -1;
  const FragmentLayout &l = fragmentLayouts_.at(buf->id);
  const FragmentLayout &e = *element_->layout;
  if (l.distributed() && l.sameAs(e) && isOwnElement(indices))
    return element_->slot;
  // A row value read from the loop over its rows or over the rows' elements.
  if (l.rowValues() && indices.size() == 1 && l.rowsOf(e)) {
    auto *ref = std::get_if<tile::VarRef>(&indices[0]->op);
    if (ref && ref->var->id == element_->loopVarIds[0])
      return element_->rowIter;
  }
  return -1;
}

thir::Expr KernelLowering::fragmentRead(const tile::Expr &e, const tile::Load &op) {
  const tile::BufferPtr &buf = op.buffer;
  const FragmentLayout &l = fragmentLayouts_.at(buf->id);
  if (int64_t slot = ownSlot(buf, op.indices); slot >= 0)
    return slotVar(buf, slot);
  if (l.kind != FragmentLayout::Kind::Replicated) {
    unsupported(e->loc, fmt::format("reading fragment '{}' at an element this thread does not "
                                    "hold (its layout: {})",
                                    buf->name, l.describe()));
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
  if (int64_t slot = ownSlot(buf, st.indices); slot >= 0) {
    out.push_back({thir::AssignVar{slotVars_.at(buf->id).at(slot), value}});
    return;
  }
  if (l.kind != FragmentLayout::Kind::Replicated) {
    unsupported(s.loc, fmt::format("writing fragment '{}' at an element this thread does not "
                                   "hold (its layout: {})",
                                   buf->name, l.describe()));
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
  std::vector<tile::BufferPtr> bufs = tile::buffersIn(f.body);
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
    if (l.shape != loopShape || l.kind == FragmentLayout::Kind::Replicated)
      continue;
    // A distributed fragment decides over a row-value one.
    if (!anchor || (anchor->rowValues() && l.distributed()))
      anchor = &l;
  }
  if (!anyOnChip)
    return false;
  FragmentLayout replicated;
  if (!anchor) {
    // Every thread runs every iteration: the loop only touches replicated data.
    replicated.kind = FragmentLayout::Kind::Replicated;
    replicated.shape = loopShape;
    replicated.threads = tileThreads_;
    if (replicated.total() > 1024) {
      unsupported(s.loc, fmt::format("a Parallel loop of {} iterations over replicated "
                                     "fragments (the limit is 1024)",
                                     replicated.total()));
      return true;
    }
    anchor = &replicated;
  }
  const FragmentLayout &l = *anchor;
  std::vector<int> loopVarIds;
  for (const tile::VarPtr &v : f.vars)
    loopVarIds.push_back(v->id);
  std::set<int> outerLets;
  for (const auto &[id, v] : letVars_)
    outerLets.insert(id);
  std::set<int> savedDeclared = declaredHere_;
  inParallel_ = true;
  // Loads are shared between chunks only in a body of element statements, none storing to
  // the tensor loaded.
  ChunkLoadCache loopLoads;
  bool shareLoads = true;
  for (const tile::Stmt &st : f.body) {
    if (auto *store = std::get_if<tile::Store>(&st.op))
      loopLoads.written.insert(store->buffer->id);
    else
      shareLoads = shareLoads && std::holds_alternative<tile::Let>(st.op);
  }
  auto lowerChunks = [&](thir::Body &into) {
    // Each copy of an unswitched loop loads for itself: the other's variables are not set here.
    loopLoads.loads.clear();
    for (const ChunkRef &c : chunksOf(l)) {
      thir::Body *target = &into;
      thir::IfStmt guard;
      if (c.guard) {
        guard.cond = c.guard;
        target = &guard.then;
      }
      chunkLoads_.clear();
      if (l.vector > 1 && l.distributed())
        preloadChunk(f, c, l.vector, *target, c.guard || !shareLoads ? nullptr : &loopLoads);
      for (int64_t lane = 0; lane < l.vector && !failed_; ++lane) {
        bindChunk(f.vars, c, lane);
        currentLane_ = lane;
        element_ = ElementContext{&l, loopVarIds, c.slot0 + lane, c.rowIter};
        lowerBody(f.body, *target, {});
        element_.reset();
        // Per-element temporaries end with the element.
        declaredHere_ = savedDeclared;
        for (auto it = letVars_.begin(); it != letVars_.end();)
          it = outerLets.count(it->first) ? std::next(it) : letVars_.erase(it);
      }
      chunkLoads_.clear();
      if (c.guard)
        into.push_back({std::move(guard)});
      if (failed_)
        break;
    }
  };
  // Masks that hold on the whole tile (away from a ragged edge or a causal diagonal) are known
  // true in a first copy of the loop, behind one branch that every thread takes alike.
  if (auto uniform = tileUniformConditions(f)) {
    thir::IfStmt unswitched{uniform->guard, {}, {}};
    knownTrue_ = std::move(uniform->known);
    knownInBounds_ = std::move(uniform->inBounds);
    lowerChunks(unswitched.then);
    knownTrue_.clear();
    knownInBounds_.clear();
    lowerChunks(unswitched.otherwise);
    out.push_back({std::move(unswitched)});
  } else {
    lowerChunks(out);
  }
  inParallel_ = false;
  analysis::ParallelLayout pl;
  pl.total = l.total();
  pl.threads = l.threads;
  pl.vector = l.vector;
  pl.reason = l.vectorReason.empty() ? "no vector" : l.vectorReason;
  pl.mapping = "follows the fragment layout: " + l.describe();
  layouts_.push_back({s.loc, pl});
  return true;
}

void KernelLowering::preloadChunk(const tile::For &f, const ChunkRef &c, int vector,
                                  thir::Body &out, ChunkLoadCache *cache) {
  const tile::Var &inner = *f.vars.back();
  std::vector<const tile::Node *> loads;
  auto walk = [&](const tile::Expr &e) {
    tile::forEachNode(e, [&](const tile::Node &n) {
      if (auto *l = std::get_if<tile::Load>(&n.op); l && l->buffer->scope == tile::Scope::Global)
        loads.push_back(&n);
    });
  };
  for (const tile::Stmt &s : f.body) {
    if (auto *l = std::get_if<tile::Let>(&s.op))
      walk(l->value);
    else if (auto *st = std::get_if<tile::Store>(&s.op))
      walk(st->value);
  }
  bindChunk(f.vars, c, 0);
  for (const tile::Node *n : loads) {
    if (chunkLoads_.count(n))
      continue;
    const tile::Load &ld = std::get<tile::Load>(n->op);
    const tile::BufferPtr &buf = ld.buffer;
    if (dtypeBytes(buf->dtype) * vector > 16)
      continue;
    // Only the last index may move with the loop's last variable, with step 1.
    bool ok = true;
    for (size_t d = 0; d + 1 < ld.indices.size() && ok; ++d)
      ok = !analysis::mentions(ld.indices[d], inner);
    auto form = ok ? tile::toAffine(ld.indices.back()) : std::nullopt;
    if (!form)
      continue;
    tile::Expr rest = tile::intImm(form->constant);
    bool moves = false;
    for (const auto &[key, term] : form->terms) {
      auto *ref = std::get_if<tile::VarRef>(&term.second->op);
      if (ref && ref->var->id == inner.id) {
        ok = ok && term.first == 1;
        moves = true;
      } else {
        ok = ok && !analysis::mentions(term.second, inner);
        rest = tile::makeBinary(
            tile::BinOp::Add, rest,
            tile::makeBinary(tile::BinOp::Mul, term.second, tile::intImm(term.first)));
      }
    }
    // Lane 0's loop variable is a multiple of the vector width by construction of the layout;
    // the rest of the index and every row stride must be too, and all lanes in bounds.
    ok = ok && moves && tile::isMultipleOf(rest, vector);
    int64_t stride = 1;
    for (size_t d = ld.indices.size(); ok && d-- > 1;) {
      auto n = tile::asConstInt(buf->shape[d]);
      ok = n.has_value();
      if (ok)
        stride *= *n;
      ok = ok && stride % vector == 0;
    }
    if (!ok)
      continue;
    thir::Expr inb = knownInBounds_.count(n)
                         ? thir::constInt(1, DType::Bool)
                         : inBounds({buf, ld.indices}, {}, vector - 1, 0, IndexFacts::Grid);
    if (!inb)
      continue;
    auto *known = std::get_if<thir::ConstInt>(&inb->op);
    if (known && !known->value)
      continue;
    thir::Expr off = offset(buf, ld.indices, {});
    if (!off)
      continue;
    // Chunks of other rows read the same vector of a tensor indexed by the column alone (a
    // bias, a norm's weight): load it once, in the first chunk, if no chunk is guarded.
    std::string key;
    if (cache && !cache->written.count(buf->id)) {
      key = thir::printExpr(off, out_);
      if (auto it = cache->loads.find({n, key}); it != cache->loads.end()) {
        chunkLoads_[n] = it->second;
        continue;
      }
    }
    Type vt{buf->dtype, vector};
    int align = dtypeBytes(buf->dtype) * vector;
    noteAlign(buf->paramIndex, align);
    int id = nextVar_++;
    thir::Expr whole = thir::globalLoad(buf->paramIndex, off, vt, align);
    if (known) {
      out.push_back({thir::DeclVar{id, vt, whole}});
    } else {
      // Only the chunk at a tensor's ragged end fails the check (a symbolic extent): the others
      // take one vector load in place of a masked load per element.
      std::vector<thir::Expr> elems;
      for (int lane = 0; lane < vector; ++lane) {
        bindChunk(f.vars, c, lane);
        thir::Expr laneOff = offset(buf, ld.indices, {});
        thir::Expr e = laneOff ? maskedGlobalLoad(buf, ld.indices, laneOff, {}) : nullptr;
        if (!e)
          break;
        elems.push_back(std::move(e));
      }
      bindChunk(f.vars, c, 0);
      if (elems.size() != static_cast<size_t>(vector))
        return; // reported
      std::vector<thir::Expr> zeros(vector, zeroOf(buf->dtype));
      out.push_back({thir::DeclVar{id, vt, thir::makeVector(std::move(zeros))}});
      thir::Body partial{{thir::AssignVar{id, thir::makeVector(std::move(elems))}}};
      // A vector wholly outside (at a width divisible by the vector, every one that fails)
      // keeps its zeros without a check per element.
      thir::Expr any = inBounds({buf, ld.indices}, {}, 0, vector - 1, IndexFacts::Grid);
      if (!any)
        return;
      partial = {{thir::IfStmt{any, std::move(partial), {}}}};
      out.push_back({thir::IfStmt{inb, {{thir::AssignVar{id, whole}}}, std::move(partial)}});
    }
    chunkLoads_[n] = {id, vt};
    if (!key.empty())
      cache->loads[{n, key}] = {id, vt};
  }
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

} // namespace tilec::lower::detail
