// Shared helpers of the back-end unit tests: hand-built thread IR and codegen shortcuts.
#pragma once

#include "codegen/Codegen.h"
#include "threadir/ThreadIR.h"

#include <llvm/IR/LLVMContext.h>
#include <llvm/IR/Module.h>

#include <stdexcept>
#include <string>
#include <string_view>

namespace tilec::test {

using namespace tilec::thir;

inline Param tensor(std::string name, DType t, int align = 16) {
  return Param{std::move(name), ParamKind::Tensor, t, align, {}};
}
inline Param dim(std::string name) {
  return Param{std::move(name), ParamKind::Dim, DType::Int64, 1, {}};
}
inline Param scalar(std::string name, DType t) {
  return Param{std::move(name), ParamKind::Scalar, t, 1, {}};
}

inline Stmt decl(int id, Expr init) {
  Type t = init->type;
  return Stmt{DeclVar{id, t, std::move(init)}};
}
inline Stmt store(int param, Expr index, Expr value, int align) {
  return Stmt{GlobalStore{param, std::move(index), std::move(value), align}};
}

/// The shape lowering produces for an elementwise C = A + B over N float32 elements: 256
/// threads, 4 consecutive elements each; full tiles use 16-byte vector accesses, the tail a
/// masked per-lane loop.
inline Module vectorAdd() {
  Kernel k;
  k.name = "vector_add";
  k.threads = 256;
  k.params = {tensor("A", DType::Float32), tensor("B", DType::Float32), tensor("C", DType::Float32),
              dim("N")};
  Expr n = param(3, DType::Int64);
  Type i64{DType::Int64, 1};
  k.grid[0] = binary(BinOp::FloorDiv, binary(BinOp::Add, n, constInt(1023)), constInt(1024));

  Expr base =
      binary(BinOp::Add, binary(BinOp::Mul, cast(special(Special::BlockIdxX), i64), constInt(1024)),
             binary(BinOp::Mul, cast(special(Special::ThreadIdxX), i64), constInt(4)));
  Expr v0 = var(0, i64);
  Type f32x4{DType::Float32, 4};
  Body full = {store(
      2, v0, binary(BinOp::Add, globalLoad(0, v0, f32x4, 16), globalLoad(1, v0, f32x4, 16)), 16)};
  Expr i = var(2, i64);
  Type f32{DType::Float32, 1};
  Body lane = {
      decl(2, binary(BinOp::Add, v0, var(1, i64))),
      Stmt{IfStmt{
          binary(BinOp::Lt, i, n),
          {store(2, i, binary(BinOp::Add, globalLoad(0, i, f32, 4), globalLoad(1, i, f32, 4)), 4)},
          {}}}};
  Body tail = {Stmt{ForStmt{1, i64, constInt(0), constInt(4), constInt(1), lane, true}}};
  k.body = {decl(0, base),
            Stmt{IfStmt{binary(BinOp::Le, binary(BinOp::Add, v0, constInt(4)), n), full, tail}}};
  Module m;
  m.name = "vector_add";
  m.kernels.push_back(std::move(k));
  return m;
}

struct Compiled {
  std::string error; // empty on success
  std::string ll;
  std::string ptx;
};

/// Code generation options for `arch` (one of target::supportedArchs()).
inline codegen::TargetOptions forArch(std::string_view arch) {
  auto t = target::targetInfo(arch);
  if (!t)
    throw std::invalid_argument("not a supported arch: " + std::string(arch));
  return codegen::TargetOptions{*t};
}

inline Compiled compile(const Module &m, const codegen::TargetOptions &opts = {}) {
  llvm::LLVMContext ctx;
  auto mod = codegen::buildModule(m, opts, ctx);
  if (!mod)
    return {mod.error(), "", ""};
  Compiled c;
  c.ll = codegen::emitLLVMText(**mod);
  auto ptx = codegen::emitAssembly(**mod, opts);
  if (!ptx)
    return {ptx.error(), c.ll, ""};
  c.ptx = *ptx;
  return c;
}

} // namespace tilec::test
