// Tile-uniform conditions of Parallel loops: an integer comparison in a loop's body that is
// affine in the loop's variables (`k * block_N + j < S`, `bx * block_M + i >= k * block_N + j`)
// holds for every iteration when it holds at the corner of the iteration box where it is
// tightest. Such comparisons are masks that matter only at a ragged edge or on a diagonal; the
// loop is lowered twice, behind one block-uniform branch, with them known true in the first copy
// (FlashAttention-3's mask-free loops away from the diagonal).
#include "lower/LowerImpl.h"

#include "tileir/OpInterface.h"

#include <map>

namespace tilec::lower::detail {

namespace {

/// sum(coef[v] * v) + sum(factor * term) + constant, each term an expression free of the loop's
/// variables and of the body's own lets.
struct Linear {
  std::map<int, int64_t> coef;
  std::vector<std::pair<tile::Expr, int64_t>> terms;
  int64_t constant = 0;

  Linear &scale(int64_t c) {
    for (auto &[v, k] : coef)
      k *= c;
    for (auto &t : terms)
      t.second *= c;
    constant *= c;
    return *this;
  }
  Linear &add(const Linear &o) {
    for (auto [v, k] : o.coef)
      coef[v] += k;
    terms.insert(terms.end(), o.terms.begin(), o.terms.end());
    constant += o.constant;
    return *this;
  }
};

class Linearizer {
public:
  Linearizer(const std::set<int> &loopVars, const std::set<int> &bodyLets)
      : loopVars_(loopVars), bodyLets_(bodyLets) {}

  /// Whether `e` is the same for every iteration of the loop (no loop variable, no let of the
  /// body, no load).
  bool uniform(const tile::Expr &e) const {
    bool ok = true;
    tile::forEachNode(e, [&](const tile::Node &n) {
      if (auto *r = std::get_if<tile::VarRef>(&n.op))
        ok = ok && !loopVars_.count(r->var->id) && !bodyLets_.count(r->var->id);
      ok = ok && !std::holds_alternative<tile::Load>(n.op) &&
           !std::holds_alternative<tile::Shuffle>(n.op);
    });
    return ok;
  }

  std::optional<Linear> operator()(const tile::Expr &e) const {
    // Signed only: the guard computes in 64 bits, where an unsigned wrap-around would differ.
    if (!e || !isInteger(e->dtype) || !isSigned(e->dtype))
      return std::nullopt;
    if (auto *c = std::get_if<tile::IntImm>(&e->op)) {
      Linear l;
      l.constant = c->value;
      return l;
    }
    if (auto *r = std::get_if<tile::VarRef>(&e->op); r && loopVars_.count(r->var->id)) {
      Linear l;
      l.coef[r->var->id] = 1;
      return l;
    }
    if (auto *b = std::get_if<tile::Binary>(&e->op)) {
      if (b->op == tile::BinOp::Add || b->op == tile::BinOp::Sub) {
        auto x = (*this)(b->a), y = (*this)(b->b);
        if (x && y)
          return x->add(b->op == tile::BinOp::Sub ? y->scale(-1) : *y);
      } else if (b->op == tile::BinOp::Mul) {
        auto ca = tile::asConstInt(b->a), cb = tile::asConstInt(b->b);
        if (cb)
          if (auto x = (*this)(b->a))
            return x->scale(*cb);
        if (ca)
          if (auto y = (*this)(b->b))
            return y->scale(*ca);
      }
    }
    if (uniform(e)) {
      Linear l;
      l.terms.push_back({e, 1});
      return l;
    }
    return std::nullopt;
  }

private:
  const std::set<int> &loopVars_, &bodyLets_;
};

} // namespace

std::optional<KernelLowering::UniformConditions>
KernelLowering::tileUniformConditions(const tile::For &f) {
  std::set<int> loopVars, bodyLets;
  std::map<int, std::pair<int64_t, int64_t>> range; // var -> [lo, hi]
  for (size_t d = 0; d < f.vars.size(); ++d) {
    auto b = tile::asConstInt(f.begins[d]), n = tile::asConstInt(f.extents[d]);
    if (!b || !n || *n < 1)
      return std::nullopt;
    loopVars.insert(f.vars[d]->id);
    range[f.vars[d]->id] = {*b, *b + *n - 1};
  }
  for (const tile::Stmt &st : f.body) {
    if (auto *l = std::get_if<tile::Let>(&st.op))
      bodyLets.insert(l->var->id);
    else if (!std::holds_alternative<tile::Store>(st.op))
      return std::nullopt; // nested control flow: keep the loop as it is
  }
  Linearizer linear(loopVars, bodyLets);
  UniformConditions out;
  Type i64{DType::Int64};
  auto visit = [&](const tile::Node &n) {
    auto *b = std::get_if<tile::Binary>(&n.op);
    if (!b || out.known.count(&n))
      return;
    bool less = b->op == tile::BinOp::Lt || b->op == tile::BinOp::Le;
    if (!less && b->op != tile::BinOp::Gt && b->op != tile::BinOp::Ge)
      return;
    auto x = linear(b->a), y = linear(b->b);
    if (!x || !y)
      return;
    Linear d = x->add(y->scale(-1)); // a - b
    bool varies = false;
    // The corner where the comparison is tightest: d's largest value for < and <=, its smallest
    // for > and >=.
    int64_t extreme = d.constant;
    for (auto [v, c] : d.coef) {
      if (c == 0)
        continue;
      varies = true;
      auto [lo, hi] = range.at(v);
      extreme += (c > 0) == less ? c * hi : c * lo;
    }
    if (!varies)
      return;
    thir::Expr at = thir::constInt(extreme, DType::Int64);
    for (const auto &[term, factor] : d.terms) {
      thir::Expr t = lowerExpr(term, {});
      if (!t)
        return;
      t = thir::cast(t, i64);
      at = thir::binary(
          thir::BinOp::Add, at,
          factor == 1 ? t
                      : thir::binary(thir::BinOp::Mul, t, thir::constInt(factor, DType::Int64)));
    }
    thir::BinOp op = b->op == tile::BinOp::Lt   ? thir::BinOp::Lt
                     : b->op == tile::BinOp::Le ? thir::BinOp::Le
                     : b->op == tile::BinOp::Gt ? thir::BinOp::Gt
                                                : thir::BinOp::Ge;
    thir::Expr holds = thir::binary(op, at, thir::constInt(0, DType::Int64));
    out.guard = out.guard ? thir::binary(thir::BinOp::And, out.guard, holds) : holds;
    out.known.insert(&n);
  };
  for (const tile::Stmt &st : f.body)
    for (const tile::Expr *e : tile::operandsOf(st).exprs)
      tile::forEachNode(*e, visit);
  if (out.known.empty())
    return std::nullopt;
  return out;
}

} // namespace tilec::lower::detail
