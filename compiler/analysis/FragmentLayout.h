// Layout inference for fragments (register tiles spread over a block's threads) on the paths
// that need no tensor core: elementwise Parallel loops, reductions, copies.
//
// Layouts (T threads, vector width v):
//  - Flat: the elements, flattened row-major, are dealt to threads in chunks of v consecutive
//    elements, chunk c to thread c % T at step c / T. Slot (step * v + lane) of thread t holds
//    flat element ((step * T + t) * v + lane). Used for 1-D and higher-rank fragments.
//  - RowGroups (2-D (R, C)): the threads form G groups of P = T / G; group g owns rows
//    g, g + G, ...; within a row, chunks of v are dealt round-robin to the group's P threads.
//    Slot ((ri * stepsPerRow + sq) * v + lane) of thread g * P + tg holds element
//    (ri * G + g, ((sq * P + tg) * v + lane)). With P <= 32 a row lives in part of one warp, so
//    a row reduction needs no shared memory.
//  - Replicated: every thread holds every element (slot = flat index).
//  - GroupReplicated (1-D (R,)): element i is held at slot i / G by every thread of group
//    i % G: the result of reducing a RowGroups fragment along its rows.
//  - MmaAccumulator (2-D (M, N), strict): the accumulator of gemm on mma.sync m16n8k16. Warps
//    form a warpsM x warpsN grid (warp w at (w / warpsN, w % warpsN)), each owning a
//    (M / warpsM) x (N / warpsN) tile of m16n8 blocks; in a block, lane (4g + t) holds
//    (g, 2t), (g, 2t+1), (g+8, 2t), (g+8, 2t+1). Slot ((mi * NI + ni) * 4 + i).
//    With `warpgroup` set it is the accumulator of wgmma m64nNk16 instead: warps come in
//    warpgroups of 4, the warpgroups form a (warpsM / 4) x warpsN grid (warpgroup j at
//    (j / warpsN, j % warpsN)), and warp i of a warpgroup owns rows 16i..16i+15 of each of the
//    warpgroup's 64-row tiles. Within a warp's 16 rows the registers are those of mma.sync, so
//    slots, MmaRows and the accumulator-to-A repacking stay the same; only which rows a warp
//    holds changes (warpRow, warpCol, tileRow below).
//  - MmaRows (1-D (M,)): one value per accumulator row, held by every thread that holds part of
//    that row (the 4 lanes of a quad in each of the warpsN warps of its warp row): slot
//    (mi * 2 + h) is row wM * WM + mi * 16 + g + 8h. The result of reducing an MmaAccumulator
//    fragment along its rows.
//  - MmaOperandB (2-D, (N, K) when `nByK`, else (K, N)): the B operand of gemm on mma.sync
//    m16n8k16 held in registers, for the accumulator's warpsM x warpsN warp grid. Warp column wN
//    owns columns wN * WN .. + WN - 1 (WN = N / warpsN) and every k; the warpsM warps of a
//    column hold the same elements. In an n8 x k16 block, lane (4g + t) holds (n g, k 2t),
//    (g, 2t+1), (g, 2t+8), (g, 2t+9) (PTX ISA, mma.m16n8k16 B fragment). Slot
//    ((kk * NI + ni) * 4 + i) is block (ni, kk) of the warp's NI = WN / 8 column blocks.
//  - MfmaAccumulator (2-D (M, N), strict): the accumulator of gemm on AMD's MFMA 16x16x16
//    (analysis/MfmaLayout.h). 64-lane wavefronts form a warpsM x warpsN grid (wavefront w at
//    (w / warpsN, w % warpsN)), each owning a (M / warpsM) x (N / warpsN) tile of 16 x 16
//    blocks; in a block, lane l holds rows 4 (l / 16) .. + 3 of column l % 16. Slot
//    ((mi * NI + ni) * 4 + i) is row 16 mi + 4 (l / 16) + i, column 16 ni + l % 16 of the
//    wavefront's tile.
//  - MfmaRows (1-D (M,)): one value per MfmaAccumulator row, held by the 16 lanes that share it
//    in each of the warpsN wavefronts of its row: slot (mi * 4 + i) is row
//    wM * WM + 16 mi + 4 (l / 16) + i. The result of reducing an MfmaAccumulator along its rows.
//
// Propagation ("common"): fragments that meet in a Parallel loop or a fragment-to-fragment copy
// share one layout; a group that holds a reduction's result takes the layout the reduction's
// source implies; every other group is distributed ("free") with the widest vector every global
// access of the group allows (16 bytes). alloc_local buffers are per-thread arrays, laid out like
// replicated fragments.
#pragma once

