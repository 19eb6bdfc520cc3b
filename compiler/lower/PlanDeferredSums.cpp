// defer-row-sums: a row sum that a loop only adds into an accumulator of row values
// (attention's `reduce_sum(acc_s, row_sum)` then `l[i] = l[i] * rescale[i] + row_sum[i]`) is
// reduced across threads once, after the loop, rather than in every iteration, as
// FlashAttention-2 and -3 keep their row sums: each thread that holds part of a row sums its own
// values only, accumulates that into its own copy of the accumulator, and the copies are summed
// after the loop. The accumulator's factor must be the same in every copy (the same row values
// held by each holder) and its copies must start at zero, so that the sum of the copies after
// the loop is the sum the program asks for, in another order. Where a MLA loop's rows span two
// warpgroups this drops an exchange through shared memory and two barriers an iteration.
#include "lower/Plan.h"
#include "lower/Refs.h"

namespace tilec::lower {

namespace {

/// Whether `indices` are the loop variable `i` alone.
bool isRow(const std::vector<tile::Expr> &indices, const tile::Var &i) {
  if (indices.size() != 1)
    return false;
  auto *v = std::get_if<tile::VarRef>(&indices[0]->op);
  return v && v->var->id == i.id;
}

/// Whether `e` is `b[i]` for the loop variable `i`.
bool isRowLoad(const tile::Expr &e, const tile::Var &i, int b) {
  auto *l = std::get_if<tile::Load>(&e->op);
  return l && l->buffer->id == b && isRow(l->indices, i);
}

/// Whether `e` reads the same value in every thread that holds row `i` of the accumulator:
/// constants, block indices and parameters, and row `i` of fragments (their copies agree: the
/// kernel has no thread-level values or shuffles, checked by the caller) other than `excluded`.
bool sameInEveryHolder(const tile::Expr &e, const tile::Var &i, const std::set<int> &excluded,
                       const KernelPlan &kp) {
  bool same = true;
  tile::forEachNode(e, [&](const tile::Node &n) {
    if (auto *v = std::get_if<tile::VarRef>(&n.op)) {
      tile::VarKind k = v->var->kind;
      same = same && (v->var->id == i.id || k == tile::VarKind::BlockIndex ||
                      k == tile::VarKind::ScalarParam || k == tile::VarKind::Dim);
    } else if (auto *l = std::get_if<tile::Load>(&n.op)) {
      same = same && l->buffer->scope == tile::Scope::Fragment &&
             kp.fragments.count(l->buffer->id) && isRow(l->indices, i) &&
             !excluded.count(l->buffer->id);
    }
  });
  return same;
}

/// `value` as `acc[i] * factor + sum[i]` (either order of either operation) or
/// `acc[i] + sum[i]`: the factor (null for none), or nullopt when it is not that.
std::optional<tile::Expr> accumulation(const tile::Expr &value, const tile::Var &i, int acc,
                                       int sum) {
  auto *add = std::get_if<tile::Binary>(&value->op);
  if (!add || add->op != tile::BinOp::Add)
    return std::nullopt;
  for (auto [term, other] : {std::pair{add->a, add->b}, std::pair{add->b, add->a}}) {
    if (!isRowLoad(other, i, sum))
      continue;
    if (isRowLoad(term, i, acc))
      return tile::Expr{};
    auto *mul = std::get_if<tile::Binary>(&term->op);
    if (!mul || mul->op != tile::BinOp::Mul)
      continue;
    if (isRowLoad(mul->a, i, acc))
      return mul->b;
    if (isRowLoad(mul->b, i, acc))
      return mul->a;
  }
  return std::nullopt;
}

bool mentions(const tile::Stmt &s, int buffer) {
  Refs r;
  r.stmt(s);
  return r.buffers.count(buffer) > 0;
}

bool isZeroFill(const tile::Stmt &s, int buffer) {
  auto *f = std::get_if<tile::Fill>(&s.op);
  if (!f || f->dst.buffer->id != buffer || !f->dst.whole())
    return false;
  auto *fi = std::get_if<tile::FloatImm>(&f->value->op);
  auto *ii = std::get_if<tile::IntImm>(&f->value->op);
  return (fi && fi->value == 0.0) || (ii && ii->value == 0);
}

/// Whether the kernel reads thread-level values (thread_id(), lane_id(), warp_id(), shuffles),
/// which could make the copies of a row value differ between the threads that hold it.
bool readsThreadValues(const tile::Body &body) {
  bool found = false;
  std::function<void(const tile::Body &)> walk = [&](const tile::Body &b) {
    for (const tile::Stmt &s : b) {
      tile::Operands o = tile::operandsOf(s);
      for (const tile::Expr *e : o.exprs)
        tile::forEachNode(*e, [&](const tile::Node &n) {
          if (auto *v = std::get_if<tile::VarRef>(&n.op))
            found = found || v->var->kind == tile::VarKind::ThreadIndex;
          found = found || std::holds_alternative<tile::Shuffle>(n.op);
        });
      for (const tile::Body *inner : o.bodies)
        walk(*inner);
    }
  };
  walk(body);
  return found;
}

/// The deferrable sum of statement `at` of top-level loop `loop` (statement `top` of `k`).
std::optional<DeferredSum> deferrable(const tile::Kernel &k, const KernelPlan &kp, size_t top,
                                      size_t at) {
  const tile::Stmt &loopStmt = k.body[top];
  const tile::Body &body = std::get<tile::For>(loopStmt.op).body;
  auto *r = std::get_if<tile::Reduce>(&body[at].op);
  if (!r || r->kind != tile::ReduceKind::Sum || r->dim != 1 || !r->clear || !r->src.whole() ||
      !r->dst.whole())
    return std::nullopt;
  const int src = r->src.buffer->id, sum = r->dst.buffer->id;
  if (!kp.fragments.count(src) || !kp.fragments.count(sum))
    return std::nullopt;
  const analysis::FragmentLayout &ls = kp.fragments.at(src), &lsum = kp.fragments.at(sum);
  if (!ls.gemmAccumulator() || !lsum.rowValues() || !lsum.rowsOf(ls))
    return std::nullopt;
  // The next statement that mentions the sum adds it into the accumulator, elementwise.
  size_t next = at + 1;
  while (next < body.size() && !mentions(body[next], sum))
    ++next;
  if (next == body.size())
    return std::nullopt;
  auto *f = std::get_if<tile::For>(&body[next].op);
  if (!f || f->kind != tile::LoopKind::Parallel || f->vars.size() != 1 || f->body.size() != 1)
    return std::nullopt;
  auto *st = std::get_if<tile::Store>(&f->body[0].op);
  if (!st || !isRow(st->indices, *f->vars[0]))
    return std::nullopt;
  const int acc = st->buffer->id;
  if (acc == sum || st->buffer->scope != tile::Scope::Fragment || !kp.fragments.count(acc))
    return std::nullopt;
  const analysis::FragmentLayout &lacc = kp.fragments.at(acc);
  if (lacc.kind != lsum.kind || !lacc.rowsOf(ls) || lacc.slots() != lsum.slots())
    return std::nullopt;
  auto factor = accumulation(st->value, *f->vars[0], acc, sum);
  if (!factor || (*factor && !sameInEveryHolder(*factor, *f->vars[0], {acc, sum}, kp)))
    return std::nullopt;
  // The sum is written by the reduction and read by the accumulation only; the accumulator
  // starts at zero before the loop and only the accumulation touches it in the loop (after
  // the loop its copies are summed: anything may read it there, another loop's factor too).
  bool zeroed = false;
  for (size_t t = 0; t < k.body.size(); ++t) {
    if (t == top) {
      for (size_t j = 0; j < body.size(); ++j)
        if (j != at && j != next && (mentions(body[j], sum) || mentions(body[j], acc)))
          return std::nullopt;
      continue;
    }
    if (mentions(k.body[t], sum))
      return std::nullopt;
    if (t < top && mentions(k.body[t], acc)) {
      if (!isZeroFill(k.body[t], acc))
        return std::nullopt;
      zeroed = true;
    }
  }
  if (!zeroed)
    return std::nullopt;
  return DeferredSum{&body[at], &loopStmt, r->dst.buffer, st->buffer, r->src.buffer};
}

} // namespace

void planDeferredSums(const tile::Program &p, ProgramPlan &plan) {
  for (size_t ki = 0; ki < p.kernels.size(); ++ki) {
    const tile::Kernel &k = p.kernels[ki];
    KernelPlan &kp = plan.kernels[ki];
    kp.deferredSums.clear();
    if (readsThreadValues(k.body))
      continue;
    for (size_t top = 0; top < k.body.size(); ++top) {
      auto *loop = std::get_if<tile::For>(&k.body[top].op);
      if (!loop || loop->kind == tile::LoopKind::Parallel)
        continue;
      for (size_t at = 0; at < loop->body.size(); ++at)
        if (auto d = deferrable(k, kp, top, at))
          kp.deferredSums.push_back(*d);
    }
  }
}

} // namespace tilec::lower
