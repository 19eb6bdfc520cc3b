// The MFMA register layouts against AMD's documentation. Sources:
//  - AMD Matrix Instruction Calculator (github.com/ROCm/amd_matrix_instruction_calculator),
//    `--instruction v_mfma_f32_32x32x8f16 --detail-instruction` and `... --matrix-layout` for
//    gfx90a (CDNA2) and gfx942 (CDNA3), whose formulas are quoted at each test;
//  - AMD Instinct MI300 ISA reference (CDNA3), "Matrix fused-multiply-add (MFMA)": the operand
//    and result layouts are those of CDNA2 for these instructions;
//  - TileLang's tilelang/intrinsics/mfma_layout.py (the 16x16 layouts its AMD gemm uses).
#include "analysis/MfmaLayout.h"

#include "analysis/FragmentLayout.h"

#include <doctest/doctest.h>

using namespace tilec;
using analysis::FragmentLayout;
using analysis::gemmWarpGrid;
using analysis::MatrixIndex;
using analysis::mfmaElement;
using analysis::MfmaOperand;
using analysis::verifyOwnership;
using analysis::WarpGrid;
using target::MmaShape;

namespace {

const MmaShape k32x32x8{32, 32, 8, DType::Float16};
const MmaShape k16x16x16{16, 16, 16, DType::Float16};

} // namespace

TEST_CASE("the MFMA shapes the AMD targets list have layouts covering each element once") {
  for (const char *arch : {"gfx90a", "gfx942"}) {
    const target::TargetInfo t = *target::targetInfo(arch);
    CHECK(t.mfmaShapes.size() == 4);
    for (const MmaShape &s : t.mfmaShapes) {
      CAPTURE(arch);
      CAPTURE(s.m);
      for (MfmaOperand op : {MfmaOperand::A, MfmaOperand::B, MfmaOperand::Accumulator}) {
        analysis::FragmentMap m = analysis::mfmaMap(s, op);
        CHECK(m.threads() == 64);
        CHECK(analysis::verifyCoverage(m, 1) == std::nullopt);
      }
    }
  }
}

TEST_CASE("v_mfma_f32_32x32x8f16: A, B and D as AMD's calculator gives them") {
  CHECK(analysis::mfmaItems(k32x32x8, MfmaOperand::A) == 4);
  CHECK(analysis::mfmaItems(k32x32x8, MfmaOperand::Accumulator) == 16);
  for (int64_t lane = 0; lane < 64; ++lane)
    for (int64_t item = 0; item < 4; ++item) {
      CAPTURE(lane);
      CAPTURE(item);
      // A[i][k]: i = lane % 32, k = 4 * floor(lane / 32) + item (the item-th half of the
      // lane's two VGPRs).
      CHECK(analysis::mfmaElement(k32x32x8, MfmaOperand::A, lane, item) ==
            MatrixIndex{lane % 32, 4 * (lane / 32) + item});
      // B[k][j]: j = lane % 32, k = 4 * floor(lane / 32) + item.
      CHECK(analysis::mfmaElement(k32x32x8, MfmaOperand::B, lane, item) ==
            MatrixIndex{4 * (lane / 32) + item, lane % 32});
    }
  // D[i][j]: i = 8 * floor(GPR / 4) + 4 * floor(lane / 32) + GPR % 4, j = lane % 32.
  for (int64_t lane = 0; lane < 64; ++lane)
    for (int64_t gpr = 0; gpr < 16; ++gpr)
      CHECK(analysis::mfmaElement(k32x32x8, MfmaOperand::Accumulator, lane, gpr) ==
            MatrixIndex{8 * (gpr / 4) + 4 * (lane / 32) + gpr % 4, lane % 32});
  // Spot values from the calculator's --matrix-layout table.
  CHECK(analysis::mfmaElement(k32x32x8, MfmaOperand::Accumulator, 0, 0) == MatrixIndex{0, 0});
  CHECK(analysis::mfmaElement(k32x32x8, MfmaOperand::Accumulator, 32, 0) == MatrixIndex{4, 0});
  CHECK(analysis::mfmaElement(k32x32x8, MfmaOperand::Accumulator, 63, 15) == MatrixIndex{31, 31});
  CHECK(analysis::mfmaElement(k32x32x8, MfmaOperand::Accumulator, 5, 4) == MatrixIndex{8, 5});
}

