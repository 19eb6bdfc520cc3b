#include "tileir/OpInterface.h"

#include <doctest/doctest.h>

#include <memory>

using namespace tilec;
using namespace tilec::tile;

namespace {

BufferPtr buffer(int id, const char *name, Scope scope, std::vector<int64_t> shape) {
  auto b = std::make_shared<Buffer>();
  b->id = id;
  b->name = name;
  b->scope = scope;
  b->dtype = DType::Float16;
  for (int64_t d : shape)
    b->shape.push_back(intImm(d));
  return b;
}

VarPtr var(int id, const char *name) {
  return std::make_shared<Var>(Var{id, name, DType::Int32, VarKind::LoopVar, {}, 0});
}

Region whole(const BufferPtr &b) {
  Region r;
  r.buffer = b;
  for (const Expr &d : b->shape)
    r.dims.push_back({intImm(0), d, false});
  return r;
}

Expr load(const BufferPtr &b, std::vector<Expr> idx) {
  return std::make_shared<Node>(Node{b->dtype, {}, Load{b, std::move(idx)}});
}

std::vector<std::string> names(const std::vector<BufferPtr> &bs) {
  std::vector<std::string> n;
  for (const BufferPtr &b : bs)
    n.push_back(b->name);
  return n;
}

} // namespace

TEST_CASE("gemm reads A and B and writes C, accumulating unless clear_accum") {
  BufferPtr a = buffer(0, "A", Scope::Shared, {64, 32}),
            b = buffer(1, "B", Scope::Shared, {32, 64}),
            c = buffer(2, "C", Scope::Fragment, {64, 64});
  for (bool clear : {false, true}) {
    Stmt s{{}, Gemm{whole(a), whole(b), whole(c), false, false, clear, GemmPolicy::Square}};
    CHECK(opName(s) == "gemm");
    Operands o = operandsOf(s);
    REQUIRE(o.uses.size() == 3);
    CHECK(o.uses[0].buffer == a);
    CHECK(o.uses[0].access == Access::Read);
    CHECK(o.uses[1].access == Access::Read);
    CHECK(o.uses[2].buffer == c);
    CHECK(o.uses[2].access == (clear ? Access::Write : Access::ReadWrite));
    CHECK(writes(o.uses[2].access));
    CHECK(o.uses[2].region != nullptr);
    CHECK(o.exprs.size() == 12); // begin and extent of each of the 6 region dimensions
    CHECK(o.bodies.empty());
    CHECK(o.defines.empty());
  }
}

TEST_CASE("a store writes one element; its indices are evaluated before its value") {
  BufferPtr g = buffer(0, "G", Scope::Global, {128});
  VarPtr i = var(7, "i");
  Store st{g, {varRef(i)}, floatImm(1.0)};
  Stmt s{{}, st};
  Operands o = operandsOf(s);
  REQUIRE(o.uses.size() == 1);
  CHECK(o.uses[0].access == Access::Write);
  CHECK(o.uses[0].indices != nullptr);
  CHECK(o.uses[0].region == nullptr);
  REQUIRE(o.exprs.size() == 2);
  CHECK(std::holds_alternative<VarRef>((*o.exprs[0])->op));
  CHECK(std::holds_alternative<FloatImm>((*o.exprs[1])->op));
}

TEST_CASE("loops define their variables and nest their body; annotate_layout only names") {
  BufferPtr f = buffer(0, "F", Scope::Fragment, {16});
  VarPtr i = var(1, "i");
  For loop;
  loop.kind = LoopKind::Serial;
  loop.vars = {i};
  loop.begins = {intImm(0)};
  loop.extents = {intImm(4)};
  loop.body.push_back(Stmt{{}, AnnotateLayout{f, "swizzled"}});
  Stmt s{{}, loop};
  CHECK(opName(s) == "for");
  Operands o = operandsOf(s);
  REQUIRE(o.defines.size() == 1);
  CHECK(o.defines[0] == i);
  REQUIRE(o.bodies.size() == 1);
  Operands inner = operandsOf(o.bodies[0]->front());
  REQUIRE(inner.uses.size() == 1);
  CHECK(inner.uses[0].access == Access::Name);
  CHECK_FALSE(writes(inner.uses[0].access));
}

TEST_CASE("forEachNode visits loads' indices, node first or operands first") {
  BufferPtr a = buffer(0, "A", Scope::Global, {8}), idx = buffer(1, "I", Scope::Global, {8});
  Expr e = load(a, {load(idx, {intImm(3)})});
  std::vector<std::string> pre, post;
  auto collect = [](std::vector<std::string> &out) {
    return [&out](const Node &n) {
      if (auto *l = std::get_if<Load>(&n.op))
        out.push_back(l->buffer->name);
      else if (std::holds_alternative<IntImm>(n.op))
        out.push_back("3");
    };
  };
  forEachNode(e, collect(pre));
  forEachNode(e, collect(post), WalkOrder::OperandsFirst);
  CHECK(pre == std::vector<std::string>{"A", "I", "3"});
  CHECK(post == std::vector<std::string>{"3", "I", "A"});
  forEachNode(nullptr, collect(pre)); // null is allowed
  CHECK(pre.size() == 3);
}

TEST_CASE("buffersIn: uses, then loads, then nested bodies, repeats kept") {
  BufferPtr out = buffer(0, "O", Scope::Fragment, {16}), x = buffer(1, "X", Scope::Fragment, {16}),
            c = buffer(2, "C", Scope::Fragment, {16});
  VarPtr i = var(1, "i");
  Body body;
  body.push_back(Stmt{{}, Store{out, {varRef(i)}, load(x, {varRef(i)})}});
  If branch;
  branch.cond = load(c, {varRef(i)});
  branch.then.push_back(Stmt{{}, Store{out, {varRef(i)}, load(x, {varRef(i)})}});
  body.push_back(Stmt{{}, branch});
  CHECK(names(buffersIn(body)) == std::vector<std::string>{"O", "X", "C", "O", "X"});
}
