// Which rows of a fragment a kernel reads, apart from the gemms that accumulate into it: the
// rows of a gemm's result that no statement reads need not be computed, and a warpgroup whose
// rows are all unread issues none of the gemm's instructions (thir::Wgmma::active). W4A16 with
// K split between two warpgroups (tests/gpu/kernels/w4a16_words_ksplit.tile) has one gemm per
// half of K, each read only in the rows of the warpgroup that dequantized that half.
#include "lower/LowerImpl.h"

#include "tileir/OpInterface.h"

#include <map>

namespace tilec::lower::detail {

namespace {

using Ranges = std::map<int, Interval>;

constexpr int64_t kBig = std::numeric_limits<int64_t>::max() / 4;

Interval everything() { return {-kBig, kBig}; }

/// The values `e` takes where the variables lie in `ranges`; every value when not known.
Interval valuesOf(const tile::Expr &e, const Ranges &ranges) {
  if (auto c = tile::asConstInt(e))
    return {*c, *c};
  if (auto *r = std::get_if<tile::VarRef>(&e->op)) {
    auto it = ranges.find(r->var->id);
    return it != ranges.end() ? it->second : everything();
  }
  auto *b = std::get_if<tile::Binary>(&e->op);
  if (!b)
    return everything();
  Interval x = valuesOf(b->a, ranges), y = valuesOf(b->b, ranges);
  if (x.lo <= -kBig || x.hi >= kBig || y.lo <= -kBig || y.hi >= kBig)
    return everything();
  switch (b->op) {
  case tile::BinOp::Add:
    return {x.lo + y.lo, x.hi + y.hi};
  case tile::BinOp::Sub:
    return {x.lo - y.hi, x.hi - y.lo};
  case tile::BinOp::Mul:
    if (y.lo == y.hi && y.lo >= 0)
      return {x.lo * y.lo, x.hi * y.lo};
    return everything();
  case tile::BinOp::FloorDiv:
    if (y.lo == y.hi && y.lo > 0 && x.lo >= 0)
      return {x.lo / y.lo, x.hi / y.lo};
    return everything();
  case tile::BinOp::Mod:
    if (y.lo == y.hi && y.lo > 0)
      return x.lo >= 0 && x.hi < y.lo ? x : Interval{0, y.lo - 1};
    return everything();
  default:
    return everything();
  }
}

/// `ranges` where `cond` is `holds`: a comparison of a variable with a constant narrows the
/// variable's range (and `a and b` both, where it holds); nullopt where no value is left.
std::optional<Ranges> narrowed(const tile::Expr &cond, bool holds, Ranges ranges) {
  auto *b = std::get_if<tile::Binary>(&cond->op);
  if (!b)
    return ranges;
  if (b->op == tile::BinOp::And) {
    if (!holds)
      return ranges;
    auto left = narrowed(b->a, true, std::move(ranges));
    return left ? narrowed(b->b, true, std::move(*left)) : std::nullopt;
  }
  auto *v = std::get_if<tile::VarRef>(&b->a->op);
  auto c = tile::asConstInt(b->b);
  if (!v || !c)
    return ranges;
  auto it = ranges.find(v->var->id);
  if (it == ranges.end())
    return ranges;
  tile::BinOp op = b->op;
  if (!holds) {
    switch (op) {
    case tile::BinOp::Lt:
      op = tile::BinOp::Ge;
      break;
    case tile::BinOp::Le:
      op = tile::BinOp::Gt;
      break;
    case tile::BinOp::Gt:
      op = tile::BinOp::Le;
      break;
    case tile::BinOp::Ge:
      op = tile::BinOp::Lt;
      break;
    default:
      return ranges;
    }
  }
  Interval &r = it->second;
  switch (op) {
  case tile::BinOp::Lt:
    r.hi = std::min(r.hi, *c - 1);
    break;
  case tile::BinOp::Le:
    r.hi = std::min(r.hi, *c);
    break;
  case tile::BinOp::Gt:
    r.lo = std::max(r.lo, *c + 1);
    break;
  case tile::BinOp::Ge:
    r.lo = std::max(r.lo, *c);
    break;
  default:
    return ranges;
  }
  if (r.lo > r.hi)
    return std::nullopt;
  return ranges;
}

class RowReads {
public:
  explicit RowReads(int buffer) : buffer_(buffer) {}

