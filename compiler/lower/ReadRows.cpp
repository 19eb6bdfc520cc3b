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

/// Every value: what valueRange gives where nothing bounds an expression.
constexpr Interval kEverything{};

Interval valuesOf(const tile::Expr &e, const Ranges &ranges) {
  return valueRange(e, [&](int id) -> std::optional<Interval> {
    auto it = ranges.find(id);
    return it != ranges.end() ? std::optional(it->second) : std::nullopt;
  });
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
  auto it = v && c ? ranges.find(v->var->id) : ranges.end();
  if (it == ranges.end())
    return ranges;
  // The half-line where `var op c` holds; where it does not, the other half.
  Interval where = kEverything;
  switch (b->op) {
  case tile::BinOp::Lt:
    where.hi = *c - 1;
    break;
  case tile::BinOp::Le:
    where.hi = *c;
    break;
  case tile::BinOp::Gt:
    where.lo = *c + 1;
    break;
  case tile::BinOp::Ge:
    where.lo = *c;
    break;
  default:
    return ranges;
  }
  if (!holds)
    where = where.lo == kEverything.lo ? Interval{where.hi + 1, kEverything.hi}
                                       : Interval{kEverything.lo, where.lo - 1};
  Interval &r = it->second;
  r = {std::max(r.lo, where.lo), std::min(r.hi, where.hi)};
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
        if (!extent || begin.hi >= kEverything.hi)
          add(kEverything);
        else
          add({begin.lo, begin.hi + *extent - 1});
      } else if (u.indices && !u.indices->empty()) {
        add(valuesOf(u.indices->front(), ranges));
      } else {
        add(kEverything);
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
  Interval rows_{kEverything.hi, kEverything.lo}; // none yet
};

} // namespace

Interval rowsReadBesidesGemms(const tile::Body &body, int buffer) {
  RowReads r(buffer);
  r.body(body, {});
  return r.rows();
}

} // namespace tilec::lower::detail
