// The walks passes share: the variables code reads (through nested bodies and wgmma.wait's tied
// variables), the largest id in use, and every nested body innermost first.
#include "threadir/ThreadIRWalk.h"

#include <doctest/doctest.h>

#include <vector>

using namespace tilec;
using namespace tilec::thir;

namespace {

const Type kI32{DType::Int32, 1};

Stmt stmt(auto op) { return Stmt{std::move(op)}; }

} // namespace

TEST_CASE("varsRead sees expressions, nested bodies and the variables a wait ties") {
  Expr sum = binary(BinOp::Add, var(1, kI32), binary(BinOp::Mul, var(2, kI32), var(1, kI32)));
  CHECK(varsRead(sum) == std::set<int>{1, 2});
  CHECK(varsRead(stmt(DeclVar{9, kI32, sum})) == std::set<int>{1, 2});
  CHECK(varsRead(stmt(WgmmaWait{0, {4, 5}})) == std::set<int>{4, 5});
  Stmt branch = stmt(IfStmt{binary(BinOp::Lt, var(3, kI32), var(6, kI32)),
                            {stmt(AssignVar{7, var(8, kI32)})},
                            {stmt(MbarrierWait{var(10, kI32), var(11, kI32)})}});
  CHECK(varsRead(branch) == std::set<int>{3, 6, 8, 10, 11});
  ForStmt loop{12, kI32, var(13, kI32), var(14, kI32), constInt(1, DType::Int32), {branch}};
  CHECK(varsRead(stmt(loop)) == std::set<int>{3, 6, 8, 10, 11, 13, 14});
}

TEST_CASE("maxVarId counts declarations and loop variables in every body") {
  CHECK(maxVarId({}) == -1);
  Body inner = {stmt(DeclVar{40, kI32, constInt(0, DType::Int32)})};
  ForStmt loop{
      25,   kI32, constInt(0, DType::Int32), constInt(4, DType::Int32), constInt(1, DType::Int32),
      inner};
  Body b = {stmt(DeclVar{3, kI32, constInt(0, DType::Int32)}),
            stmt(IfStmt{constInt(1, DType::Bool), {stmt(loop)}, {}})};
  CHECK(maxVarId(b) == 40);
  // A variable only read (v99) is not one the body declares.
  b.push_back(stmt(AssignVar{3, var(99, kI32)}));
  CHECK(maxVarId(b) == 40);
}

TEST_CASE("forEachBodyInnermostFirst visits nested bodies before the body holding them") {
  Body loopBody = {stmt(Barrier{})};
  ForStmt loop{1,
               kI32,
               constInt(0, DType::Int32),
               constInt(2, DType::Int32),
               constInt(1, DType::Int32),
               loopBody};
  Body then = {stmt(loop)};
  Body otherwise = {stmt(FenceCta{}), stmt(FenceCta{})};
  Body top = {stmt(IfStmt{constInt(1, DType::Bool), then, otherwise}), stmt(Barrier{1, 128})};
  std::vector<size_t> sizes;
  forEachBodyInnermostFirst(top, [&](Body &b) { sizes.push_back(b.size()); });
  // The loop's body, the then-branch holding it, the else-branch, then the top.
  CHECK(sizes == std::vector<size_t>{1, 1, 2, 2});
}
