// What the benchmark's host programs (gemm_bench.cpp, attention_bench.cpp) share: seeded inputs
// and the command line `DIMS... [--warmup W] [--reps R] [--batch B] [--seed S] [--samples N]`.
#pragma once

#include <cerrno>
#include <cstdint>
#include <cstdlib>
#include <string>
#include <vector>

namespace benchutil {

inline uint64_t splitmix64(uint64_t x) {
  x += 0x9e3779b97f4a7c15ull;
  x = (x ^ (x >> 30)) * 0xbf58476d1ce4e5b9ull;
  x = (x ^ (x >> 27)) * 0x94d049bb133111ebull;
  return x ^ (x >> 31);
}

/// `n` values uniform in [-1, 1) as `encode` stores them, element i a hash of (seed, stream, i):
/// fast at 8192^2, the same on every run with the same seed, and without repeats that could hide
/// an indexing error.
template <class Encode>
auto randomUniform(size_t n, uint64_t seed, uint64_t stream, Encode encode) {
  std::vector<decltype(encode(0.0f))> v(n);
  const uint64_t base = splitmix64(seed * 0x100000001b3ull + stream);
  for (size_t i = 0; i < n; ++i)
    v[i] = encode(static_cast<float>(splitmix64(base + i) >> 40) * 0x1p-23f - 1.0f);
  return v;
}

/// Prints why the command line is wrong and how to use the program, and exits.
using Usage = void (*)(const char *argv0, const std::string &why);

/// A whole decimal number in [lo, hi], or usage().
inline long long number(const char *argv0, Usage usage, const char *what, const char *text,
                        long long lo, long long hi) {
  char *end = nullptr;
  errno = 0;
  long long v = std::strtoll(text, &end, 10);
  if (errno || end == text || *end || v < lo || v > hi) {
    usage(argv0, std::string(what) + " must be a whole number in [" + std::to_string(lo) + ", " +
                     std::to_string(hi) + "], not '" + text + "'");
    std::exit(64);
  }
  return v;
}

struct Options {
  int warmup = 10, reps = 50;
  int batch = 1;   // launches a timed run (gputest::medianMs)
  int samples = 0; // 0: not given, the program's default
  uint64_t seed = 1;
  std::vector<const char *> positional; // the dimensions, as given
};

/// The options of a benchmark program; `minReps` is the fewest repetitions a timing may have.
inline Options parseOptions(int argc, char **argv, Usage usage, int minReps = 20) {
  Options o;
  for (int i = 1; i < argc; ++i) {
    std::string arg = argv[i];
    auto value = [&]() -> const char * {
      if (i + 1 >= argc) {
        usage(argv[0], arg + " needs a value");
        std::exit(64);
      }
      return argv[++i];
    };
    if (arg == "--warmup")
      o.warmup = static_cast<int>(number(argv[0], usage, "--warmup", value(), 0, 100000));
    else if (arg == "--reps")
      o.reps = static_cast<int>(number(argv[0], usage, "--reps", value(), minReps, 100000));
    else if (arg == "--batch")
      o.batch = static_cast<int>(number(argv[0], usage, "--batch", value(), 1, 1000));
    else if (arg == "--samples")
      o.samples = static_cast<int>(number(argv[0], usage, "--samples", value(), 1, 1 << 24));
    else if (arg == "--seed")
      o.seed = static_cast<uint64_t>(number(argv[0], usage, "--seed", value(), 0, INT64_MAX));
    else if (arg.size() > 1 && arg[0] == '-') {
      usage(argv[0], "unknown option " + arg);
      std::exit(64);
    } else
      o.positional.push_back(argv[i]);
  }
  return o;
}

} // namespace benchutil
