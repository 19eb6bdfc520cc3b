#include "analysis/FragmentLayout.h"

#include <doctest/doctest.h>

using namespace tilec::analysis;

namespace {

FragmentLayout wgmmaAccumulator(int64_t M, int64_t N, int64_t groupsM, int64_t groupsN) {
  FragmentLayout l;
  l.kind = FragmentLayout::Kind::MmaAccumulator;
  l.shape = {M, N};
  l.threads = 128 * groupsM * groupsN;
  l.vector = 2;
  l.warpgroup = true;
  l.warpsM = 4 * groupsM;
  l.warpsN = groupsN;
  return l;
}

} // namespace

TEST_CASE("a wgmma m64nN accumulator is the register layout of the PTX figure") {
  // Cookbook 3.2: thread tid, warp w, lane (4g + t), register i:
  // row = 16w + g + 8((i >> 1) & 1), col = 8(i >> 2) + 2t + (i & 1).
  for (int64_t N : {8, 64, 256}) {
    FragmentLayout l = wgmmaAccumulator(64, N, 1, 1);
    REQUIRE(l.slots() == N / 2);
    for (int64_t tid = 0; tid < 128; ++tid)
      for (int64_t i = 0; i < N / 2; ++i) {
        int64_t w = tid / 32, g = (tid % 32) / 4, t = tid % 4;
        int64_t row = 16 * w + g + 8 * ((i >> 1) & 1), col = 8 * (i >> 2) + 2 * t + (i & 1);
        CHECK(l.elementAt(tid, i) == row * N + col);
      }
  }
}

TEST_CASE("wgmma accumulators over several tiles and warpgroups are ownership maps") {
  const int64_t cases[][4] = {
      {128, 128, 1, 1}, {128, 128, 2, 1}, {64, 512, 1, 2}, {256, 64, 2, 2}, {64, 64, 1, 2}};
  for (const auto &c : cases) {
    int64_t M = c[0], N = c[1];
    FragmentLayout l = wgmmaAccumulator(M, N, c[2], c[3]);
    CAPTURE(M);
    CAPTURE(N);
    CHECK_FALSE(verifyOwnership(l).has_value());
    FragmentLayout rows = l;
    rows.kind = FragmentLayout::Kind::MmaRows;
    rows.shape = std::vector<int64_t>{M};
    CHECK(rows.rowsOf(l));
    CHECK_FALSE(verifyOwnership(rows).has_value());
    // Warp i of a warpgroup holds rows 16i.. of each of the warpgroup's 64-row tiles.
    int64_t warp = 5 % (l.threads / 32);
    for (int64_t mi = 0; mi < l.warpTileM() / 16; ++mi)
      CHECK(l.tileRow(l.warpRow(warp), mi) % 64 == 16 * (warp % 4));
  }
}

TEST_CASE("one warpgroup's m64nN accumulator has the rows of a wider one's row values") {
  // plan-score-warpgroup: S over warpgroup 0 (64 x 64), the row values laid out for O over two
  // warpgroups (64 x 512, split by columns). Each of warpgroup 0's threads holds, in row slot
  // (i >> 1) & 1, the row of its accumulator register i.
  FragmentLayout s = wgmmaAccumulator(64, 64, 1, 1), o = wgmmaAccumulator(64, 512, 1, 2);
  FragmentLayout rows = o;
  rows.kind = FragmentLayout::Kind::MmaRows;
  rows.shape = {64};
  CHECK(rows.rowsOf(s));
  for (int64_t tid = 0; tid < 128; ++tid)
    for (int64_t i = 0; i < s.slots(); ++i)
      CHECK(rows.elementAt(tid, (i >> 1) & 1) == *s.elementAt(tid, i) / 64);
  // Not the rows of a warpgroup's accumulator when they are laid out over two warpgroups along
  // M, nor a one-warpgroup row layout's rows of the wider accumulator.
  FragmentLayout tall = wgmmaAccumulator(128, 64, 2, 1);
  tall.kind = FragmentLayout::Kind::MmaRows;
  tall.shape = {128};
  FragmentLayout s128 = wgmmaAccumulator(128, 64, 1, 1);
  CHECK_FALSE(tall.rowsOf(s128));
  FragmentLayout narrow = s;
  narrow.kind = FragmentLayout::Kind::MmaRows;
  narrow.shape = {64};
  CHECK_FALSE(narrow.rowsOf(o));
}

TEST_CASE("mma.sync accumulators keep their warp-blocked rows") {
  FragmentLayout l;
  l.kind = FragmentLayout::Kind::MmaAccumulator;
  l.shape = {128, 128};
  l.threads = 128;
  l.warpsM = 2;
  l.warpsN = 2;
  CHECK_FALSE(verifyOwnership(l).has_value());
  CHECK(l.tileRow(l.warpRow(3), 1) == 64 + 16);
  CHECK(l.warpCol(3) == 1);
}

TEST_CASE("an mma.sync B operand in registers is the PTX ISA's m16n8k16 B fragment") {
  // PTX ISA, "Matrix Fragments for mma.m16n8k16" (.f16/.bf16 B, a 16 x 8 K x N tile): lane
  // (4g + t) holds b0..b3 at row (k) 2t + (i & 1) + 8 (i >> 1), column (n) g. Warp column wN
  // holds columns wN * WN.., every warp row of the grid the same.
  for (bool nByK : {true, false}) {
    FragmentLayout l;
    l.kind = FragmentLayout::Kind::MmaOperandB;
    l.nByK = nByK;
    const int64_t N = 64, K = 32, warpsM = 2, warpsN = 2, WN = N / warpsN, NI = WN / 8;
    l.shape = nByK ? std::vector<int64_t>{N, K} : std::vector<int64_t>{K, N};
    l.threads = 32 * warpsM * warpsN;
    l.vector = nByK ? 2 : 1;
    l.warpsM = warpsM;
    l.warpsN = warpsN;
    CAPTURE(nByK);
    REQUIRE(l.slots() == (K / 16) * NI * 4);
    CHECK(l.copiesPerElement() == warpsM);
    CHECK_FALSE(verifyOwnership(l).has_value());
    for (int64_t tid = 0; tid < l.threads; ++tid)
      for (int64_t s = 0; s < l.slots(); ++s) {
        int64_t w = tid / 32, g = (tid % 32) / 4, t = tid % 4, i = s % 4, block = s / 4;
        int64_t n = (w % warpsN) * WN + (block % NI) * 8 + g;
        int64_t k = (block / NI) * 16 + 2 * t + (i & 1) + 8 * (i >> 1);
        CHECK(l.elementAt(tid, s) == (nByK ? n * K + k : k * N + n));
      }
  }
}
