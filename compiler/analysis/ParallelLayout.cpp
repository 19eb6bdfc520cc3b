#include "analysis/ParallelLayout.h"

#include "tileir/Arith.h"
#include "tileir/OpInterface.h"

#include <fmt/format.h>

namespace tilec::analysis {

bool mentions(const tile::Expr &e, const tile::Var &v) {
  bool found = false;
  tile::forEachNode(e, [&](const tile::Node &n) {
    if (auto *r = std::get_if<tile::VarRef>(&n.op))
      found = found || r->var->id == v.id;
  });
  return found;
}

namespace {

/// Walks a Parallel body and narrows the vector width to what every access allows.
class VectorWidthFinder {
public:
  VectorWidthFinder(const tile::Var &inner, int width) : inner_(inner), width_(width) {}

  int width() const { return width_; }
  const std::string &reason() const { return reason_; }

  void body(const tile::Body &b) {
    for (const tile::Stmt &s : b)
      stmt(s);
  }

private:
  void limit(int w, std::string why) {
    if (w < width_) {
      width_ = w;
      reason_ = std::move(why);
    }
  }

  void stmt(const tile::Stmt &s) {
    if (auto *let = std::get_if<tile::Let>(&s.op)) {
      expr(let->value, true);
    } else if (auto *st = std::get_if<tile::Store>(&s.op)) {
      access(st->buffer, st->indices);
      expr(st->value, true);
    } else if (auto *a = std::get_if<tile::Atomic>(&s.op)) {
      limit(1, fmt::format("atomic_{} {} one element at a time", atomicOpName(a->op),
                           atomicOpVerb(a->op)));
    } else {
      // Control flow and nested loops inside the element body run one element at a time.
      limit(1, "the loop body has control flow");
    }
  }

  /// `valuePosition`: the expression is a computed value, where the loop variable itself would
  /// need a per-lane vector of indices (not supported by the vector path).
  void expr(const tile::Expr &e, bool valuePosition) {
    std::visit(
        [&](const auto &op) {
          using T = std::decay_t<decltype(op)>;
          if constexpr (std::is_same_v<T, tile::VarRef>) {
            if (valuePosition && op.var->id == inner_.id)
              limit(1, fmt::format("'{}' is used as a value", inner_.name));
          } else if constexpr (std::is_same_v<T, tile::Load>) {
            access(op.buffer, op.indices);
          } else if constexpr (std::is_same_v<T, tile::Unary> || std::is_same_v<T, tile::Cast>) {
            expr(op.a, valuePosition);
          } else if constexpr (std::is_same_v<T, tile::Binary>) {
            expr(op.a, valuePosition);
            expr(op.b, valuePosition);
          } else if constexpr (std::is_same_v<T, tile::Select>) {
            expr(op.cond, valuePosition);
            expr(op.a, valuePosition);
            expr(op.b, valuePosition);
          } else if constexpr (std::is_same_v<T, tile::Shuffle>) {
            expr(op.value, true);
            expr(op.arg, true);
            limit(1, "a warp shuffle");
          }
        },
        e->op);
  }

  void access(const tile::BufferPtr &buf, const std::vector<tile::Expr> &idx) {
    for (const tile::Expr &i : idx)
      expr(i, false);
    int bytes = dtypeBytes(buf->dtype);
    bool dependsOnInner = false;
    for (const tile::Expr &i : idx)
      dependsOnInner = dependsOnInner || mentions(i, inner_);
    if (!dependsOnInner)
      return; // the same element for every lane: a scalar access, broadcast
    if (buf->scope == tile::Scope::Shared) {
      // Shared elements are read and written one at a time (their layout may be swizzled).
      limit(1, fmt::format("shared buffer '{}' is accessed by element", buf->name));
      return;
    }
    limit(std::max(1, 16 / bytes),
          fmt::format("16-byte accesses of {} '{}'", dtypeName(buf->dtype), buf->name));
    for (size_t d = 0; d + 1 < idx.size(); ++d)
      if (mentions(idx[d], inner_)) {
        limit(1, fmt::format("'{}' indexes a leading dimension of '{}'", inner_.name, buf->name));
        return;
      }
    auto form = tile::toAffine(idx.back());
    if (!form) {
      limit(1, fmt::format("the last index of '{}' is not affine", buf->name));
      return;
    }
    tile::Expr rest = tile::intImm(form->constant);
    for (const auto &[key, term] : form->terms) {
      bool isInner = false;
      if (auto *ref = std::get_if<tile::VarRef>(&term.second->op))
        isInner = ref->var->id == inner_.id;
      if (isInner) {
        if (term.first != 1) {
          limit(1, fmt::format("'{}' steps by {} in '{}'", inner_.name, term.first, buf->name));
          return;
        }
        continue;
      }
      if (mentions(term.second, inner_)) {
        limit(1,
              fmt::format("the last index of '{}' is not affine in '{}'", buf->name, inner_.name));
        return;
      }
      rest = tile::makeBinary(
          tile::BinOp::Add, rest,
          tile::makeBinary(tile::BinOp::Mul, term.second, tile::intImm(term.first)));
    }
    // The start of each vector must be aligned: the part of the index that does not move with
    // the loop variable must be a multiple of the width (runtime row strides are checked at run
    // time by the lowering, which falls back to the scalar path).
    while (width_ > 1 && !tile::isMultipleOf(rest, width_))
      limit(width_ / 2,
            fmt::format("the start of '{}' is only aligned to {} elements", buf->name, width_ / 2));
  }

  const tile::Var &inner_;
  int width_;
  std::string reason_;
};

} // namespace

ParallelLayout planParallelLoop(const tile::For &loop, int64_t threads) {
  ParallelLayout l;
  l.threads = threads;
  for (const tile::Expr &e : loop.extents)
    l.total *= *tile::asConstInt(e);
  int64_t innerExtent = *tile::asConstInt(loop.extents.back());
  VectorWidthFinder finder(*loop.vars.back(), 16);
  finder.body(loop.body);
  int v = finder.width();
  std::string reason = finder.reason();
  if (v == 16)
    v = 1, reason = "no access moves with the innermost loop variable";
  while (v > 1 && innerExtent % v != 0) {
    v /= 2;
    reason = fmt::format("the innermost extent {} is a multiple of {} only", innerExtent, v);
  }
  l.vector = v;
  l.reason = reason;
  l.mapping = fmt::format("iteration i runs on thread (i / {}) % {} at step i / {}", v, threads,
                          v * threads);
  return l;
}

} // namespace tilec::analysis
