// Tile-uniform conditions of Parallel loops: an integer comparison in a loop's body that is
// affine in the loop's variables (`k * block_N + j < S`, `bx * block_M + i >= k * block_N + j`)
// holds for every iteration when it holds at the corner of the iteration box where it is
// tightest. Such comparisons are masks that matter only at a ragged edge or on a diagonal; the
// loop is lowered twice, behind one block-uniform branch, with them known true in the first copy
// (FlashAttention-3's mask-free loops away from the diagonal). The bounds checks of global reads
// whose affine indices stay inside their tensors over the box are unswitched the same way.
#include "lower/LowerImpl.h"

#include "tileir/Arith.h"
#include "tileir/OpInterface.h"

#include <map>

namespace tilec::lower::detail {

namespace {

/// Whether `e` is the same for every iteration of a loop: no loop variable, no let of the body,
/// no load or shuffle.
bool uniform(const tile::Expr &e, const std::set<int> &loopVars, const std::set<int> &bodyLets) {
  bool ok = true;
  tile::forEachNode(e, [&](const tile::Node &n) {
    if (auto *r = std::get_if<tile::VarRef>(&n.op))
      ok = ok && !loopVars.count(r->var->id) && !bodyLets.count(r->var->id);
    ok = ok && !std::holds_alternative<tile::Load>(n.op) &&
         !std::holds_alternative<tile::Shuffle>(n.op);
  });
  return ok;
}

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
  UniformConditions out;
  Type i64{DType::Int64};
  // The smallest (or largest) value over the iteration box of an expression affine in the
  // loop's variables and in values the same for every iteration, or null; `varies`: whether a
  // loop variable counts in it.
  auto corner = [&](const tile::Expr &e, bool largest, bool *varies = nullptr) -> thir::Expr {
    auto a = tile::toAffine(e);
    if (!a)
      return nullptr;
    int64_t constant = a->constant;
    std::vector<std::pair<tile::Expr, int64_t>> terms;
    for (const auto &[key, term] : a->terms) {
      const auto &[factor, atom] = term;
      auto *r = std::get_if<tile::VarRef>(&atom->op);
      if (r && loopVars.count(r->var->id)) {
        auto [lo, hi] = range.at(r->var->id);
        constant += (factor > 0) == largest ? factor * hi : factor * lo;
        if (varies)
          *varies = *varies || factor != 0;
      } else if (uniform(atom, loopVars, bodyLets) && isInteger(atom->dtype) &&
                 isSigned(atom->dtype)) {
        terms.push_back({atom, factor});
      } else {
        return nullptr;
      }
    }
    thir::Expr at = thir::constInt(constant, DType::Int64);
    for (const auto &[term, factor] : terms) {
      thir::Expr t = lowerExpr(term, {});
      if (!t)
        return nullptr;
      t = thir::cast(t, i64);
      at = thir::binary(
          thir::BinOp::Add, at,
          factor == 1 ? t
                      : thir::binary(thir::BinOp::Mul, t, thir::constInt(factor, DType::Int64)));
    }
    return at;
  };
  auto visit = [&](const tile::Node &n) {
    auto *b = std::get_if<tile::Binary>(&n.op);
    if (!b || out.known.count(&n))
      return;
    bool less = b->op == tile::BinOp::Lt || b->op == tile::BinOp::Le;
    if (!less && b->op != tile::BinOp::Gt && b->op != tile::BinOp::Ge)
      return;
    // Signed integers only: the guard computes in 64 bits, where an unsigned wrap-around would
    // differ.
    bool signedOnly = true;
    for (const tile::Expr *side : {&b->a, &b->b})
      tile::forEachNode(*side, [&](const tile::Node &m) {
        signedOnly = signedOnly && (!isInteger(m.dtype) || isSigned(m.dtype));
      });
    if (!signedOnly || !isInteger(b->a->dtype))
      return;
    // The corner where the comparison is tightest: a - b's largest value for < and <=, its
    // smallest for > and >=.
    bool varies = false;
    thir::Expr at = corner(tile::makeBinary(tile::BinOp::Sub, b->a, b->b), less, &varies);
    if (!at || !varies)
      return;
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
  // Reads of global tensors whose every index stays inside the tensor over the whole tile (a
  // bias read by column away from the ragged end): their bounds checks go the same way, which
  // also keeps ptxas from spilling around the branch of each masked load (gemm_bias_gelu's
  // 128x256 epilogue spilled 236 bytes).
  auto visitLoad = [&](const tile::Node &n) {
    auto *ld = std::get_if<tile::Load>(&n.op);
    if (!ld || ld->buffer->scope != tile::Scope::Global || out.inBounds.count(&n) ||
        ld->indices.size() != ld->buffer->shape.size())
      return;
    thir::Expr holds;
    for (size_t d = 0; d < ld->indices.size(); ++d) {
      thir::Expr lo = corner(ld->indices[d], false), hi = corner(ld->indices[d], true);
      thir::Expr extent = lowerExpr(ld->buffer->shape[d], {});
      if (!lo || !hi || !extent)
        return;
      thir::Expr inside = thir::binary(
          thir::BinOp::And, thir::binary(thir::BinOp::Ge, lo, thir::constInt(0, DType::Int64)),
          thir::binary(thir::BinOp::Lt, hi, thir::cast(extent, i64)));
      holds = holds ? thir::binary(thir::BinOp::And, holds, inside) : inside;
    }
    if (!holds)
      return;
    out.guard = out.guard ? thir::binary(thir::BinOp::And, out.guard, holds) : holds;
    out.inBounds.insert(&n);
  };
  for (const tile::Stmt &st : f.body)
    for (const tile::Expr *e : tile::operandsOf(st).exprs)
      tile::forEachNode(*e, visitLoad);
  if (out.known.empty() && out.inBounds.empty())
    return std::nullopt;
  return out;
}

} // namespace tilec::lower::detail
