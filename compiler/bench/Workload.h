// What one benchmarked launch of a kernel is, computed without a GPU: every argument's value
// (symbolic dimensions from --shape, scalars from --arg), each tensor's shape and bytes, the
// launch grid, and the work it does (bytes moved, tensor-core FLOPs). The runner (Runner.h)
// executes it; tune filters and compares with it.
#pragma once

#include "support/DType.h"
#include "threadir/ThreadIR.h"
#include "tileir/TileIR.h"

#include <array>
#include <cstdint>
#include <map>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

namespace tilec::bench {

/// NAME=VALUE pairs in the order given ("M=4096,N=4096"); a later one of the same name wins.
using Assignments = std::map<std::string, std::string>;

/// Parses "A=1,B=2" (commas or semicolons between pairs, spaces around them allowed) into
/// `out`. False and a one-line `error` on a pair without a name or a value.
bool parseAssignments(std::string_view text, Assignments &out, std::string &error);

/// Parses an integer as --shape and --arg write them: digits, `_` between them allowed (4_096).
std::optional<int64_t> parseInt(std::string_view text);

/// Parses a size with an optional binary or decimal unit: "1048576", "256MiB", "1GB", "4k".
std::optional<uint64_t> parseByteSize(std::string_view text);

struct TensorArg {
  int param = -1; // index among the thread-IR kernel's parameters
  std::string name;
  DType dtype = DType::Float32;
  std::vector<int64_t> shape;
  uint64_t bytes = 0;
};

/// One launch of a kernel with every argument fixed.
struct Launch {
  const thir::Kernel *kernel = nullptr;
  /// Per thread-IR parameter: the value of a Dim or integer Scalar (grid and tensor maps are
  /// evaluated over these), 0 for the others.
  std::vector<int64_t> intValues;
  /// Per thread-IR parameter: the value of a Scalar (integer ones too, as a double).
  std::vector<double> scalarValues;
  std::vector<TensorArg> tensors;
  std::array<int64_t, 3> grid = {1, 1, 1};
  /// The symbolic dimensions as bound, in the kernel's order (for reports).
  std::vector<std::pair<std::string, int64_t>> dims;
  /// Every tensor's bytes once (read or written): the traffic a memory-bound kernel cannot go
  /// below.
  uint64_t bytes = 0;
  /// 2*m*n*k of every gemm every block runs (tile sizes, so a ragged edge counts its padding);
  /// nullopt when a loop's trip count or a branch depends on data.
  std::optional<double> flops;
};

/// Fixes the arguments of `tk`/`k` (the same kernel at the tile and thread level). `shapes` binds
/// symbolic dimensions and `args` scalars by name; names neither kernel of the file has are
/// reported by checkNames. Float scalars default to 1.0, integer ones must be given when the
/// grid depends on them, else default to 1. nullopt and a one-line `error` on a missing or bad
/// value.
std::optional<Launch> planLaunch(const tile::Kernel &tk, const thir::Kernel &k,
                                 const Assignments &shapes, const Assignments &args,
                                 std::string &error);

/// The names in `shapes` (dimensions) and `args` (scalars) that no kernel of `kernels` has;
/// empty when all are known, else a one-line error.
std::string checkNames(const std::vector<tile::Kernel> &kernels, const Assignments &shapes,
                       const Assignments &args);

/// Evaluates a host-evaluable integer expression of `k` (a grid extent, a tensor map's extent or
/// stride) given each parameter's integer value; nullopt when it uses anything else.
std::optional<int64_t> evalHost(const thir::Expr &e, const std::vector<int64_t> &params);

} // namespace tilec::bench