  void body(const tile::Body &b, const Ranges &ranges) {
    for (const tile::Stmt &s : b)
      stmt(s, ranges);
  }
  Interval rows() const { return rows_; }

private:
  void add(Interval i) {
    rows_.lo = std::min(rows_.lo, i.lo);
    rows_.hi = std::max(rows_.hi, i.hi);
  }

  // The loads in `e`, each branch of a select under its condition.
  void expr(const tile::Expr &e, const Ranges &ranges) {
    if (!e)
      return;
    if (auto *sel = std::get_if<tile::Select>(&e->op)) {
      expr(sel->cond, ranges);
      if (auto r = narrowed(sel->cond, true, ranges))
        expr(sel->a, *r);
      if (auto r = narrowed(sel->cond, false, ranges))
        expr(sel->b, *r);
      return;
    }
    if (auto *l = std::get_if<tile::Load>(&e->op);
        l && l->buffer->id == buffer_ && !l->indices.empty())
      add(valuesOf(l->indices.front(), ranges));
    for (const tile::Expr *x : tile::operandsOf(*e))
      expr(*x, ranges);
  }

  void stmt(const tile::Stmt &s, Ranges ranges) {
    const tile::Operands ops = tile::operandsOf(s);
    const auto *gemm = std::get_if<tile::Gemm>(&s.op);
    for (const tile::BufferUse &u : ops.uses) {
      if (u.buffer->id != buffer_ || u.access == tile::Access::Write ||
          u.access == tile::Access::Name)
        continue;
      if (gemm && u.region == &gemm->c)
        continue; // accumulating into the buffer reads each row for that row alone
      if (u.region && !u.region->dims.empty()) {
        const tile::RegionDim &d = u.region->dims.front();
        Interval begin = valuesOf(d.begin, ranges);
        auto extent = d.dropped ? std::optional<int64_t>(1) : tile::asConstInt(d.extent);
        if (!extent || begin.hi >= kBig)
          add(everything());
        else
          add({begin.lo, begin.hi + *extent - 1});
      } else if (u.indices && !u.indices->empty()) {
        add(valuesOf(u.indices->front(), ranges));
      } else {
        add(everything());
      }
    }
    if (auto *i = std::get_if<tile::If>(&s.op)) {
      expr(i->cond, ranges);
      if (auto r = narrowed(i->cond, true, ranges))
        body(i->then, *r);
      if (auto r = narrowed(i->cond, false, ranges))
        body(i->otherwise, *r);
      return;
    }
    for (const tile::Expr *e : ops.exprs)
      expr(*e, ranges);
    if (auto *f = std::get_if<tile::For>(&s.op)) {
      const bool unitStep = !f->step || tile::asConstInt(f->step) == 1;
      for (size_t v = 0; v < f->vars.size(); ++v) {
        auto begin = v < f->begins.size() && f->begins[v] ? tile::asConstInt(f->begins[v])
                                                          : std::optional<int64_t>(0);
        auto extent = tile::asConstInt(f->extents[v]);
        if (begin && extent && unitStep && *extent > 0)
          ranges[f->vars[v]->id] = {*begin, *begin + *extent - 1};
        else
          ranges.erase(f->vars[v]->id);
      }
    }
    for (const tile::Body *b : ops.bodies)
      body(*b, ranges);
  }

  int buffer_;
  Interval rows_{kBig, -kBig}; // none yet
};

} // namespace

Interval rowsReadBesidesGemms(const tile::Body &body, int buffer) {
  RowReads r(buffer);
  r.body(body, {});
  return r.rows();
}

} // namespace tilec::lower::detail