TEST_CASE("v_mfma_f32_16x16x16f16: A, B and D as AMD's calculator and TileLang give them") {
  CHECK(analysis::mfmaItems(k16x16x16, MfmaOperand::B) == 4);
  CHECK(analysis::mfmaItems(k16x16x16, MfmaOperand::Accumulator) == 4);
  for (int64_t lane = 0; lane < 64; ++lane)
    for (int64_t item = 0; item < 4; ++item) {
      CAPTURE(lane);
      CAPTURE(item);
      // A[i][k]: i = lane % 16, k = 4 * floor(lane / 16) + item
      // (thread_id_shared_access_64x4_to_16x16_layout_A).
      CHECK(analysis::mfmaElement(k16x16x16, MfmaOperand::A, lane, item) ==
            MatrixIndex{lane % 16, 4 * (lane / 16) + item});
      // B[k][j]: j = lane % 16, k = 4 * floor(lane / 16) + item (..._layout_B).
      CHECK(analysis::mfmaElement(k16x16x16, MfmaOperand::B, lane, item) ==
            MatrixIndex{4 * (lane / 16) + item, lane % 16});
      // D[i][j]: i = 4 * floor(lane / 16) + GPR, j = lane % 16 (..._layout_C_m_n).
      CHECK(analysis::mfmaElement(k16x16x16, MfmaOperand::Accumulator, lane, item) ==
            MatrixIndex{4 * (lane / 16) + item, lane % 16});
    }
}

TEST_CASE("bf16 has the layouts of f16; other shapes have none") {
  MmaShape bf{32, 32, 8, DType::BFloat16};
  CHECK(analysis::mfmaElement(bf, MfmaOperand::Accumulator, 33, 5) ==
        analysis::mfmaElement(k32x32x8, MfmaOperand::Accumulator, 33, 5));
  CHECK_THROWS_AS(analysis::mfmaItems(MmaShape{16, 8, 16, DType::Float16}, MfmaOperand::A),
                  std::logic_error);
  CHECK_THROWS_AS(analysis::mfmaElement(k16x16x16, MfmaOperand::A, 64, 0), std::logic_error);
}

TEST_CASE("an MFMA gemm accumulator tiles each wavefront's part with v_mfma 16x16x16 blocks") {
  // The fragment layout gemm lowering on AMD uses (analysis/FragmentLayout.h): wavefront w of a
  // warpsM x warpsN grid, block (mi, ni) of its tile, item i of lane l holds the accumulator
  // element mfmaElement gives for (l, i), offset by the block's place.
  const MmaShape &atom = k16x16x16;
  const int64_t cases[][4] = {{128, 128, 2, 1}, {64, 64, 4, 1}, {64, 512, 1, 4}, {32, 32, 1, 1}};
  for (const auto &c : cases) {
    FragmentLayout l;
    l.kind = FragmentLayout::Kind::MfmaAccumulator;
    l.shape = {c[0], c[1]};
    l.warpsM = c[2];
    l.warpsN = c[3];
    l.threads = 64 * l.warpsM * l.warpsN;
    CAPTURE(c[0]);
    CAPTURE(c[1]);
    CHECK_FALSE(verifyOwnership(l).has_value());
    int64_t WM = l.warpTileM(), WN = l.warpTileN(), NI = WN / 16;
    REQUIRE(l.slots() == WM / 16 * NI * 4);
    for (int64_t t = 0; t < l.threads; ++t) {
      int64_t wave = t / 64, lane = t % 64;
      for (int64_t slot = 0; slot < l.slots(); ++slot) {
        int64_t block = slot / 4, mi = block / NI, ni = block % NI;
        MatrixIndex e = mfmaElement(atom, MfmaOperand::Accumulator, lane, slot % 4);
        int64_t row = wave / l.warpsN * WM + 16 * mi + e.row;
        int64_t col = wave % l.warpsN * WN + 16 * ni + e.col;
        CHECK(l.elementAt(t, slot) == row * l.shape[1] + col);
      }
    }
    // Its row values: held by the 16 lanes of a row in each wavefront of the row.
    FragmentLayout rows = l;
    rows.kind = FragmentLayout::Kind::MfmaRows;
    rows.shape = {c[0]};
    CHECK(rows.rowsOf(l));
    CHECK_FALSE(verifyOwnership(rows).has_value());
    for (int64_t t = 0; t < l.threads; ++t)
      for (int64_t s = 0; s < rows.slots(); ++s)
        CHECK(rows.elementAt(t, s) == *l.elementAt(t, s / 4 * NI * 4 + s % 4) / l.shape[1]);
  }
}

TEST_CASE("gemm's wavefront grid on MFMA needs 16 x 16 blocks") {
  auto grid = gemmWarpGrid(128, 128, 256, tile::GemmPolicy::Square, {64, 16, 16});
  REQUIRE(std::holds_alternative<WarpGrid>(grid));
  CHECK(std::get<WarpGrid>(grid).warpsM * std::get<WarpGrid>(grid).warpsN == 4);
  auto bad = gemmWarpGrid(32, 8, 64, tile::GemmPolicy::Square, {64, 16, 16});
  REQUIRE(std::holds_alternative<std::string>(bad));
  CHECK(std::get<std::string>(bad).find("1 wavefront with") != std::string::npos);
}
