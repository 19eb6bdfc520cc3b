// gemm on AMD's MFMA 16x16x16 (f16, bf16 -> f32): each wavefront multiplies its part of the
// accumulator (analysis::FragmentLayout::Kind::MfmaAccumulator) one 16 x 16 block at a time,
// reading both operands from shared memory (LDS) in the lane layouts of analysis/MfmaLayout.h.
#include "lower/LowerImpl.h"

#include <fmt/format.h>

namespace tilec::lower::detail {

void KernelLowering::lowerGemmMfma(const tile::Stmt &s, const tile::Gemm &g, thir::Body &out) {
  const tile::BufferPtr &A = g.a.buffer, &B = g.b.buffer, &C = g.c.buffer;
  if (!fullBuffer(g.a) || !fullBuffer(g.b) || !fullBuffer(g.c)) {
    unsupported(s.loc, "gemm on parts of buffers");
    return;
  }
  if (A->dtype != B->dtype || (A->dtype != DType::Float16 && A->dtype != DType::BFloat16)) {
    unsupported(s.loc, fmt::format("gemm on {} operands on {} (MFMA takes float16 and bfloat16)",
                                   dtypeName(A->dtype), opts_.target.arch));
    return;
  }
  if (C->dtype != DType::Float32) {
    unsupported(s.loc, fmt::format("gemm with a {} accumulator (float32 is supported)",
                                   dtypeName(C->dtype)));
    return;
  }
  // Inference refuses B in registers on MFMA; a fragment A goes through shared memory (MFMA's
  // accumulator holds columns per lane where its A operand holds rows).
  if (B->scope != tile::Scope::Shared)
    throw std::logic_error("gemm on MFMA with B outside shared memory");
  bool staged = A->scope != tile::Scope::Shared;
  if (staged && !stageOperand(s, A, out))
    return;
  const analysis::FragmentLayout &lc = fragmentLayouts_.at(C->id);
  int64_t K = *tile::asConstInt(A->shape[g.transA ? 0 : 1]);
  if (K % 16 != 0) {
    unsupported(s.loc, fmt::format("gemm with K = {} on {} (MFMA needs a multiple of 16)", K,
                                   opts_.target.arch));
    return;
  }
  int64_t WM = lc.warpTileM(), WN = lc.warpTileN(), MI = WM / 16, NI = WN / 16;
  thir::Expr tid = thread();
  thir::Expr lane = thir::binary(thir::BinOp::Mod, tid, i32(64));
  thir::Expr lane16 = thir::binary(thir::BinOp::Mod, lane, i32(16));
  thir::Expr kLane = mul(thir::binary(thir::BinOp::FloorDiv, lane, i32(16)), 4);
  MmaWarp w = mmaWarp(lc, tid);
  thir::Expr rowBase = mul(w.row, WM), colBase = mul(w.col, WN);
  if (g.clearAccum)
    for (int id : slotVars_.at(C->id))
      out.push_back({thir::AssignVar{id, thir::constFloat(0.0, DType::Float32)}});
  Type x4{A->dtype, 4}, f4{DType::Float32, 4};
  // A lane's four consecutive k of one row of A or one column of B: one 8-byte load where k is
  // the buffer's inner dimension, four loads otherwise.
  auto operand = [&](const tile::BufferPtr &buf, thir::Expr mn, thir::Expr k0, bool kInner) {
    int var = nextVar_++;
    if (kInner) {
      out.push_back({thir::DeclVar{
          var, x4, thir::sharedLoad(sharedOffset(buf, {mn, k0}), x4, sharedRegion(buf))}});
      return var;
    }
    std::vector<thir::Expr> items;
    for (int64_t i = 0; i < 4; ++i)
      items.push_back(thir::sharedLoad(sharedOffset(buf, {add(k0, i32(i)), mn}), Type{buf->dtype},
                                       sharedRegion(buf)));
    out.push_back({thir::DeclVar{var, x4, thir::makeVector(items)}});
    return var;
  };
  for (int64_t kk = 0; kk < K / 16; ++kk) {
    thir::Expr k0 = add(i32(kk * 16), kLane);
    // A item i of lane l: row l % 16, k 4 (l / 16) + i; B item i: k 4 (l / 16) + i, column l % 16.
    std::vector<int> aVar, bVar;
    for (int64_t mi = 0; mi < MI; ++mi)
      aVar.push_back(operand(A, add(rowBase, add(i32(mi * 16), lane16)), k0, !g.transA));
    for (int64_t ni = 0; ni < NI; ++ni)
      bVar.push_back(operand(B, add(colBase, add(i32(ni * 16), lane16)), k0, g.transB));
    for (int64_t mi = 0; mi < MI; ++mi)
      for (int64_t ni = 0; ni < NI; ++ni) {
        int64_t slot = (mi * NI + ni) * 4;
        std::vector<thir::Expr> cs;
        for (int64_t i = 0; i < 4; ++i)
          cs.push_back(slotVar(C, slot + i));
        int d = nextVar_++;
        out.push_back({thir::DeclVar{d, f4,
                                     thir::mfma(thir::var(aVar[mi], x4), thir::var(bVar[ni], x4),
                                                thir::makeVector(cs), 16, 16, 16, A->dtype)}});
        for (int i = 0; i < 4; ++i)
          out.push_back({thir::AssignVar{slotVars_.at(C->id).at(slot + i),
                                         thir::extractLane(thir::var(d, f4), i)}});
      }
  }
  if (staged)
    shared_.erase(A->id); // staged for this gemm only
}

} // namespace tilec::lower::detail
