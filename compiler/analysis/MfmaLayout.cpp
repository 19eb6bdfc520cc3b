#include "analysis/MfmaLayout.h"

#include <fmt/format.h>

#include <stdexcept>

namespace tilec::analysis {

namespace {

constexpr int64_t kWave = 64;

void requireShape(const target::MmaShape &s) {
  bool known = (s.m == 32 && s.n == 32 && s.k == 8) || (s.m == 16 && s.n == 16 && s.k == 16);
  if (!known || dtypeBits(s.input) != 16)
    throw std::logic_error(
        fmt::format("no MFMA layout for m{}n{}k{} {}", s.m, s.n, s.k, dtypeName(s.input)));
}

} // namespace

int64_t mfmaItems(const target::MmaShape &s, MfmaOperand operand) {
  requireShape(s);
  switch (operand) {
  case MfmaOperand::A:
    return s.m * s.k / kWave;
  case MfmaOperand::B:
    return s.k * s.n / kWave;
  case MfmaOperand::Accumulator:
    return s.m * s.n / kWave;
  }
  return 0;
}

MatrixIndex mfmaElement(const target::MmaShape &s, MfmaOperand operand, int64_t lane,
                        int64_t item) {
  requireShape(s);
  if (lane < 0 || lane >= kWave || item < 0 || item >= mfmaItems(s, operand))
    throw std::logic_error(fmt::format("MFMA lane {} item {} out of range", lane, item));
  // The lanes form kWave / M groups of M (A) or kWave / N groups of N (B, accumulator): lane l is
  // row (A) or column (B, accumulator) l % M of group l / M.
  switch (operand) {
  case MfmaOperand::A: {
    int64_t groups = kWave / s.m;
    return {lane % s.m, (lane / s.m) * (s.k / groups) + item};
  }
  case MfmaOperand::B: {
    int64_t groups = kWave / s.n;
    return {(lane / s.n) * (s.k / groups) + item, lane % s.n};
  }
  case MfmaOperand::Accumulator: {
    // Items come in groups of 4 consecutive rows; the lane groups take turns by 4 rows, so
    // 32x32 (2 lane groups) repeats every 8 rows and 16x16 (4 lane groups) fills its 16 rows.
    int64_t groups = kWave / s.n;
    int64_t row = (item / 4) * (4 * groups) + (lane / s.n) * 4 + item % 4;
    return {row, lane % s.n};
  }
  }
  throw std::logic_error("unknown MFMA operand");
}

FragmentMap mfmaMap(const target::MmaShape &s, MfmaOperand operand) {
  int64_t items = mfmaItems(s, operand);
  int64_t rows = operand == MfmaOperand::B ? s.k : s.m;
  int64_t cols = operand == MfmaOperand::A ? s.k : s.n;
  FragmentMap map(kWave, items, rows * cols);
  for (int64_t lane = 0; lane < kWave; ++lane)
    for (int64_t item = 0; item < items; ++item) {
      MatrixIndex e = mfmaElement(s, operand, lane, item);
      map.set(lane, item, e.row * cols + e.col);
    }
  return map;
}

} // namespace tilec::analysis
