#include "tileir/OpInterface.h"

namespace tilec::tile {

namespace {

void addRegion(Operands &o, const Region &r, Access a) {
  o.uses.push_back({r.buffer, a, &r, nullptr});
  for (const RegionDim &d : r.dims) {
    o.exprs.push_back(&d.begin);
    o.exprs.push_back(&d.extent);
  }
}

void addExprs(Operands &o, const std::vector<Expr> &es) {
  for (const Expr &e : es)
    o.exprs.push_back(&e);
}

} // namespace

Operands operandsOf(const Stmt &s) {
  Operands o;
  std::visit(Overloaded{
                 [&](const Let &op) {
                   o.exprs.push_back(&op.value);
                   o.defines.push_back(op.var);
                 },
                 [&](const Store &op) {
                   addExprs(o, op.indices);
                   o.exprs.push_back(&op.value);
                   o.uses.push_back({op.buffer, Access::Write, nullptr, &op.indices});
                 },
                 [&](const Copy &op) {
                   addRegion(o, op.src, Access::Read);
                   addRegion(o, op.dst, Access::Write);
                 },
                 [&](const Fill &op) {
                   addRegion(o, op.dst, Access::Write);
                   o.exprs.push_back(&op.value);
                 },
                 [&](const Gemm &op) {
                   addRegion(o, op.a, Access::Read);
                   addRegion(o, op.b, Access::Read);
                   addRegion(o, op.c, op.clearAccum ? Access::Write : Access::ReadWrite);
                 },
                 [&](const Reduce &op) {
                   addRegion(o, op.src, Access::Read);
                   addRegion(o, op.dst, op.clear ? Access::Write : Access::ReadWrite);
                 },
                 [&](const Cumsum &op) {
                   addRegion(o, op.src, Access::Read);
                   addRegion(o, op.dst, Access::Write);
                 },
                 [&](const Atomic &op) {
                   if (op.src)
                     addRegion(o, *op.src, Access::Read);
                   addRegion(o, op.dst, Access::ReadWrite);
                   if (!op.src) // the element form: one element of dst
                     o.uses.back().indices = &op.indices;
                   addExprs(o, op.indices);
                   o.exprs.push_back(&op.value);
                 },
                 [&](const For &op) {
                   o.defines = op.vars;
                   addExprs(o, op.begins);
                   addExprs(o, op.extents);
                   o.exprs.push_back(&op.step);
                   o.bodies.push_back(&op.body);
                 },
                 [&](const If &op) {
                   o.exprs.push_back(&op.cond);
                   o.bodies.push_back(&op.then);
                   o.bodies.push_back(&op.otherwise);
                 },
                 [&](const UseSwizzle &) {},
                 [&](const AnnotateLayout &op) {
                   o.uses.push_back({op.buffer, Access::Name, nullptr, nullptr});
                 },
                 [&](const Print &op) {
                   if (op.buffer)
                     addRegion(o, *op.buffer, Access::Read);
                   o.exprs.push_back(&op.value);
                 },
                 [&](const SyncThreads &) {},
             },
             s.op);
  return o;
}

std::string opName(const Stmt &s) {
  return std::visit(Overloaded{
                        [](const Let &) { return std::string("let"); },
                        [](const Store &) { return std::string("store"); },
                        [](const Copy &) { return std::string("copy"); },
                        [](const Fill &) { return std::string("fill"); },
                        [](const Gemm &) { return std::string("gemm"); },
                        [](const Reduce &) { return std::string("reduce"); },
                        [](const Cumsum &) { return std::string("cumsum"); },
                        [](const Atomic &a) { return "atomic_" + std::string(atomicOpName(a.op)); },
                        [](const For &) { return std::string("for"); },
                        [](const If &) { return std::string("if"); },
                        [](const UseSwizzle &) { return std::string("use_swizzle"); },
                        [](const AnnotateLayout &) { return std::string("annotate_layout"); },
                        [](const Print &) { return std::string("print"); },
                        [](const SyncThreads &) { return std::string("sync_threads"); },
                    },
                    s.op);
}

std::vector<const Expr *> operandsOf(const Node &n) {
  std::vector<const Expr *> out;
  std::visit(Overloaded{
                 [](const IntImm &) {},
                 [](const FloatImm &) {},
                 [](const VarRef &) {},
                 [&](const Load &op) {
                   for (const Expr &i : op.indices)
                     out.push_back(&i);
                 },
                 [&](const Unary &op) { out.push_back(&op.a); },
                 [&](const Binary &op) {
                   out.push_back(&op.a);
                   out.push_back(&op.b);
                 },
                 [&](const Select &op) {
                   out.push_back(&op.cond);
                   out.push_back(&op.a);
                   out.push_back(&op.b);
                 },
                 [&](const Cast &op) { out.push_back(&op.a); },
                 [&](const Shuffle &op) {
                   out.push_back(&op.value);
                   out.push_back(&op.arg);
                 },
             },
             n.op);
  return out;
}

void forEachNode(const Expr &e, const std::function<void(const Node &)> &f, WalkOrder order) {
  if (!e)
    return;
  if (order == WalkOrder::NodeFirst)
    f(*e);
  for (const Expr *operand : operandsOf(*e))
    forEachNode(*operand, f, order);
  if (order == WalkOrder::OperandsFirst)
    f(*e);
}

std::vector<BufferPtr>
buffersIn(const Body &body, const std::function<bool(const Stmt &, const BufferUse &)> &keepUse) {
  std::vector<BufferPtr> out;
  std::function<void(const Body &)> walk = [&](const Body &b) {
    for (const Stmt &s : b) {
      Operands o = operandsOf(s);
      for (const BufferUse &u : o.uses)
        if (!keepUse || keepUse(s, u))
          out.push_back(u.buffer);
      for (const Expr *e : o.exprs)
        forEachNode(*e, [&](const Node &n) {
          if (auto *l = std::get_if<Load>(&n.op))
            out.push_back(l->buffer);
        });
      for (const Body *nested : o.bodies)
        walk(*nested);
    }
  };
  walk(body);
  return out;
}

} // namespace tilec::tile
