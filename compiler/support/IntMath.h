// Python's floored integer division and modulo (the language's `//` and `%`), shared by the
// constant folder, the range analysis, the bench evaluator and the thread-IR interpreter.
#pragma once

#include <cstdint>

namespace tilec {

/// a // b rounded toward negative infinity. Requires b != 0 and not (a = INT64_MIN, b = -1).
constexpr int64_t floorDiv(int64_t a, int64_t b) {
  int64_t q = a / b;
  return (a % b != 0 && ((a % b < 0) != (b < 0))) ? q - 1 : q;
}

/// a % b with the sign of b. Requires b != 0.
constexpr int64_t floorMod(int64_t a, int64_t b) {
  int64_t r = a % b;
  return (r != 0 && ((r < 0) != (b < 0))) ? r + b : r;
}

static_assert(floorDiv(-7, 2) == -4 && floorDiv(7, -2) == -4 && floorDiv(-8, 2) == -4);
static_assert(floorMod(-7, 2) == 1 && floorMod(7, -2) == -1 && floorMod(-8, 2) == 0);

} // namespace tilec
