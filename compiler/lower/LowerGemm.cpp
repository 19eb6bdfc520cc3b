// Shared memory (placement, swizzle, barriers), gemm on mma.sync m16n8k16 with ldmatrix, and
// block rasterization (use_swizzle).
#include "lower/LowerImpl.h"

#include "tileir/Arith.h"

#include <fmt/format.h>

#include <stdexcept>

namespace tilec::lower::detail {

namespace {

using analysis::FragmentLayout;

thir::Expr div(thir::Expr a, int64_t b) { return thir::binary(thir::BinOp::FloorDiv, a, i32(b)); }
thir::Expr mod(thir::Expr a, int64_t b) { return thir::binary(thir::BinOp::Mod, a, i32(b)); }

} // namespace

thir::Expr KernelLowering::sharedOffset(const tile::BufferPtr &b,
                                        const std::vector<thir::Expr> &index) {
  const SharedBuffer &sb = shared_.at(b->id);
  const analysis::SharedLayout &l = sb.layout;
  // Row (all but the last index, row-major) and byte within the row.
  thir::Expr row;
  for (size_t d = 0; d + 1 < index.size(); ++d)
    row = row ? add(mul(row, *tile::asConstInt(b->shape[d])), index[d]) : index[d];
  std::optional<IndexExpr> rowIndex;
  if (row)
    rowIndex = IndexExpr{row};
  thir::Expr bytes = l.offsetOf(rowIndex, IndexExpr{mul(index.back(), l.elementBytes)}).e;
  bytes = add(bytes, i32(sb.offset));
  if (auto version = stageOffset_.find(b->id); version != stageOffset_.end())
    bytes = add(bytes, version->second);
  return bytes;
}

thir::SmemRegion KernelLowering::sharedRegion(const tile::BufferPtr &b) const {
  const SharedBuffer &sb = shared_.at(b->id);
  return {sb.offset, sb.offset + sb.layout.bytes() * sb.versions};
}

bool KernelLowering::checkSharedLimit() {
  int64_t limit = opts_.target.sharedPerBlockOptin;
  if (out_.dynamicSharedBytes <= limit)
    return true;
  SourceLoc at = k_.kernelLoc;
  for (const tile::BufferPtr &b : k_.buffers)
    if (b->scope == tile::Scope::Shared) {
      at = b->loc;
      break;
    }
  diags_.error(at, fmt::format("kernel '{}' needs {} bytes of shared memory per block, more than "
                               "the {} bytes {} allows",
                               k_.name, out_.dynamicSharedBytes, limit, opts_.target.arch));
  return false;
}

void KernelLowering::lowerGemm(const tile::Stmt &s, const tile::Gemm &g, thir::Body &out) {
  const tile::BufferPtr &A = g.a.buffer, &B = g.b.buffer, &C = g.c.buffer;
  if ((isFloat8(A->dtype) || isFloat8(B->dtype)) && !checkFloat8Gemm(s, g))
    return;
  if (isOnChip(C) && fragmentLayouts_.at(C->id).warpgroup)
    return lowerGemmWgmma(s, g, out);
  if (isOnChip(C) && fragmentLayouts_.at(C->id).kind == FragmentLayout::Kind::MfmaAccumulator)
    return lowerGemmMfma(s, g, out);
  const FragmentLayout *la = nullptr;
  if (A->scope != tile::Scope::Shared) {
    // A in registers: its accumulator layout must give each warp the rows of C it computes and
    // every k column (the accumulator -> A operand repacking of the cookbook, section 1);
    // otherwise it goes through shared memory.
    const FragmentLayout &lcc = fragmentLayouts_.at(C->id);
    la = isOnChip(A) ? &fragmentLayouts_.at(A->id) : nullptr;
    if (!la || la->kind != FragmentLayout::Kind::MmaAccumulator || la->warpsN != 1 ||
        la->warpgroup || lcc.kind != FragmentLayout::Kind::MmaAccumulator ||
        la->warpsM != lcc.warpsM || la->shape[0] != lcc.shape[0] || g.transA ||
        la->warpTileN() % 16 != 0) {
      if (!la || !stageOperand(s, A, out))
        return;
      la = nullptr;
    }
  }
  // B in registers: laid out by layout inference as the B fragments of C's warp grid.
  const FragmentLayout *lb = nullptr;
  if (B->scope != tile::Scope::Shared) {
    const FragmentLayout &lcc = fragmentLayouts_.at(C->id);
    lb = isOnChip(B) ? &fragmentLayouts_.at(B->id) : nullptr;
    // Sema admits shared and fragment operands only, and inference gives a fragment B this
    // layout or reports a conflict.
    if (!lb || lb->kind != FragmentLayout::Kind::MmaOperandB || lb->warpsM != lcc.warpsM ||
        lb->warpsN != lcc.warpsN || lb->nByK != g.transB || lcc.warpgroup)
      throw std::logic_error("a gemm's B fragment is not laid out as its B operand");
  }
  if (!fullBuffer(g.a) || !fullBuffer(g.b) || !fullBuffer(g.c)) {
    unsupported(s.loc, "gemm on parts of buffers");
    return;
  }
  if (A->dtype != B->dtype || (A->dtype != DType::Float16 && A->dtype != DType::BFloat16)) {
    unsupported(s.loc, fmt::format("gemm on {} operands (float16 and bfloat16 are supported)",
                                   dtypeName(A->dtype)));
    return;
  }
  if (C->dtype != DType::Float32) {
    unsupported(s.loc, fmt::format("gemm with a {} accumulator (float32 is supported)",
                                   dtypeName(C->dtype)));
    return;
  }
  const FragmentLayout &lc = fragmentLayouts_.at(C->id);
  if (lc.kind != FragmentLayout::Kind::MmaAccumulator) {
    unsupported(s.loc, fmt::format("gemm into '{}', whose layout is {}", C->name, lc.describe()));
    return;
  }
  int64_t K = *tile::asConstInt(A->shape[g.transA ? 0 : 1]);
  if (K % 16 != 0) {
    unsupported(s.loc, fmt::format("gemm with K = {} (a multiple of 16 is needed)", K));
    return;
  }
  int64_t WM = lc.warpTileM(), WN = lc.warpTileN(), MI = WM / 16, NI = WN / 8;
  thir::Expr tid = thread();
  thir::Expr warp = div(tid, opts_.target.warpSize), lane = mod(tid, opts_.target.warpSize);
  thir::Expr wM = lc.warpsN == 1 ? warp : div(warp, lc.warpsN);
  thir::Expr wN = lc.warpsN == 1 ? i32(0) : mod(warp, lc.warpsN);
  thir::Expr rowBase = mul(wM, WM), colBase = mul(wN, WN);
  thir::Expr q = div(lane, 8), r = mod(lane, 8);
  if (g.clearAccum)
    for (int id : slotVars_.at(C->id))
      out.push_back({thir::AssignVar{id, thir::constFloat(0.0, DType::Float32)}});
  Type x4{DType::Int32, 4}, x2{DType::Int32, 2};
  for (int64_t kk = 0; kk < K / 16; ++kk) {
    // A fragments (16 x 16 per m-tile), straight from the mma layout of ldmatrix.x4.
    std::vector<int> aVar;
    for (int64_t mi = 0; la && mi < MI; ++mi) {
      // Two adjacent n8 accumulator tiles are one 16 x 16 A fragment: pack pairs of halves.
      int64_t niA = la->warpTileN() / 8;
      auto pack = [&](int64_t slot) {
        return thir::bitcast(thir::makeVector({slotVar(A, slot), slotVar(A, slot + 1)}),
                             Type{DType::Int32});
      };
      int64_t t0 = (mi * niA + 2 * kk) * 4, t1 = (mi * niA + 2 * kk + 1) * 4;
      aVar.push_back(nextVar_++);
      out.push_back({thir::DeclVar{
          aVar.back(), x4, thir::makeVector({pack(t0), pack(t0 + 2), pack(t1), pack(t1 + 2)})}});
    }
    for (int64_t mi = 0; !la && mi < MI; ++mi) {
      std::vector<thir::Expr> at;
      bool trans = g.transA;
      if (!g.transA) // A stored M x K: lane L addresses row L % 16, column 8 * (L / 16)
        at = {add(rowBase, add(i32(mi * 16), mod(lane, 16))),
              add(i32(kk * 16), mul(div(lane, 16), 8))};
      else // A stored K x M: matrix q covers k-block q >> 1, m-block q & 1
        at = {add(i32(kk * 16), add(mul(div(q, 2), 8), r)),
              add(rowBase, add(i32(mi * 16), mul(mod(q, 2), 8)))};
      aVar.push_back(nextVar_++);
      out.push_back({thir::DeclVar{
          aVar.back(), x4, thir::ldMatrix(sharedOffset(A, at), 4, trans, sharedRegion(A))}});
    }
    // B fragments: two n-tiles per ldmatrix.x4 (one with .x2 for an odd last tile).
    std::vector<std::pair<int, int>> bReg(NI); // (variable, first register) per n-tile
    for (int64_t ni = 0; lb && ni < NI; ++ni) {
      // The fragment's slots are the instruction's registers: pack pairs of halves.
      int64_t slot = (kk * NI + ni) * 4;
      auto pack = [&](int64_t sl) {
        return thir::bitcast(thir::makeVector({slotVar(B, sl), slotVar(B, sl + 1)}),
                             Type{DType::Int32});
      };
      int var = nextVar_++;
      out.push_back({thir::DeclVar{var, x2, thir::makeVector({pack(slot), pack(slot + 2)})}});
      bReg[ni] = {var, 0};
    }
    for (int64_t ni = 0; !lb && ni < NI; ni += 2) {
      bool pair = ni + 1 < NI;
      std::vector<thir::Expr> at;
      if (!g.transB) { // B stored K x N (N contiguous): .trans; matrix q: k-block q & 1, n-block q
                       // >> 1
        thir::Expr qq = pair ? q : mod(q, 2);
        at = {add(i32(kk * 16), add(mul(mod(qq, 2), 8), r)),
              add(colBase, add(i32(ni * 8), mul(div(qq, 2), 8)))};
      } else { // B stored N x K (K contiguous): lane L addresses n = (L&7) + 8(L>>4), k =
               // 8((L>>3)&1)
        thir::Expr nOff = pair ? add(r, mul(div(lane, 16), 8)) : r;
        at = {add(colBase, add(i32(ni * 8), nOff)), add(i32(kk * 16), mul(mod(q, 2), 8))};
      }
      int var = nextVar_++;
      out.push_back({thir::DeclVar{
          var, pair ? x4 : x2,
          thir::ldMatrix(sharedOffset(B, at), pair ? 4 : 2, !g.transB, sharedRegion(B))}});
      bReg[ni] = {var, 0};
      if (pair)
        bReg[ni + 1] = {var, 2};
    }
    for (int64_t mi = 0; mi < MI; ++mi) {
      for (int64_t ni = 0; ni < NI; ++ni) {
        int64_t slot = (mi * NI + ni) * 4;
        auto [bv, first] = bReg[ni];
        Type bt = !lb && ((ni % 2 == 0 && ni + 1 < NI) || ni % 2 == 1) ? x4 : x2;
        thir::Expr bvec = thir::var(bv, bt);
        thir::Expr b =
            thir::makeVector({thir::extractLane(bvec, first), thir::extractLane(bvec, first + 1)});
        std::vector<thir::Expr> cs;
        for (int i = 0; i < 4; ++i)
          cs.push_back(slotVar(C, slot + i));
        int d = nextVar_++;
        Type f4{DType::Float32, 4};
        out.push_back({thir::DeclVar{
            d, f4, thir::mmaSync(thir::var(aVar[mi], x4), b, thir::makeVector(cs), A->dtype)}});
        for (int i = 0; i < 4; ++i)
          out.push_back({thir::AssignVar{slotVars_.at(C->id).at(slot + i),
                                         thir::extractLane(thir::var(d, f4), i)}});
      }
    }
  }
  if (A->scope != tile::Scope::Shared && !la)
    shared_.erase(A->id); // staged for this gemm only
}

bool KernelLowering::checkFloat8Gemm(const tile::Stmt &s, const tile::Gemm &g) {
  const tile::BufferPtr &A = g.a.buffer, &B = g.b.buffer, &C = g.c.buffer;
  // Only wgmma is implemented for float8; sm_89's mma.sync m16n8k32 is not. (Sema has checked
  // that both operands are float8.)
  if (!opts_.target.hasWgmma) {
    unsupported(s.loc, fmt::format("gemm on float8 operands on {} (float8 gemm runs on sm_90a's "
                                   "wgmma only)",
                                   opts_.target.arch));
    return false;
  }
  if (C->dtype != DType::Float32) {
    unsupported(s.loc, fmt::format("gemm on float8 operands with a {} accumulator (float32 is "
                                   "supported)",
                                   dtypeName(C->dtype)));
    return false;
  }
  if (A->scope != tile::Scope::Shared) {
    unsupported(s.loc, fmt::format("gemm with float8 A ('{}') outside shared memory (float8 "
                                   "wgmma reads A from shared memory; copy it to a shared buffer "
                                   "first)",
                                   A->name));
    return false;
  }
  // wgmma has no transpose bit for float8: both operands K-major (K contiguous).
  if (g.transA) {
    unsupported(s.loc, fmt::format("gemm on float8 operands with A ('{}') stored K x M "
                                   "(transpose_A=True; float8 wgmma reads both operands K-major: "
                                   "store A as M x K)",
                                   A->name));
    return false;
  }
  if (!g.transB) {
    unsupported(s.loc, fmt::format("gemm on float8 operands with B ('{}') stored K x N (float8 "
                                   "wgmma reads both operands K-major: store B as N x K and pass "
                                   "transpose_B=True)",
                                   B->name));
    return false;
  }
  int64_t K = *tile::asConstInt(A->shape[1]);
  if (K % 32 != 0) {
    unsupported(s.loc,
                fmt::format("gemm on float8 operands with K = {} (a multiple of 32 is needed)", K));
    return false;
  }
  if (!isOnChip(C) || !fragmentLayouts_.at(C->id).warpgroup) {
    unsupported(s.loc, fmt::format("gemm on float8 operands into '{}' that wgmma cannot take (it "
                                   "needs threads a multiple of 128, 64 rows of C per warpgroup, "
                                   "and operand tiles with rows of 32, 64 or a multiple of 128 "
                                   "bytes in a multiple of 8 rows)",
                                   C->name));
    return false;
  }
  return true;
}

void KernelLowering::lowerGemmWgmma(const tile::Stmt &s, const tile::Gemm &g, thir::Body &out) {
  const tile::BufferPtr &A = g.a.buffer, &B = g.b.buffer, &C = g.c.buffer;
  const FragmentLayout &lc = fragmentLayouts_.at(C->id);
  // Over the accumulator's threads: the tile's, or one warpgroup's (plan-score-warpgroup).
  std::optional<analysis::WgmmaPlan> plan = analysis::planWgmma(g, lc.threads);
  if (!plan || plan->groupsM * 4 != lc.warpsM || plan->groupsN != lc.warpsN) {
    unsupported(s.loc, fmt::format("this gemm into '{}' ({}) on wgmma with another warpgroup "
                                   "split than the gemm that fixed the accumulator's layout",
                                   C->name, lc.describe()));
    return;
  }
  bool aRegs = A->scope != tile::Scope::Shared;
  const FragmentLayout *la = aRegs ? &fragmentLayouts_.at(A->id) : nullptr;
  if (la && !analysis::wgmmaTakesAInRegisters(*la, lc)) {
    // The warpgroups do not each hold the rows they multiply: go through shared memory.
    if (!stageOperand(s, A, out))
      return;
    aRegs = false;
    la = nullptr;
  }
  int64_t M = lc.shape[0], N = lc.shape[1], K = *tile::asConstInt(A->shape[g.transA ? 0 : 1]);
  int64_t kStep = analysis::wgmmaK(A->dtype); // 16, or 32 for float8
  int64_t groupRows = M / plan->groupsM, WN = N / plan->groupsN, NI = WN / 8;
  int64_t tilesM = groupRows / 64, pieces = WN / plan->instrN;
  auto layoutOf = [&](const tile::BufferPtr &b) { return shared_.at(b->id).layout; };

  // Generic-proxy writes to the operands are made visible to wgmma's async-proxy reads by a
  // fence and a barrier that insert-barriers places where they are needed.
  std::optional<analysis::SharedLayout> aLayout;
  if (!aRegs)
    aLayout = layoutOf(A);
  if (g.clearAccum)
    for (int id : slotVars_.at(C->id))
      out.push_back({thir::AssignVar{id, thir::constFloat(0.0, DType::Float32)}});

  thir::Expr group = div(thread(), 128);
  thir::Expr groupRow = plan->groupsN == 1 ? group : div(group, plan->groupsN);
  thir::Expr groupCol = plan->groupsN == 1 ? i32(0) : mod(group, plan->groupsN);
  // Warpgroups whose rows of C nothing reads issue no instruction (thir::Wgmma::active).
  thir::Expr active;
  if (plan->groupsN == 1 && plan->groupsM > 1 && turn_.barrier < 0) {
    const Interval read = rowsReadBesidesGemms(k_.body, C->id);
    int64_t issuing = 0;
    for (int64_t r = 0; r < plan->groupsM; ++r) {
      if (read.hi < r * groupRows || read.lo >= (r + 1) * groupRows)
        continue;
      thir::Expr mine = eq(groupRow, i32(r));
      active = active ? thir::binary(thir::BinOp::Or, active, mine) : mine;
      ++issuing;
    }
    if (issuing == 0)
      active = thir::constInt(0, DType::Bool);
    else if (issuing == plan->groupsM)
      active = nullptr;
  }
  Type i64{DType::Int64};
  // A descriptor is (start address >> 4) in its low 14 bits plus constant strides and swizzle
  // mode; the start addresses of one operand differ by constants and by the warpgroup's
  // position, so each operand gets one base descriptor and every instruction adds a constant.
  auto descriptorBase = [&](const tile::BufferPtr &b, const analysis::WgmmaDescriptor &d0,
                            thir::Expr position, int64_t step) {
    thir::Expr start = i32(shared_.at(b->id).offset + d0.startByte);
    if (auto version = stageOffset_.find(b->id); version != stageOffset_.end())
      start = add(start, version->second); // the pipeline stage's copy of the buffer
    thir::Expr addr = thir::sharedAddress(start);
    if (step != 0)
      addr = add(addr, mul(position, step));
    thir::Expr field = thir::binary(thir::BinOp::BitAnd,
                                    thir::binary(thir::BinOp::Shr, addr, i32(4)), i32(0x3FFF));
    int var = nextVar_++;
    out.push_back({thir::DeclVar{
        var, i64,
        thir::binary(thir::BinOp::Add, thir::cast(field, i64),
                     thir::constInt(static_cast<int64_t>(d0.highBits()), DType::Int64))}});
    return thir::var(var, i64);
  };
  auto descriptor = [&](const analysis::SharedLayout &l, bool kMajor, int64_t mn, int64_t k,
                        int64_t extent) {
    auto d = analysis::wgmmaDescriptor(l, kMajor, mn, k, extent);
    if (!d)
      throw std::logic_error("planWgmma accepted an operand slice without a descriptor");
    return *d;
  };
  // Operand A (shared): rows of warpgroup row r start at r * groupRows.
  analysis::SharedLayout sa, sb = layoutOf(B);
  thir::Expr aBase;
  analysis::WgmmaDescriptor a0;
  if (!aRegs) {
    sa = *aLayout;
    a0 = descriptor(sa, !g.transA, 0, 0, 64);
    int64_t step = plan->groupsM > 1
                       ? descriptor(sa, !g.transA, groupRows, 0, 64).startByte - a0.startByte
                       : 0;
    aBase = descriptorBase(A, a0, groupRow, step);
  }
  analysis::WgmmaDescriptor b0 = descriptor(sb, g.transB, 0, 0, plan->instrN);
  int64_t bStep = plan->groupsN > 1
                      ? descriptor(sb, g.transB, WN, 0, plan->instrN).startByte - b0.startByte
                      : 0;
  thir::Expr bBase = descriptorBase(B, b0, groupCol, bStep);
  auto offsetDesc = [&](thir::Expr base, int64_t bytes) {
    return bytes == 0
               ? base
               : thir::binary(thir::BinOp::Add, base, thir::constInt(bytes >> 4, DType::Int64));
  };

  std::vector<thir::WgmmaInstr> instrs;
  for (int64_t kk = 0; kk < K / kStep; ++kk)
    for (int64_t mi = 0; mi < tilesM; ++mi) {
      thir::Expr aOp;
      if (aRegs) {
        int64_t niA = la->warpTileN() / 8, t0 = (mi * niA + 2 * kk) * 4;
        auto pack = [&](int64_t slot) {
          return thir::bitcast(thir::makeVector({slotVar(A, slot), slotVar(A, slot + 1)}),
                               Type{DType::Int32});
        };
        aOp = thir::makeVector({pack(t0), pack(t0 + 2), pack(t0 + 4), pack(t0 + 6)});
      } else {
        aOp = offsetDesc(aBase, descriptor(sa, !g.transA, 64 * mi, kStep * kk, 64).startByte -
                                    a0.startByte);
      }
      for (int64_t p = 0; p < pieces; ++p) {
        thir::Expr bOp = offsetDesc(
            bBase, descriptor(sb, g.transB, p * plan->instrN, kStep * kk, plan->instrN).startByte -
                       b0.startByte);
        instrs.push_back({aOp, bOp, static_cast<int>((mi * NI + p * plan->instrN / 8) * 4)});
      }
    }
  std::vector<thir::Expr> acc;
  for (int64_t slot = 0; slot < lc.slots(); ++slot)
    acc.push_back(slotVar(C, slot));
  Type accType{DType::Float32, static_cast<int>(acc.size())};
  std::vector<thir::SmemRegion> reads{sharedRegion(B)};
  if (!aRegs)
    reads.insert(reads.begin(), sharedRegion(A));
  int d = nextVar_++;
  out.push_back({thir::DeclVar{d, accType,
                               thir::wgmma(thir::makeVector(acc), std::move(instrs),
                                           static_cast<int>(plan->instrN), A->dtype, aRegs,
                                           /*aMnMajor=*/g.transA,
                                           /*bMnMajor=*/!g.transB, wgmmaPending_, B->dtype, turn_,
                                           std::move(reads), /*clearAcc=*/nullptr, active)}});
  for (int64_t slot = 0; slot < lc.slots(); ++slot)
    out.push_back(
        {thir::AssignVar{slotVars_.at(C->id).at(slot),
                         thir::extractLane(thir::var(d, accType), static_cast<int>(slot))}});
  if (A->scope != tile::Scope::Shared)
    shared_.erase(A->id); // staged for this gemm only
}

bool KernelLowering::stageOperand(const tile::Stmt &s, const tile::BufferPtr &a, thir::Body &out) {
  const FragmentLayout &l = fragmentLayouts_.at(a->id);
  const std::vector<int64_t> shape = constShape(a);
  SharedBuffer sb;
  sb.layout = analysis::chooseSharedLayout(shape, dtypeBytes(a->dtype));
  if (!l.distributed() || shape.size() != 2 || sb.layout.swizzleBytes == 0) {
    unsupported(s.loc,
                fmt::format("gemm with A ('{}') in registers laid out as {}, which cannot be "
                            "staged through shared memory; copy it to a shared buffer first",
                            a->name, l.describe()));
    return false;
  }
  // After the operand tiles (and clear of the reduction scratch only in time: barriers order
  // the two).
  sb.offset = alignUp(scratchBase_, opts_.target.sharedBufferAlign);
  out_.dynamicSharedBytes =
      std::max<int>(out_.dynamicSharedBytes, static_cast<int>(sb.offset + sb.layout.bytes()));
  shared_[a->id] = sb;
  for (const ChunkRef &c : chunksOf(l)) {
    std::vector<thir::Expr> lanes;
    for (int64_t lane = 0; lane < l.vector; ++lane)
      lanes.push_back(slotVar(a, c.slot0 + lane));
    thir::SharedStore st{sharedOffset(a, c.index),
                         lanes.size() == 1 ? lanes[0] : thir::makeVector(lanes),
                         /*ahead=*/false, sharedRegion(a)};
    if (c.guard)
      out.push_back({thir::IfStmt{c.guard, {{st}}, {}}});
    else
      out.push_back({st});
  }
  return true;
}

void KernelLowering::lowerUseSwizzle(const tile::UseSwizzle &u, thir::Body &out) {
  if (k_.blockIndices.size() < 2 || !u.enabled)
    return; // one grid axis: nothing to rasterize
  // A bijection of the (x, y) block grid that walks panels of `panel` columns (order="col")
  // or rows (order="row"), so that consecutive blocks share operand tiles in L2.
  thir::Expr gx = thir::special(thir::Special::GridDimX),
             gy = thir::special(thir::Special::GridDimY);
  thir::Expr id;
  if (persistentTile_) {
    gx = persistentTile_->gx;
    gy = persistentTile_->gy;
    // The tile's place in its z slice of the grid.
    id =
        thir::binary(thir::BinOp::Mod, persistentTile_->id, thir::binary(thir::BinOp::Mul, gx, gy));
  } else {
    thir::Expr bx = thir::special(thir::Special::BlockIdxX),
               by = thir::special(thir::Special::BlockIdxY);
    id = add(thir::binary(thir::BinOp::Mul, by, gx), bx);
  }
  int64_t P = u.panelSize;
  thir::Expr along = u.colOrder ? gy : gx; // blocks per panel line
  thir::Expr across = u.colOrder ? gx : gy;
  thir::Expr per = thir::binary(thir::BinOp::Mul, i32(P), along);
  thir::Expr panel = thir::binary(thir::BinOp::FloorDiv, id, per);
  thir::Expr within = thir::binary(thir::BinOp::Mod, id, per);
  thir::Expr width = thir::binary(
      thir::BinOp::Min, i32(P),
      thir::binary(thir::BinOp::Sub, across, thir::binary(thir::BinOp::Mul, panel, i32(P))));
  thir::Expr inPanel = add(mul(panel, P), thir::binary(thir::BinOp::Mod, within, width));
  thir::Expr alongIdx = thir::binary(thir::BinOp::FloorDiv, within, width);
  int nx = nextVar_++, ny = nextVar_++;
  out.push_back({thir::DeclVar{nx, Type{DType::Int32}, u.colOrder ? inPanel : alongIdx}});
  out.push_back({thir::DeclVar{ny, Type{DType::Int32}, u.colOrder ? alongIdx : inPanel}});
  bindings_[k_.blockIndices[0]->id].value = thir::var(nx, Type{DType::Int32});
  bindings_[k_.blockIndices[1]->id].value = thir::var(ny, Type{DType::Int32});
}

void KernelLowering::bindPersistentTile(thir::Expr t, thir::Expr gx, thir::Expr gy,
                                        thir::Body &out) {
  persistentTile_ = PersistentTile{t, gx, gy};
  Type i32t{DType::Int32};
  // t < gx gy gz, so the last axis needs no remainder.
  const int axes = static_cast<int>(k_.grid.size());
  const thir::Expr index[3] = {
      axes > 1 ? thir::binary(thir::BinOp::Mod, t, gx) : t,
      axes > 2 ? thir::binary(thir::BinOp::Mod, thir::binary(thir::BinOp::FloorDiv, t, gx), gy)
               : thir::binary(thir::BinOp::FloorDiv, t, gx),
      thir::binary(thir::BinOp::FloorDiv, t, thir::binary(thir::BinOp::Mul, gx, gy))};
  for (const tile::VarPtr &b : k_.blockIndices) {
    int v = nextVar_++;
    out.push_back({thir::DeclVar{v, i32t, index[b->index]}});
    bindings_[b->id].value = thir::var(v, i32t);
  }
}

} // namespace tilec::lower::detail
