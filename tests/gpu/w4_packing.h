// How the W4A16 kernels of tests/gpu/kernels take their int4 weights, for the GPU tests and for
// the interpreter's (tests/unit/interp): no CUDA here.
#pragma once

#include <cstdint>
#include <cstring>
#include <vector>

/// Int4 weights packed N x K/2 (two per byte along K, the even k in the low nibble) repacked into
/// 32-bit words N x K/8 as tests/gpu/kernels/w4a16_words.tile reads them, returned as the words'
/// bytes: weight k of a run of 64 is nibble (k % 32) / 16 * 2 + (k % 16) / 8 + (k % 2) * 4 of
/// word k / 64 * 8 + (k % 8) / 2 * 2 + (k % 64) / 32 (K a multiple of 64).
inline std::vector<uint8_t> repackInt4IntoWords(const std::vector<uint8_t> &packed, int64_t N,
                                                int64_t K) {
  std::vector<uint8_t> out(packed.size(), 0);
  for (int64_t n = 0; n < N; ++n)
    for (int64_t k = 0; k < K; ++k) {
      unsigned q = (packed[n * (K / 2) + k / 2] >> (4 * (k % 2))) & 15u;
      int64_t word = k / 64 * 8 + k % 8 / 2 * 2 + k % 64 / 32;
      int64_t pos = k % 32 / 16 * 2 + k % 16 / 8 + k % 2 * 4;
      out[(n * (K / 8) + word) * 4 + pos / 2] |= static_cast<uint8_t>(q << (4 * (pos % 2)));
    }
  return out;
}

/// The words of repackInt4IntoWords (N x K/8) cut into tiles of `rows` rows and `tileWords`
/// words, each tile's words together, tile (n / rows) * ceil(K/8 / tileWords) + (k/8) /
/// tileWords, zero-padded
/// to whole tiles, as tests/gpu/kernels/w4a16_words_tiled.tile reads them (its block_N and
/// block_K / 8); returned as the tiles' bytes.
inline std::vector<uint8_t> repackWordsIntoTiles(const std::vector<uint8_t> &words, int64_t N,
                                                 int64_t K, int64_t rows = 64,
                                                 int64_t tileWords = 64) {
  const int64_t W = K / 8, rowTiles = (N + rows - 1) / rows,
                colTiles = (W + tileWords - 1) / tileWords;
  std::vector<uint8_t> out(static_cast<size_t>(rowTiles * colTiles * rows * tileWords * 4), 0);
  for (int64_t n = 0; n < N; ++n)
    for (int64_t w = 0; w < W; ++w) {
      int64_t tile = n / rows * colTiles + w / tileWords;
      int64_t at = (tile * rows + n % rows) * tileWords + w % tileWords;
      std::memcpy(&out[at * 4], &words[(n * W + w) * 4], 4);
    }
  return out;
}
