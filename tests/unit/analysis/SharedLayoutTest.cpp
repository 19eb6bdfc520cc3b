#include "analysis/SharedLayout.h"

#include <doctest/doctest.h>

using namespace tilec::analysis;

TEST_CASE("shared layouts are chunk-preserving bijections") {
  for (std::vector<int64_t> shape : std::vector<std::vector<int64_t>>{{128, 64},
                                                                      {64, 128},
                                                                      {64, 512},
                                                                      {128, 96},
                                                                      {16, 32},
                                                                      {8, 16},
                                                                      {24, 24},
                                                                      {4, 64},
                                                                      {3, 5},
                                                                      {2, 8, 64},
                                                                      {1000}}) {
    for (int64_t eb : {2, 4}) {
      SharedLayout l = chooseSharedLayout(shape, eb);
      CAPTURE(l.name());
      CHECK_FALSE(verifySharedLayout(l).has_value());
    }
  }
}

TEST_CASE("128-byte rows: the cookbook's 128B swizzle recipe") {
  SharedLayout l = chooseSharedLayout({64, 64}, 2);
  CHECK(l.name() == "swizzled_128B");
  CHECK(l.wgmmaCanonical());
  for (int64_t r = 0; r < 64; ++r)
    for (int64_t c = 0; c < 64; ++c)
      CHECK(l.byteOffset(r, c * 2) == r * 128 + (((c * 2) >> 4) ^ (r & 7)) * 16 + (c * 2 & 15));
}

TEST_CASE("wide rows are cut into 128-byte panels") {
  SharedLayout l = chooseSharedLayout({64, 128}, 2); // 256-byte rows: two panels of 64 halves
  CHECK(l.name() == "panels_128B_swizzled_128B");
  CHECK(l.byteOffset(0, 128) == 64 * 128); // first byte of panel 1
  CHECK(l.byteOffset(1, 130) == 64 * 128 + (128 + 16) + 2);
  CHECK(l.wgmmaCanonical());
}

TEST_CASE("rows of an odd number of 64-byte lines are cut into 64-byte panels") {
  SharedLayout l = chooseSharedLayout({128, 96}, 2); // attention's K and V at head dimension 96
  CHECK(l.name() == "panels_64B_swizzled_64B");
  CHECK(l.wgmmaCanonical());
  CHECK(l.byteOffset(0, 64) == 128 * 64);                        // first byte of panel 1
  CHECK(l.byteOffset(2, 130) == 2 * 128 * 64 + 2 * 64 + 16 + 2); // row 2 of panel 2: chunk 0 ^ 1
  CHECK(l.byteOffset(2, 2) == 2 * 64 + 16 + 2);                  // 64B swizzle: chunk 0 ^ (2 >> 1)
  // K-major (Q @ K^T reads K by rows): a k-slice in the second panel.
  auto k = wgmmaDescriptor(l, /*kMajor=*/true, 64, 32, 64);
  REQUIRE(k);
  CHECK(k->swizzleCode == 2);
  CHECK(k->startByte == 128 * 64 + 64 * 64);
  CHECK(k->sbo == 8 * 64);
  // MN-major (P @ V reads V's 96 columns): three panels, LBO one panel apart.
  auto v = wgmmaDescriptor(l, /*kMajor=*/false, 0, 16, 96);
  REQUIRE(v);
  CHECK(v->lbo == 128 * 64);
  CHECK(v->startByte == 16 * 64);
  // 160-byte rows are no whole number of 64-byte lines: left to the 128-byte XOR.
  CHECK(chooseSharedLayout({64, 80}, 2).name() == "swizzled_128B");
}

TEST_CASE("narrow rows get the matching narrower swizzle") {
  CHECK(chooseSharedLayout({64, 32}, 2).name() == "swizzled_64B");
  CHECK(chooseSharedLayout({64, 16}, 2).name() == "swizzled_32B");
  CHECK(chooseSharedLayout({64, 32}, 2).wgmmaCanonical());
  // Too few rows for 8-row atoms, or for an ldmatrix to read 8 of them: left row-major, which
  // TMA writes without a swizzle (a row of per-column scales, say).
  SharedLayout odd = chooseSharedLayout({4, 64}, 2);
  CHECK(odd.name() == "row_major");
  CHECK_FALSE(odd.wgmmaCanonical());
  CHECK(odd.swizzleIsIdentity());
  // Where the XOR does move bytes TMA must swizzle alike; within one 128-byte line it moves none.
  CHECK_FALSE(chooseSharedLayout({64, 64}, 2).swizzleIsIdentity());
  SharedLayout line = chooseSharedLayout({64, 64}, 2);
  line.rows = 1;
  CHECK(line.swizzleIsIdentity());
  CHECK(chooseSharedLayout({3, 5}, 2).name() == "row_major");
  CHECK(chooseSharedLayout({1024}, 4).name() == "row_major");
}

TEST_CASE("wgmma descriptors of canonical layouts") {
  SharedLayout a = chooseSharedLayout({128, 64}, 2); // A, M x K
  auto d = wgmmaDescriptor(a, /*kMajor=*/true, 64, 48, 64);
  REQUIRE(d);
  CHECK(d->startByte == 64 * 128 + 96);
  CHECK(d->sbo == 1024);
  CHECK(d->swizzleCode == 1);
  // The verified encoding of the cookbook: 128B swizzle code 1, LBO field 1, SBO 1024.
  CHECK(d->highBits() == (uint64_t{1} << 16 | uint64_t{64} << 32 | uint64_t{1} << 62));

  SharedLayout b = chooseSharedLayout({64, 128}, 2); // B, K x N (N contiguous)
  auto e = wgmmaDescriptor(b, /*kMajor=*/false, 0, 16, 128);
  REQUIRE(e);
  CHECK(e->startByte == 16 * 128);
  CHECK(e->lbo == 64 * 128); // the next 64 columns: one panel on
  CHECK(e->sbo == 1024);
  CHECK_FALSE(wgmmaDescriptor(b, false, 32, 0, 64)); // not at a panel start
  CHECK_FALSE(wgmmaDescriptor(b, false, 0, 4, 128)); // k not on an 8-row atom
  CHECK_FALSE(wgmmaDescriptor(a, true, 4, 0, 64));   // m not on an 8-row atom

  SharedLayout n = chooseSharedLayout({64, 32}, 2);
  auto f = wgmmaDescriptor(n, true, 0, 16, 64);
  REQUIRE(f);
  CHECK(f->swizzleCode == 2);
  CHECK(f->startByte == 32);
  CHECK(f->sbo == 512);
}
