// Bit operations of tests/gpu/kernels/bit_ops.tile against the CPU, bit for bit: C's semantics
// in each dtype (shifts by run-time counts, arithmetic >> on signed and logical >> on unsigned
// types, wrapping at 8 and 16 bits) and bit casts. Fresh random inputs of every sign each run,
// ragged sizes, poisoned bytes behind every output.
#include "bit_ops.h"
#include "gpu_common.h"

#include <cstring>
#include <string>

using namespace gputest;

namespace {

template <class T> std::vector<T> randomBits(size_t n, std::mt19937 &rng) {
  std::vector<T> v(n);
  for (T &x : v) {
    uint64_t bits = (static_cast<uint64_t>(rng()) << 32) | rng();
    std::memcpy(&x, &bits, sizeof(T));
  }
  return v;
}

template <class T, class From> T bitsOf(From x) {
  static_assert(sizeof(T) == sizeof(x));
  T t;
  std::memcpy(&t, &x, sizeof(T));
  return t;
}

int runSize(std::mt19937 &rng, int64_t N) {
  const size_t n = static_cast<size_t>(N);
  auto label = [N](const char *what) { return std::string(what) + " N=" + std::to_string(N); };
  auto X = randomBits<int32_t>(n, rng), Y = randomBits<int32_t>(n, rng);
  auto U = randomBits<uint32_t>(n, rng);
  auto B = randomBits<uint8_t>(n, rng);
  auto C = randomBits<int8_t>(n, rng);
  auto H = randomBits<int16_t>(n, rng);
  auto L = randomBits<int64_t>(n, rng);
  std::vector<float> F = randomFloats(n, rng, 1000.f);
  std::vector<int32_t> R(n * 8);
  std::vector<uint32_t> RU(n * 4);
  std::vector<uint8_t> RB(n * 3);
  std::vector<int8_t> RC(n * 2);
  std::vector<int16_t> RH(n * 2);
  std::vector<int64_t> RL(n * 3);
  std::vector<float> RF(n);
  for (size_t i = 0; i < n; ++i) {
    // C semantics with the promotions of the language: no promotion to int for the narrow
    // types (results wrap at their width), shifts in the wider operand's dtype.
    int32_t x = X[i], y = Y[i], s = y & 31;
    R[i * 8 + 0] = x & y;
    R[i * 8 + 1] = x | y;
    R[i * 8 + 2] = x ^ y;
    R[i * 8 + 3] = ~x;
    R[i * 8 + 4] = static_cast<int32_t>(static_cast<uint32_t>(x) << s);
    R[i * 8 + 5] = x >> s;
    R[i * 8 + 6] =
        ((x >> 4) & 0xF) | (static_cast<int32_t>(static_cast<uint32_t>(y & 3) << 30) ^ x);
    R[i * 8 + 7] = (bitsOf<int32_t>(F[i]) >> 23) & 0xFF;
    uint32_t u = U[i];
    RU[i * 4 + 0] = u >> s;
    RU[i * 4 + 1] = u << s;
    RU[i * 4 + 2] = (~u & 0xFFFF0000u) | (u >> 16);
    RU[i * 4 + 3] = static_cast<uint32_t>(x) >> 31;
    uint8_t b = B[i];
    RB[i * 3 + 0] = static_cast<uint8_t>(b >> 4);
    RB[i * 3 + 1] = static_cast<uint8_t>(static_cast<uint8_t>(b << 4) >> 4);
    RB[i * 3 + 2] = static_cast<uint8_t>(static_cast<uint8_t>(b ^ 0x5A) << 1);
    int8_t c = C[i];
    RC[i * 2 + 0] = static_cast<int8_t>(c >> 2);
    RC[i * 2 + 1] = static_cast<int8_t>(static_cast<int8_t>(static_cast<uint8_t>(c) << 3) >> 3);
    int16_t h = H[i];
    int16_t hs = static_cast<int16_t>(static_cast<uint16_t>(h) << 8);
    RH[i * 2 + 0] = static_cast<int16_t>(hs | static_cast<int16_t>(h >> 8));
    RH[i * 2 + 1] = static_cast<int16_t>(static_cast<int16_t>(~h) >> (s & 15));
    int64_t v = L[i];
    int sv = y & 63;
    RL[i * 3 + 0] = static_cast<int64_t>(static_cast<uint64_t>(v) << sv);
    RL[i * 3 + 1] = v >> sv;
    RL[i * 3 + 2] = (int64_t{1} << 40) | (v & 0xFFFF);
    RF[i] = bitsOf<float>(bitsOf<uint32_t>(F[i]) & 0x7FFFFFFFu);
  }
  auto out = [&](size_t bytes) { return poisoned(bytes + kSlackBytes); };
  DeviceBuffer dX = upload(X), dY = upload(Y), dU = upload(U), dB = upload(B), dC = upload(C),
               dH = upload(H), dL = upload(L), dF = upload(F);
  DeviceBuffer dR = out(R.size() * 4), dRU = out(RU.size() * 4), dRB = out(RB.size()),
               dRC = out(RC.size()), dRH = out(RH.size() * 2), dRL = out(RL.size() * 8),
               dRF = out(RF.size() * 4);
  CK(tile::bit_ops::bit_ops(nullptr, dX, dY, dU, dB, dC, dH, dL, dF, dR, dRU, dRB, dRC, dRH, dRL,
                            dRF, N));
  CK(cuCtxSynchronize());
  int failures = 0;
  failures += compareExact(label("i32").c_str(), dR, R);
  failures += compareExact(label("u32").c_str(), dRU, RU);
  failures += compareExact(label("u8").c_str(), dRB, RB);
  failures += compareExact(label("i8").c_str(), dRC, RC);
  failures += compareExact(label("i16").c_str(), dRH, RH);
  failures += compareExact(label("i64").c_str(), dRL, RL);
  std::vector<uint32_t> fBits(n);
  for (size_t i = 0; i < n; ++i)
    fBits[i] = bitsOf<uint32_t>(RF[i]);
  failures += compareExact(label("f32").c_str(), dRF, fBits);
  return failures;
}

} // namespace

int main() {
  init();
  std::mt19937 rng = freshRng();
  int failures = 0;
  for (int64_t N : {1, 255, 1000, 65537})
    failures += runSize(rng, N);
  return verdict("bit_ops", failures);
}
