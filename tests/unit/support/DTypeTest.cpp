#include "support/DType.h"

#include <doctest/doctest.h>

#include <cmath>

using namespace tilec;

TEST_CASE("float8 values: the formats' landmarks") {
  const DType e4 = DType::Float8E4M3, e5 = DType::Float8E5M2;
  CHECK(float8Value(0x00, e4) == 0.0);
  CHECK(float8Value(0x38, e4) == 1.0);                 // 0.0111.000: 2^(7-7)
  CHECK(float8Value(0x7E, e4) == 448.0);               // the largest finite
  CHECK(float8Value(0x01, e4) == std::ldexp(1.0, -9)); // the smallest subnormal
  CHECK(float8Value(0x08, e4) == std::ldexp(1.0, -6)); // the smallest normal
  CHECK(float8Value(0xB8, e4) == -1.0);
  CHECK(std::isnan(float8Value(0x7F, e4)));
  CHECK(std::isnan(float8Value(0xFF, e4)));
  CHECK(float8Value(0x3C, e5) == 1.0);                  // 0.01111.00
  CHECK(float8Value(0x7B, e5) == 57344.0);              // the largest finite
  CHECK(float8Value(0x01, e5) == std::ldexp(1.0, -16)); // the smallest subnormal
  CHECK(std::isinf(float8Value(0x7C, e5)));
  CHECK(std::isnan(float8Value(0x7D, e5)));
}

TEST_CASE("float8 rounding: nearest, ties to even, saturating, NaN kept") {
  const DType e4 = DType::Float8E4M3, e5 = DType::Float8E5M2;
  // Every finite encoding round-trips.
  for (int b = 0; b < 256; ++b)
    for (DType t : {e4, e5}) {
      double v = float8Value(static_cast<uint8_t>(b), t);
      if (std::isfinite(v) && !(v == 0 && (b & 0x80)))
        CHECK(float8Bits(v, t) == b);
    }
  CHECK(float8Bits(-0.0, e4) == 0x80);
  // 1 + 1/16 lies halfway between 1 (mantissa 000, even) and 1.125 (001): to 1.
  CHECK(float8Bits(1.0625, e4) == 0x38);
  // 1.125 + 1/16 lies between 001 and 010 (even): up.
  CHECK(float8Bits(1.1875, e4) == 0x3A);
  CHECK(float8Bits(1.07, e4) == 0x39);
  CHECK(float8Bits(1e6, e4) == 0x7E);
  CHECK(float8Bits(-1e6, e4) == 0xFE);
  CHECK(float8Bits(INFINITY, e4) == 0x7E);
  CHECK(float8Bits(INFINITY, e5) == 0x7B);
  CHECK(float8Bits(1e-9, e4) == 0x00);
  CHECK(std::isnan(float8Value(float8Bits(NAN, e4), e4)));
  CHECK(std::isnan(float8Value(float8Bits(NAN, e5), e5)));
}