#include "support/Diagnostics.h"
#include "tileir/TileIR.h"

#include <map>
#include <optional>
#include <string>
#include <variant>
#include <vector>

namespace tilec::analysis {

struct FragmentLayout {
  enum class Kind {
    Flat,
    RowGroups,
    Replicated,
    GroupReplicated,
    MmaAccumulator,
    MmaRows,
    MmaOperandB,
    MfmaAccumulator,
    MfmaRows
  };
  Kind kind = Kind::Flat;
  std::vector<int64_t> shape;
  int64_t threads = 1;
  int vector = 1;
  int64_t groups = 1;             // G, for RowGroups and GroupReplicated
  int64_t warpsM = 1, warpsN = 1; // MmaAccumulator warp grid
  bool warpgroup = false;         // MmaAccumulator/MmaRows: the wgmma arrangement of warps
  bool nByK = true;               // MmaOperandB: the shape is (N, K) rather than (K, N)
  int64_t warpTileM() const { return shape[0] / warpsM; }
  int64_t warpTileN() const { return shape[1] / warpsN; } // the accumulators only
  /// The lanes of the warps the layout is defined on: 64-lane wavefronts for MFMA, 32 else.
  bool mfma() const { return kind == Kind::MfmaAccumulator || kind == Kind::MfmaRows; }
  int64_t warpLanes() const { return mfma() ? 64 : 32; }
  /// Whether this is the accumulator of a gemm (mma.sync, wgmma or MFMA).
  bool gemmAccumulator() const {
    return kind == Kind::MmaAccumulator || kind == Kind::MfmaAccumulator;
  }
  /// MmaOperandB: the N and K extents, and the columns each warp column holds.
  int64_t operandN() const { return nByK ? shape[0] : shape[1]; }
  int64_t operandK() const { return nByK ? shape[1] : shape[0]; }
  int64_t operandWarpN() const { return operandN() / warpsN; }
  /// MmaAccumulator/MmaRows: the warp-grid row and column of warp `w`, and the first row of
  /// the 16-row tile `mi` of warp row `wm`. Written once over any integer-like `I`: integers
  /// here, thread-IR expressions in lowering (lower/IndexExpr.h).
  template <class I> I warpRowOf(I w) const {
    if (!warpgroup)
      return w / warpsN;
    return w / 4 / warpsN * 4 + w % 4;
  }
  template <class I> I warpColOf(I w) const { return warpgroup ? w / 4 % warpsN : w % warpsN; }
  template <class I> I tileRowOf(I wm, int64_t mi) const {
    if (!warpgroup)
      return wm * warpTileM() + 16 * mi;
    return wm / 4 * (4 * warpTileM()) + wm % 4 * 16 + 64 * mi;
  }
  int64_t warpRow(int64_t w) const { return warpRowOf(w); }
  int64_t warpCol(int64_t w) const { return warpColOf(w); }
  int64_t tileRow(int64_t wm, int64_t mi) const { return tileRowOf(wm, mi); }
  /// A layout that holds one value per row of a 2-D parent layout (GroupReplicated, MmaRows).
  bool rowValues() const {
    return kind == Kind::GroupReplicated || kind == Kind::MmaRows || kind == Kind::MfmaRows;
  }
  /// Whether `parent` (a 2-D distributed layout) holds rows the way this row layout does, in
  /// each of the parent's threads (which may be the first warpgroup of this layout's).
  bool rowsOf(const FragmentLayout &parent) const;
  int64_t total() const;
  int64_t chunks() const { return total() / vector; }
  /// Flat: chunks a thread holds.
  int64_t steps() const { return (chunks() + threads - 1) / threads; }
  int64_t groupThreads() const { return threads / groups; }
  int64_t rows() const { return shape.front(); }
  int64_t rowsPerGroup() const { return (rows() + groups - 1) / groups; }
  int64_t chunksPerRow() const { return shape.back() / vector; }
  int64_t stepsPerRow() const { return (chunksPerRow() + groupThreads() - 1) / groupThreads(); }
  bool distributed() const {
    return kind == Kind::Flat || kind == Kind::RowGroups || kind == Kind::MmaAccumulator ||
           kind == Kind::MmaOperandB || kind == Kind::MfmaAccumulator;
  }
  /// Threads that hold each element of a distributed layout (the warps of a warp column for
  /// MmaOperandB).
  int64_t copiesPerElement() const;
  /// Registers one thread holds for the buffer.
  int64_t slots() const;
  std::string describe() const;
  /// The operation that fixed the layout, for the report ("reduce_max at 12:9", "free").
  std::string fixedBy;
  SourceLoc fixedAt;
  /// Why the vector width is what it is.
  std::string vectorReason;
  /// The flat element that (thread, slot) holds, or nullopt for an idle slot. This is the
  /// definition of the layout; the layout report is printed from it and lowering is checked
  /// against it.
  std::optional<int64_t> elementAt(int64_t thread, int64_t slot) const;
  bool sameAs(const FragmentLayout &o) const {
    return kind == o.kind && shape == o.shape && threads == o.threads && vector == o.vector &&
           groups == o.groups && warpsM == o.warpsM && warpsN == o.warpsN &&
           warpgroup == o.warpgroup && nByK == o.nByK;
  }
};

/// Checks that `l` is an ownership map: every element held by some (thread, slot), by exactly
/// one unless the layout replicates it (by every thread, or by every thread of its row group).
/// Returns a description of the first violation.
std::optional<std::string> verifyOwnership(const FragmentLayout &l);

/// The warp grid of a gemm's accumulator under `policy` for a (M, N) tile and `threads`
/// threads, or an error message. Each warp's tile is made of atomM x atomN blocks (16 x 8 for
/// mma.sync, 16 x 16 for MFMA) on warps of `warpLanes` lanes.
struct WarpGrid {
  int64_t warpsM = 1, warpsN = 1;
};
struct GemmAtom {
  int64_t warpLanes = 32, atomM = 16, atomN = 8;
};
std::variant<WarpGrid, std::string> gemmWarpGrid(int64_t M, int64_t N, int64_t threads,
                                                 tile::GemmPolicy policy, GemmAtom atom = {});

/// How a gemm runs on wgmma: the warpgroup grid (warpgroups along M and N) and the N of each
/// instruction. Nullopt when the gemm cannot use wgmma (operand types, shapes that do not split
/// into 64-row tiles per warpgroup, shared layouts that are not canonical operand layouts).
struct WgmmaPlan {
  int64_t groupsM = 1, groupsN = 1;
  int64_t instrN = 8; // N of one wgmma; the warpgroup's columns are covered by several
};
std::optional<WgmmaPlan> planWgmma(const tile::Gemm &g, int64_t threads);
/// The k of one wgmma instruction on operands of `input`: 32 bytes of K, i.e. 16 for 16-bit
/// types and 32 for float8.
inline int64_t wgmmaK(DType input) { return 32 / dtypeBytes(input); }
/// Whether wgmma reads a fragment A laid out as `a` from registers for an accumulator laid out
/// as `c`: each warpgroup holds whole rows of A, the rows it multiplies (otherwise A goes
/// through shared memory).
inline bool wgmmaTakesAInRegisters(const FragmentLayout &a, const FragmentLayout &c) {
  return a.kind == FragmentLayout::Kind::MmaAccumulator && a.warpgroup && a.warpsN == 1 &&
         a.warpsM == c.warpsM && a.warpTileN() % 16 == 0;
}

struct InferenceOptions {
  /// The target has wgmma (sm_90a): gemm accumulators take its layout where the gemm allows.
  bool wgmma = false;
  /// The threads that compute one tile, when not the kernel's `threads` (its consumers split
  /// into groups, each on its own tiles: lower::PipelinePlan::tileGroups).
  std::optional<int64_t> threads;
  /// The target has MFMA (AMD): gemm accumulators take the MFMA 16x16x16 layout.
  bool mfma = false;
};

/// Layouts of every fragment and local buffer of `k`, by buffer id. Reports an error (and
/// returns false) for a fragment whose layout is not decided by these rules.
bool inferFragmentLayouts(const tile::Kernel &k, DiagnosticEngine &diags,
                          const InferenceOptions &opts, std::map<int, FragmentLayout> &out);

} // namespace tilec::analysis
