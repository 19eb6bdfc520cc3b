// tilec runtime core: what the CUDA runtime (runtime.h) and the HIP runtime (runtime_hip.h) share
// and that names no API of either: the record of the last failure, the argument checks' rules,
// the launch grid and its integer arithmetic. Header-only, C++17; tilec pastes it into every
// generated header ahead of the runtime of the header's API.
#ifndef TILEC_RUNTIME_CORE_H
#define TILEC_RUNTIME_CORE_H

#include <cstddef>
#include <cstdint>
#include <cstdio>

#if defined(__GNUC__)
#pragma GCC visibility push(hidden)
#endif

namespace tilec::rtcore {

enum class ValueKind { None, Integer, Pointer };

/// Why the last launch or load failed on a thread: `Result` is the API's error type (CUresult,
/// hipError_t), whose zero is success in both.
template <class Result> struct LaunchError {
  Result result{};
  const char *kernel = nullptr;   // the launch function (null for load())
  const char *argument = nullptr; // the rejected argument ("grid" for the grid); null otherwise
  const char *reason = nullptr;   // what was wrong
  ValueKind valueKind = ValueKind::None;
  std::int64_t value = 0; // the rejected value
};

template <class Result> inline LaunchError<Result> &lastErrorSlot() {
  static thread_local LaunchError<Result> e;
  return e;
}

/// The last failure as one line, e.g. "matmul_relu: argument 'A' = 0x0: null pointer (CUresult
/// 1)" where `resultType` is "CUresult"; empty when none failed. The text lives in a
/// thread-local buffer until the next call on this thread.
template <class Result> inline const char *lastErrorMessage(const char *resultType) {
  static thread_local char text[256];
  const LaunchError<Result> &e = lastErrorSlot<Result>();
  if (e.result == Result{}) {
    text[0] = '\0';
    return text;
  }
  int n = std::snprintf(text, sizeof text, "%s", e.kernel ? e.kernel : "load");
  auto rest = [&]() -> std::size_t {
    return n < 0 || static_cast<std::size_t>(n) >= sizeof text ? 0 : sizeof text - n;
  };
  if (e.argument && rest()) {
    n += std::snprintf(text + n, rest(), ": argument '%s'", e.argument);
    if (e.valueKind == ValueKind::Integer && rest())
      n += std::snprintf(text + n, rest(), " = %lld", static_cast<long long>(e.value));
    else if (e.valueKind == ValueKind::Pointer && rest())
      n += std::snprintf(text + n, rest(), " = 0x%llx",
                         static_cast<unsigned long long>(static_cast<std::uint64_t>(e.value)));
  }
  if (rest())
    n += std::snprintf(text + n, rest(), ": %s (%s %d)", e.reason ? e.reason : "failed", resultType,
                       static_cast<int>(e.result));
  return text;
}

template <class Result>
inline Result fail(Result r, const char *kernel, const char *argument, const char *reason,
                   ValueKind kind = ValueKind::None, std::int64_t value = 0) {
  lastErrorSlot<Result>() = LaunchError<Result>{r, kernel, argument, reason, kind, value};
  return r;
}

// ---- The rules of the argument checks: each says why an argument is rejected, or null.

/// A tensor pointer must be non-null and aligned to what the kernel assumes.
inline const char *tensorProblem(std::uint64_t address, std::uint64_t alignBytes) {
  if (address == 0)
    return "null pointer";
  if (alignBytes > 1 && address % alignBytes != 0)
    return "not aligned to what the kernel assumes";
  return nullptr;
}

/// A symbolic dimension must be positive and fit the 32-bit index arithmetic kernels use.
inline const char *dimProblem(std::int64_t d) {
  if (d <= 0)
    return "dimension must be > 0";
  if (d > 2147483647)
    return "dimension must be < 2^31";
  return nullptr;
}

/// A launch grid; the generated STEM::KERNEL_info::grid() functions return it.
struct Grid {
  std::int64_t x = 1, y = 1, z = 1;
};

/// The grid must be non-empty, grid.x at most `maxX` (`xRule` says so) and y and z at most
/// 65535. Sets `value` to the rejected extent.
inline const char *gridProblem(const Grid &g, std::int64_t maxX, const char *xRule,
                               std::int64_t &value) {
  constexpr std::int64_t maxYZ = 65535;
  if (g.x < 1 || g.x > maxX)
    return value = g.x, xRule;
  if (g.y < 1 || g.y > maxYZ)
    return value = g.y, "grid.y outside [1, 65535]";
  if (g.z < 1 || g.z > maxYZ)
    return value = g.z, "grid.z outside [1, 65535]";
  return nullptr;
}

// ---- Grid arithmetic, with the language's (Python's) integer semantics. A zero divisor gives 0,
// which the grid check then rejects instead of the host crashing.

inline std::int64_t floorDiv(std::int64_t a, std::int64_t b) {
  if (b == 0)
    return 0;
  std::int64_t q = a / b;
  return (a % b != 0 && ((a % b) < 0) != (b < 0)) ? q - 1 : q;
}
inline std::int64_t floorMod(std::int64_t a, std::int64_t b) {
  if (b == 0)
    return 0;
  std::int64_t r = a % b;
  return (r != 0 && (r < 0) != (b < 0)) ? r + b : r;
}
inline std::int64_t truncDiv(std::int64_t a, std::int64_t b) { return b == 0 ? 0 : a / b; }
inline std::int64_t min(std::int64_t a, std::int64_t b) { return a < b ? a : b; }
inline std::int64_t max(std::int64_t a, std::int64_t b) { return a < b ? b : a; }

} // namespace tilec::rtcore

#if defined(__GNUC__)
#pragma GCC visibility pop
#endif

#endif // TILEC_RUNTIME_CORE_H
