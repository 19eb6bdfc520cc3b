// The register layouts of AMD's MFMA instructions (gfx90a, gfx942): which element of A (M x K),
// B (K x N) and the accumulator (M x N) each lane of a 64-lane wavefront holds in each of its
// register items, for the shapes both targets have with 16-bit inputs and fp32 accumulation
// (v_mfma_f32_32x32x8_{f16,bf16} and v_mfma_f32_16x16x16_{f16,bf16}, one block each).
//
// In both, a lane's A items are consecutive k of one row and its B items consecutive k of one
// column (four 16-bit values: two VGPRs), and the accumulator item groups of four hold four
// consecutive rows of one column (the lane's column is lane % N). These are the atoms gemm on
// AMD targets will tile a wavefront's part of a block tile with, as mma.sync's m16n8k16 is on
// NVIDIA's; tests/unit/analysis/MfmaLayoutTest.cpp checks them against AMD's documentation.
#pragma once

#include "analysis/LayoutAlgebra.h"
#include "target/TargetInfo.h"

#include <cstdint>

namespace tilec::analysis {

enum class MfmaOperand { A, B, Accumulator };

struct MatrixIndex {
  int64_t row = 0, col = 0;
  friend bool operator==(const MatrixIndex &, const MatrixIndex &) = default;
};

/// Register items per lane of `operand` for `shape` (64 lanes share the matrix evenly).
int64_t mfmaItems(const target::MmaShape &shape, MfmaOperand operand);

/// The element item `item` of lane `lane` holds: (m, k) of A, (k, n) of B, (m, n) of the
/// accumulator. `shape` must be one of a target's mfmaShapes.
MatrixIndex mfmaElement(const target::MmaShape &shape, MfmaOperand operand, int64_t lane,
                        int64_t item);

/// The whole operand as an explicit map: 64 threads, mfmaItems slots, the matrix row-major.
FragmentMap mfmaMap(const target::MmaShape &shape, MfmaOperand operand);

} // namespace tilec::analysis
