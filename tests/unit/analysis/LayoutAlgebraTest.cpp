#include "analysis/LayoutAlgebra.h"

#include <doctest/doctest.h>

using namespace tilec::analysis;

namespace {

FragmentLayout mmaAccumulator(int64_t M, int64_t N, int64_t warpsM, int64_t warpsN, bool wg) {
  FragmentLayout l;
  l.kind = FragmentLayout::Kind::MmaAccumulator;
  l.shape = {M, N};
  l.threads = 32 * warpsM * warpsN;
  l.vector = 2;
  l.warpsM = warpsM;
  l.warpsN = warpsN;
  l.warpgroup = wg;
  return l;
}

} // namespace

TEST_CASE("inversion lists each element's holders and round-trips") {
  FragmentLayout l = mmaAccumulator(64, 32, 4, 1, true);
  FragmentMap m = FragmentMap::of(l);
  auto owners = m.owners();
  REQUIRE(owners.size() == 64 * 32);
  for (size_t e = 0; e < owners.size(); ++e) {
    REQUIRE(owners[e].size() == 1);
    CHECK(m.at(owners[e][0].thread, owners[e][0].slot) == static_cast<int64_t>(e));
  }
  CHECK_FALSE(verifyCoverage(m, 1));
  // Element (17, 2) of the PTX figure: thread 37, register 0 (cookbook 3.2).
  CHECK(owners[17 * 32 + 2][0] == Owner{37, 0});
}

TEST_CASE("replicated layouts are held by every thread; a broken map is caught") {
  FragmentLayout r;
  r.kind = FragmentLayout::Kind::Replicated;
  r.shape = {8};
  r.threads = 64;
  FragmentMap m = FragmentMap::of(r);
  CHECK_FALSE(verifyCoverage(m, 64));
  CHECK(verifyCoverage(m, 1).has_value());
  FragmentMap d = FragmentMap::of(mmaAccumulator(16, 8, 1, 1, false));
  d.set(0, 0, 1); // thread 0 slot 0 now duplicates element 1 and drops element 0
  auto err = verifyCoverage(d, 1);
  REQUIRE(err);
  CHECK(*err == "element 0 is held 0 times, expected 1");
}

TEST_CASE("repetition stacks copies in fresh slots of the same threads") {
  FragmentMap atom = FragmentMap::of(mmaAccumulator(16, 8, 1, 1, false)); // one m16n8 tile
  FragmentMap r = atom.repeat(3);
  CHECK(r.slots() == 3 * atom.slots());
  CHECK(r.elements() == 3 * 128);
  CHECK_FALSE(verifyCoverage(r, 1));
  CHECK(r.at(5, atom.slots() + 2) == 128 + *atom.at(5, 2));
}

TEST_CASE("composition with shared layouts: the swizzle removes the bank conflicts of storing "
          "an accumulator") {
  // Each lane stores its two adjacent f32 of an m16n8 block (8 bytes): the 8 rows of a quad
  // column are 256 bytes apart in a row-major 64 x 64 f32 tile (all on the same banks) but are
  // spread over all banks by the 128-byte swizzle.
  FragmentLayout l = mmaAccumulator(64, 64, 4, 1, true);
  FragmentMap m = FragmentMap::of(l);
  SharedLayout rowMajor;
  rowMajor.rows = 64;
  rowMajor.rowBytes = 256;
  rowMajor.elementBytes = 4;
  rowMajor.panelBytes = 256;
  SharedLayout swizzled = chooseSharedLayout({64, 64}, 4);
  REQUIRE(swizzled.swizzleBytes == 128);
  int64_t plain = wavefronts(m.compose(rowMajor), m, 0, 0, 8);
  int64_t swz = wavefronts(m.compose(swizzled), m, 0, 0, 8);
  CHECK(plain == 8);
  CHECK(swz == 2); // 256 bytes: the minimum
}

TEST_CASE("the cookbook's measured bank rule") {
  // u32 with a stride of 2 words: 2-way; 33 words (padding): conflict-free.
  FragmentMap m(32, 1, 32 * 33);
  for (int64_t t = 0; t < 32; ++t)
    m.set(t, 0, t);
  std::vector<std::optional<int64_t>> stride2(32), stride33(32);
  for (int64_t t = 0; t < 32; ++t) {
    stride2[t] = t * 8;
    stride33[t] = t * 132;
  }
  CHECK(wavefronts(stride2, m, 0, 0, 4) == 2);
  CHECK(wavefronts(stride33, m, 0, 0, 4) == 1);
}
