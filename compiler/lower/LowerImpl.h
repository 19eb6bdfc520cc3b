// Internal to lower/: the per-kernel lowering state, split over Lower.cpp (global memory,
// expressions, control flow), LowerLoops.cpp (serial and Parallel loops), LowerFragments.cpp
// (fragments), LowerReduce.cpp (their row reductions) and the files docs/architecture.md lists.
#pragma once

#include "analysis/FragmentLayout.h"
#include "analysis/ParallelLayout.h"
#include "lower/IndexExpr.h"
#include "lower/Lower.h"
#include "lower/Plan.h"

#include <algorithm>
#include <cstdint>
#include <functional>
#include <limits>
#include <map>
#include <optional>
#include <set>
#include <unordered_set>
#include <vector>

namespace tilec::lower::detail {

using thir::Type;

// The two IRs spell their operators in the same order; lowering maps them one to one.
static_assert(static_cast<int>(tile::UnOp::BitNot) == static_cast<int>(thir::UnOp::BitNot));
static_assert(static_cast<int>(tile::BinOp::BitOr) == static_cast<int>(thir::BinOp::BitOr));
static_assert(static_cast<int>(tile::BinOp::Shr) == static_cast<int>(thir::BinOp::Shr));
inline thir::UnOp mapUnOp(tile::UnOp op) { return static_cast<thir::UnOp>(static_cast<int>(op)); }
inline thir::BinOp mapBinOp(tile::BinOp op) {
  return static_cast<thir::BinOp>(static_cast<int>(op));
}

/// Conservative integer bounds of an index expression, for eliding provably true mask checks.
struct Interval {
  int64_t lo = std::numeric_limits<int64_t>::min() / 4;
  int64_t hi = std::numeric_limits<int64_t>::max() / 4;
};

/// The values integer expression `e` may take, where `rangeOf` gives the range of a variable
/// (by id) when one is known; every value (Interval{}) where nothing bounds them.
Interval valueRange(const tile::Expr &e,
                    const std::function<std::optional<Interval>(int)> &rangeOf);

/// The rows (first indices) of buffer `buffer` that the statements of `body` read, the gemms
/// accumulating into it aside (each reads a row only to compute that row): the range of every
/// index and region that may read it, over the constant ranges of the loops around them; lo > hi
/// when nothing reads it.
Interval rowsReadBesidesGemms(const tile::Body &body, int buffer);

/// What a tile variable stands for while its body is lowered.
struct Binding {
  thir::Expr value; // scalar value (loop variables, parameters, dims, block indices)
  std::optional<Interval> range;
};

/// Lane context of a vectorized Parallel body: the innermost loop variable's lane-0 value.
struct LaneContext {
  int lanes = 1;
  int innerVarId = -1;
};

struct Access {
  tile::BufferPtr buffer;
  std::vector<tile::Expr> indices;
};

void collectAccesses(const tile::Expr &e, std::vector<Access> &out);

inline thir::Expr i32(int64_t v) { return thir::constInt(v, DType::Int32); }
// Int32 index arithmetic on thread-IR expressions.
inline thir::Expr add(thir::Expr a, thir::Expr b) { return thir::binary(thir::BinOp::Add, a, b); }
inline thir::Expr sub(thir::Expr a, thir::Expr b) { return thir::binary(thir::BinOp::Sub, a, b); }
inline thir::Expr mul(thir::Expr a, int64_t b) { return thir::binary(thir::BinOp::Mul, a, i32(b)); }
/// C division and remainder, for operands that are never negative (loop counters).
inline thir::Expr quot(thir::Expr a, int64_t b) {
  return thir::binary(thir::BinOp::Div, a, i32(b));
}
inline thir::Expr rem(thir::Expr a, int64_t b) { return sub(a, mul(quot(a, b), b)); }
inline thir::Expr lt(thir::Expr a, thir::Expr b) { return thir::binary(thir::BinOp::Lt, a, b); }
inline thir::Expr eq(thir::Expr a, thir::Expr b) { return thir::binary(thir::BinOp::Eq, a, b); }
/// `for var in range(0, n, 1)` over Int32, with an empty body.
inline thir::ForStmt countingLoop(int var, thir::Expr n) {
  thir::ForStmt loop;
  loop.var = var;
  loop.varType = Type{DType::Int32};
  loop.begin = i32(0);
  loop.end = std::move(n);
  loop.step = i32(1);
  return loop;
}
/// `a && b` where either may be absent (no condition).
inline thir::Expr conj(thir::Expr a, thir::Expr b) {
  if (!a)
    return b;
  if (!b)
    return a;
  return thir::binary(thir::BinOp::And, a, b);
}
inline thir::Expr zeroOf(DType t) {
  return isFloat(t) ? thir::constFloat(0.0, t) : thir::constInt(0, t);
}
/// Whether `r` is the whole of its buffer (every dimension kept, from 0, full extent).
inline bool fullBuffer(const tile::Region &r) { return r.whole(); }

/// The current thread's warp-grid row and column under an mma or wgmma accumulator layout
/// (FragmentLayout::warpRow / warpCol spelled out over threadIdx.x).
struct MmaWarp {
  thir::Expr row, col;
};
MmaWarp mmaWarp(const analysis::FragmentLayout &l, thir::Expr thread);
/// First row of the 16-row tile `mi` of warp row `wm` (FragmentLayout::tileRow).
thir::Expr mmaTileRow(const analysis::FragmentLayout &l, thir::Expr wm, int64_t mi);

/// One chunk of `vector` consecutive elements (along the last dimension) that the current
/// thread holds under a fragment layout.
struct ChunkRef {
  int64_t slot0 = 0;             // the slot of lane 0
  thir::Expr guard;              // null when every thread's chunk exists
  std::vector<thir::Expr> index; // lane 0's element index per dimension (Int32)
  std::vector<Interval> range;   // the values those indices take over all threads
  int64_t rowIter = 0;           // RowGroups / GroupReplicated: the thread's row number ri
};

/// The conjunction of `conds` as a balanced tree (null when empty).
inline thir::Expr balancedAnd(const std::vector<thir::Expr> &conds, size_t lo = 0,
                              size_t hi = SIZE_MAX) {
  hi = std::min(hi, conds.size());
  if (lo >= hi)
    return nullptr;
  if (hi - lo == 1)
    return conds[lo];
  size_t mid = lo + (hi - lo) / 2;
  return thir::binary(thir::BinOp::And, balancedAnd(conds, lo, mid), balancedAnd(conds, mid, hi));
}

/// How a reduction combines elements.
struct ReduceOp {
  thir::BinOp combine;
  double identity;
  bool abs;
};
inline ReduceOp reduceOp(tile::ReduceKind k) {
  const double inf = std::numeric_limits<double>::infinity();
  switch (k) {
  case tile::ReduceKind::Max:
    return {thir::BinOp::Max, -inf, false};
  case tile::ReduceKind::Min:
    return {thir::BinOp::Min, inf, false};
  case tile::ReduceKind::Sum:
    return {thir::BinOp::Add, 0.0, false};
  case tile::ReduceKind::AbsMax:
    return {thir::BinOp::Max, 0.0, true};
  case tile::ReduceKind::AbsSum:
    return {thir::BinOp::Add, 0.0, true};
  }
  return {thir::BinOp::Add, 0.0, false};
}

/// The type a reduction or scan of `t` values accumulates in: float32 for the narrower floats,
/// int32 for the narrower integers (the result wraps as if summed in `t`) and for bools (as 0
/// and 1), else `t`.
inline DType reduceAccumulator(DType t) {
  if (isFloat(t))
    return t == DType::Float64 ? DType::Float64 : DType::Float32;
  return dtypeBits(t) < 32 ? DType::Int32 : t;
}

/// The value a reduction starts from in its accumulator type `acc`: 0, or the type's lowest
/// (highest) value for max (min), -inf (inf) for floats.
inline thir::Expr reduceIdentity(const ReduceOp &op, DType acc) {
  if (isFloat(acc))
    return thir::constFloat(op.identity, acc);
  if (op.identity == 0)
    return thir::constInt(0, acc);
  const bool signedAcc = isSigned(acc);
  // The largest value: all value bits set (bits of the int64 pattern for 64-bit types).
  const uint64_t largest = ~uint64_t{0} >> (64 - dtypeBits(acc) + (signedAcc ? 1 : 0));
  const int64_t highest = static_cast<int64_t>(largest);
  return thir::constInt(op.identity > 0 ? highest : signedAcc ? -highest - 1 : 0, acc);
}

/// Lane `lane` of chunk `c`: the last index moves with the lane.
inline std::vector<thir::Expr> laneIndex(const ChunkRef &c, int64_t lane) {
  std::vector<thir::Expr> idx = c.index;
  if (lane != 0)
    idx.back() = thir::binary(thir::BinOp::Add, idx.back(), i32(lane));
  return idx;
}

/// Row-major indices of the flat index `flat` into `shape` (Int32 expressions).
inline std::vector<thir::Expr> unflatten(thir::Expr flat, const std::vector<int64_t> &shape) {
  std::vector<thir::Expr> idx(shape.size());
  int64_t stride = 1;
  for (int d = static_cast<int>(shape.size()) - 1; d >= 0; --d) {
    thir::Expr q = stride == 1 ? flat : thir::binary(thir::BinOp::FloorDiv, flat, i32(stride));
    idx[d] = d == 0 ? q : thir::binary(thir::BinOp::Mod, q, i32(shape[d]));
    stride *= shape[d];
  }
  return idx;
}

/// The element of a fragment that a Parallel loop body is being lowered for.
struct ElementContext {
  const analysis::FragmentLayout *layout = nullptr;
  std::vector<int> loopVarIds; // the loop's variables, outermost first
  int64_t slot = 0;
  int64_t rowIter = 0;
};

class KernelLowering {
public:
  /// Lowers `k` as `plan` (from the planning passes) decided.
  KernelLowering(const tile::Kernel &k, const KernelPlan &plan, DiagnosticEngine &diags,
                 const Options &opts)
      : fragmentLayouts_(plan.fragments), pipelines_(plan.pipelines), shared_(plan.shared),
        deferredSums_(plan.deferredSums), scoreWarpgroups_(plan.scoreWarpgroups), k_(k),
        diags_(diags), opts_(opts), scratchBase_(plan.scratchBase),
        tileThreads_(plan.tileThreads ? plan.tileThreads : k.threads) {
    out_.dynamicSharedBytes = static_cast<int>(plan.scratchBase);
  }
  std::optional<thir::Kernel> run();

  std::vector<std::pair<SourceLoc, analysis::ParallelLayout>> layouts_;
  const std::map<int, analysis::FragmentLayout> &fragmentLayouts_;

private:
  void unsupported(SourceLoc loc, const std::string &what);

  void bind(const tile::Var &v, thir::Expr e, std::optional<Interval> r = std::nullopt);

  // ---- Expressions ---------------------------------------------------------------------------
  /// Grid extents are evaluated by the host: dims are Int64 parameters there.
  thir::Expr hostExpr(const tile::Expr &e);

  static thir::Expr widen(thir::Expr e, int lanes);

  Interval range(const tile::Expr &e);
  /// Whether `index` is a block index and `extent` the grid's extent along its axis, so that
  /// 0 <= index < extent in every block (a grid of (heads, batch) blocks reads a tensor of
  /// `batch` rows at `bid` without a check).
  bool indexesGridExtent(const tile::Expr &index, const tile::Expr &extent);

  /// What an in-bounds check may assume of an index besides its range.
  enum class IndexFacts {
    Range, ///< only the index's range
    /// also that a block index stays below its grid extent (indexesGridExtent). Element accesses
    /// use it; tile copies keep their checks, which are per tile and cost little, because
    /// dropping them made ptxas schedule attention's copies slower (bf16 D64 causal, 6.4%:
    /// docs/results/attention-ab3-2026-12-04-grid-facts.txt).
    Grid,
  };
  /// In-bounds predicate of a global access; checks that hold for every value are left out.
  /// `extraLast` widens the last dimension's check to a whole vector; `spanLast` narrows its
  /// lower bound instead, to "some of the `spanLast` + 1 elements from the index on is inside"
  /// (with extraLast 0: is any lane of a vector starting there in bounds).
  thir::Expr inBounds(const Access &a, const LaneContext &lc, int extraLast, int spanLast = 0,
                      IndexFacts facts = IndexFacts::Range);
  /// The bytes of the `vector` elements from `a` along its last dimension that lie inside the
  /// tensor (int32, 0 to vector * elemBytes): 0 when an index of another dimension is outside.
  thir::Expr bytesInside(const Access &a, int vector, int elemBytes);

  /// Element offset (Int64) of a global access; with lanes, the offset of lane 0.
  thir::Expr offset(const tile::BufferPtr &buf, const std::vector<tile::Expr> &idx,
                    const LaneContext &lc);

  bool dependsOnLanes(const tile::Expr &e, const LaneContext &lc);

  /// Lowers a value. With lanes > 1 the result is a vector unless the value is the same in
  /// every lane; `scalarIndex` asks for lane 0 of an index instead (the vector path addresses
  /// memory from lane 0).
  thir::Expr lowerExpr(const tile::Expr &e, const LaneContext &lc, bool scalarIndex = false);

  thir::Expr lowerLoad(const tile::Expr &e, const tile::Load &op, const LaneContext &lc);
  /// One element of a global tensor at `indices` (its offset `off`), zero outside the tensor.
  thir::Expr maskedGlobalLoad(const tile::BufferPtr &buf, const std::vector<tile::Expr> &indices,
                              thir::Expr off, const LaneContext &lc);

  void noteAlign(int param, int align);

  // ---- Statements ----------------------------------------------------------------------------
  void lowerBody(const tile::Body &body, thir::Body &out, const LaneContext &lc);

  /// One case per statement kind (a kind without one does not compile).
  void lowerStmt(const tile::Stmt &s, thir::Body &out, const LaneContext &lc);
  void lowerLet(const tile::Let &let, thir::Body &out, const LaneContext &lc);
  void lowerFor(const tile::Stmt &s, const tile::For &f, thir::Body &out, const LaneContext &lc);
  void lowerIf(const tile::Stmt &s, const tile::If &i, thir::Body &out, const LaneContext &lc);

  void lowerStore(const tile::Stmt &s, const tile::Store &st, thir::Body &out,
                  const LaneContext &lc);

  bool dependsOnLanesIndex(const std::vector<tile::Expr> &idx, const LaneContext &lc);

  void lowerSerial(const tile::Stmt &s, const tile::For &f, thir::Body &out, const LaneContext &lc);

  /// Assigns iterations to threads per analysis::planParallelLoop; with a vector width > 1 the
  /// body runs once as vectors when the whole vector is in bounds and aligned, and element by
  /// element (masked) otherwise.
  void lowerParallel(const tile::Stmt &s, const tile::For &f, thir::Body &out);

  void gatherAccesses(const tile::Body &b, std::vector<Access> &out);

  // ---- LowerFragments.cpp --------------------------------------------------------------------
  bool declareFragments(thir::Body &out);
  /// Checks, for every thread, that the slots lowering walks (chunksOf) are the elements the
  /// layout defines (FragmentLayout::elementAt), and that the layout is an ownership map: what
  /// the layout report says is what the code does.
  bool verifyFragmentLowering();
  bool isOnChip(const tile::BufferPtr &b) const;
  thir::Expr slotVar(const tile::BufferPtr &b, int64_t slot);
  /// The flat element index of `indices` into `b`, as a tile expression.
  tile::Expr flatIndex(const tile::BufferPtr &b, const std::vector<tile::Expr> &indices);
  thir::Expr fragmentRead(const tile::Expr &e, const tile::Load &op);
  void fragmentWrite(const tile::Stmt &s, const tile::Store &st, thir::Expr value, thir::Body &out);
  bool lowerFragmentParallel(const tile::Stmt &s, const tile::For &f, thir::Body &out);
  /// LowerUnswitch.cpp: the comparisons of `f`'s body that are affine in its variables and
  /// `guard`, a block-uniform condition under which every one of them holds at every iteration
  /// (none: nothing to unswitch).
  struct UniformConditions {
    thir::Expr guard;
    std::set<const tile::Node *> known;
    std::set<const tile::Node *> inBounds; // global loads inside their tensor on the whole tile
  };
  std::optional<UniformConditions> tileUniformConditions(const tile::For &f);
  /// Comparisons lowering takes as true (the fast copy of an unswitched Parallel loop).
  std::set<const tile::Node *> knownTrue_;
  /// Global loads lowering takes as in bounds (the same copy).
  std::set<const tile::Node *> knownInBounds_;
  void lowerReplicatedParallel(const tile::Stmt &s, const tile::For &f, thir::Body &out);
  // ---- LowerCopy.cpp: copies between global memory, shared memory and fragments ------------
  void lowerCopy(const tile::Stmt &s, const tile::Copy &c, thir::Body &out);
  /// The on-chip end of a copy, walked chunk by chunk under `layout`.
  struct TileEnd {
    const analysis::FragmentLayout *layout;
    DType dtype;
    std::function<thir::Expr(const ChunkRef &, int64_t lane)> read;
    std::function<void(const ChunkRef &, int64_t lane, thir::Expr, thir::Body &)> write;
    /// Whole-chunk access (lanes contiguous), or null when only lane by lane works.
    std::function<thir::Expr(const ChunkRef &)> readVector;
    std::function<void(const ChunkRef &, thir::Expr, thir::Body &)> writeVector;
    /// Shared memory: the byte offset of a chunk (cp.async destinations); null otherwise.
    std::function<thir::Expr(const ChunkRef &)> smemOffset;
  };
  TileEnd fragmentEnd(const tile::BufferPtr &b);
  TileEnd sharedEnd(const tile::BufferPtr &b, const analysis::FragmentLayout &walk);
  /// Copies between a global region and an on-chip tile, with 16-byte accesses when a chunk is
  /// in bounds and aligned, and masked element accesses otherwise. `atomic` (toGlobal only)
  /// updates each global element by that operation atomically instead of storing it.
  void copyGlobal(const tile::Stmt &s, const tile::Region &glob, const TileEnd &chip, bool toGlobal,
                  thir::Body &out, std::optional<AtomicOp> atomic = std::nullopt);
  void lowerAtomic(const tile::Stmt &s, const tile::Atomic &a, thir::Body &out);
  /// A walk of buffer `b`'s elements by the block's threads (Flat, one element a step).
  analysis::FragmentLayout flatWalk(const tile::BufferPtr &b) const;
  /// Which threads write chunk `ch` of a tile in layout `l` to memory they share: its guard, and
  /// of a value several threads hold only one of them (soleWriter).
  thir::Expr soleChunkWriter(const analysis::FragmentLayout &l, const ChunkRef &ch);
  /// atomic_OP(shared buffer, tile): one shared atomic per element of the tile.
  void atomicIntoShared(const tile::Stmt &s, const tile::Atomic &a, thir::Body &out);
  /// Whether `e` differs between the threads of a block outside Parallel loops: it reads
  /// thread_id(), lane_id() or warp_id(), directly or through lets and loop variables bound
  /// from them (threadVarying_).
  bool variesByThread(const tile::Expr &e) const;
  /// For layouts that give an element to several threads: the condition that `tid` is the one
  /// that writes the element at `slot` to memory. Null when every element has one holder.
  thir::Expr soleWriter(const analysis::FragmentLayout &l, int64_t slot, thir::Expr tid);
  /// What makes global region `glob` copyable in whole `vector`-element chunks without a test
  /// per chunk: the tile inside its tensor, and every chunk aligned (the first element and every
  /// row start are). Nullopt when an extent cannot be lowered.
  struct TileChecks {
    std::vector<thir::Expr> inBounds, aligned;
    /// In bounds and aligned.
    thir::Expr both() const {
      std::vector<thir::Expr> all = inBounds;
      all.insert(all.end(), aligned.begin(), aligned.end());
      return balancedAnd(all);
    }
  };
  std::optional<TileChecks> tileChecks(const tile::Region &glob, int vector);
  // ---- LowerFloat8.cpp ---------------------------------------------------------------------
  /// On targets without float8 conversions: reports (at `s`) the first conversion to or from
  /// float8 in `out` from statement `from` on, which codegen could not emit.
  void checkFloat8Conversions(const tile::Stmt &s, const thir::Body &out, size_t from);
  std::unordered_set<const thir::Node *> float8Seen_; // searched already

  // ---- LowerPrint.cpp ----------------------------------------------------------------------
  void lowerPrint(const tile::Stmt &s, const tile::Print &p, thir::Body &out,
                  const LaneContext &lc);
  /// print of a region of a global tensor: by thread 0 of each block, element by element.
  void lowerPrintGlobal(const tile::Region &r, const std::string &prefix,
                        const std::vector<thir::Expr> &head, thir::Body &out);

  // ---- LowerGemm.cpp: shared memory, gemm, block rasterization ---------------------
  using SharedBuffer = SharedPlacement;
  /// Reports a kernel whose shared memory exceeds what the target gives one block.
  bool checkSharedLimit();
  /// Reports a kernel whose fragments need more registers per thread than a thread has.
  bool checkRegisterLimit();
  /// Byte offset (Int32) of element `index` of shared buffer `b`.
  thir::Expr sharedOffset(const tile::BufferPtr &b, const std::vector<thir::Expr> &index);
  /// The bytes shared buffer `b` occupies, every version: what its accesses carry so that
  /// insert-barriers orders them only against accesses of what overlaps it.
  thir::SmemRegion sharedRegion(const tile::BufferPtr &b) const;
  /// Element `idx` of shared buffer `b`: its byte offset, and the condition that it lies in the
  /// buffer (null when the index ranges prove it).
  std::optional<std::pair<thir::Expr, thir::Expr>>
  sharedElement(const tile::BufferPtr &b, const std::vector<tile::Expr> &idx);
  void lowerGemm(const tile::Stmt &s, const tile::Gemm &g, thir::Body &out);
  void lowerGemmWgmma(const tile::Stmt &s, const tile::Gemm &g, thir::Body &out);
  void lowerGemmMfma(const tile::Stmt &s, const tile::Gemm &g, thir::Body &out);
  /// float8 gemm runs on wgmma only (both operands K-major in shared memory, float32
  /// accumulators); reports the first thing it cannot take and returns false.
  bool checkFloat8Gemm(const tile::Stmt &s, const tile::Gemm &g);

  // ---- LowerPipeline.cpp: software pipelining of Pipelined loops ---------------------------
  void lowerPipelined(const tile::Stmt &s, const tile::For &f, thir::Body &out);
  const std::map<const tile::For *, PipelinePlan> &pipelines_;
  std::map<int, thir::Expr> stageOffset_; // shared buffer id -> byte offset of the version in use
  bool asyncCopies_ = false;              // global -> shared copies use cp.async where they can
  /// Whether a serial loop was unrolled for its loads to be in flight together (lowerSerial).
  bool batchedLoads_ = false;
  /// Stores fragment `a` into scratch shared memory with its canonical shared layout and makes
  /// shared_ describe it there, so that a gemm can read it as a shared operand (an A operand
  /// whose register layout does not give each warp the rows it multiplies). Returns false after
  /// reporting a fragment it cannot stage. The caller synchronizes before reading it.
  bool stageOperand(const tile::Stmt &s, const tile::BufferPtr &a, thir::Body &out);
  void lowerUseSwizzle(const tile::UseSwizzle &u, thir::Body &out);
  /// A persistent kernel's current tile: its number in the grid (x fastest) and the grid's
  /// extents, which replace blockIdx and gridDim for the block indices (null: not persistent).
  struct PersistentTile {
    thir::Expr id, gx, gy;
  };
  std::optional<PersistentTile> persistentTile_;
  /// Binds the block indices to tile `t` of a persistent kernel (x fastest, then y, then z).
  void bindPersistentTile(thir::Expr t, thir::Expr gx, thir::Expr gy, thir::Body &out);
  /// Keeps wgmma groups this many deep in flight (a warp-specialized loop's gemm in flight).
  int wgmmaPending_ = 0;
  /// The current thread's index among the threads that run the code being lowered (0 ..
  /// threads - 1), from which layouts place its elements: threadIdx.x unless a
  /// warp-specialized kernel's consumers are numbered otherwise.
  thir::Expr thread() const { return thread_; }
  thir::Expr thread_ = thir::special(thir::Special::ThreadIdxX);
  /// The turn the next gemm's wgmma waits for or passes on (a ping-pong pipeline's consumers).
  thir::Wgmma::Turn turn_;

  // ---- LowerWarpSpecialized.cpp: producer/consumer kernels (sm_90a) --------------------------
  const PipelinePlan *warpSpecializedLoop() const;
  /// Adds a TensorMap parameter per distinct view the plan's copies load, and the TmaEnabled one.
  void addTensorMaps(const PipelinePlan &plan, bool withPrologue);
  void addTensorMap(const tile::Stmt *copy, TmaDims kept);
  /// The whole kernel body around a warp-specialized loop (WarpSpecialized.h).
  class WarpSpecialized;
  void lowerWarpSpecializedKernel(const PipelinePlan &plan, thir::Body &out);
  /// Copies tile `c` (its source region starting at `starts`, Int32 per dimension of the tensor,
  /// the tile's rows and columns in dimensions `dims`) element by element, thread `ptid` of the
  /// producer warpgroup taking every 128th element, zeros outside the tensor.
  void copyElementwise(const tile::Copy &c, TmaDims dims, const std::vector<thir::Expr> &starts,
                       thir::Expr ptid, thir::Body &out);
  /// A barrier among the threads that run the current code: the block, or after warp
  /// specialization the consumers (named barrier 1). Only a protocol's own barriers (a software
  /// pipeline's) come from lowering; insert-barriers adds those that order shared accesses.
  thir::Stmt barrier() const;
  int barrierThreads_ = 0;
  std::map<const tile::Stmt *, int> tensorMapOf_; // a TMA copy -> its TensorMap parameter
  int tmaEnabledParam_ = -1;

public:
  std::map<int, SharedBuffer> shared_;

private:
  void lowerFill(const tile::Stmt &s, const tile::Fill &f, thir::Body &out);
  // ---- LowerReduce.cpp: reductions of fragments along their rows ----------------------------
  void lowerReduce(const tile::Stmt &s, const tile::Reduce &r, thir::Body &out);
  /// Combines each partial (variables of type `acc`, one per row this thread holds of a
  /// reduction's source in layout `ls`; `grouped`: per row group rather than per row) with those
  /// of the other threads that hold the row: across the lanes by shuffles, then across the warps
  /// through shared scratch. Every holder of a row ends with the row's result.
  void reduceAcrossThreads(const analysis::FragmentLayout &ls, bool grouped, const ReduceOp &op,
                           DType acc, const std::vector<int> &partial, thir::Body &out);
  /// defer-row-sums: whether `s` is a reduction whose cross-thread part waits for the end of
  /// its loop, and, after loop `s`, the sums of the accumulators' copies it defers.
  bool isDeferredSum(const tile::Stmt &s) const;
  void finishDeferredSums(const tile::Stmt &loop, thir::Body &out);
  const std::vector<DeferredSum> &deferredSums_;
  const std::vector<ScoreWarpgroup> &scoreWarpgroups_;
  // ---- LowerScan.cpp: tile operations done through shared memory ----------------------------
  void lowerCumsum(const tile::Stmt &s, const tile::Cumsum &c, thir::Body &out);
  /// Reductions the register paths do not cover (any rank and dimension, shared buffers): the
  /// source in shared memory, each thread reducing whole lines serially.
  void lowerReduceThroughShared(const tile::Stmt &s, const tile::Reduce &r, thir::Body &out);
  /// Where the fragment operands of a tile operation through shared memory live in scratch.
  struct Scratch {
    int64_t src = 0, dst = 0;
  };
  /// Starts an operation `what` from `src` into `dst`, which must be whole shared buffers or
  /// fragments (else reported): reserves scratch for the fragment sides, both in one array when
  /// `inPlace`, and stages a fragment source there.
  std::optional<Scratch> stageThroughShared(const tile::Stmt &s, const tile::Region &src,
                                            const tile::Region &dst, const char *what, DType acc,
                                            bool inPlace, thir::Body &out);
  /// Ends it: loads a fragment destination from its scratch (with `combine`, combined into its
  /// values).
  void unstageThroughShared(const tile::BufferPtr &dst, int64_t dstScratch, DType acc,
                            std::optional<thir::BinOp> combine, thir::Body &out);
  /// Where element `idx` of on-chip buffer `b` lives in shared memory: its own place for a
  /// shared buffer, a row-major scratch array of `scratchType` at `scratch` for a fragment.
  thir::Expr tileLocation(const tile::BufferPtr &b, const std::vector<thir::Expr> &idx,
                          int64_t scratch, DType scratchType);
  /// Stores the slots of fragment `b` into the row-major scratch array at `scratch`.
  void fragmentToScratch(const tile::BufferPtr &b, int64_t scratch, DType scratchType,
                         thir::Body &out);
  /// Loads the slots of fragment `b` from the row-major scratch array at `scratch`; with
  /// `combine`, combines them into the slots' values instead.
  void fragmentFromScratch(const tile::BufferPtr &b, int64_t scratch, DType scratchType,
                           std::optional<thir::BinOp> combine, thir::Body &out);
  /// The chunks the current thread holds under `l`, in slot order.
  std::vector<ChunkRef> chunksOf(const analysis::FragmentLayout &l);
  /// Binds `vars` to lane `lane` of chunk `c` (the last index moves with the lane).
  void bindChunk(const std::vector<tile::VarPtr> &vars, const ChunkRef &c, int64_t lane);
  /// Whether `indices` are exactly the current element's loop variables, in order.
  bool isOwnElement(const std::vector<tile::Expr> &indices) const;
  /// The slot of `buf` for the current element when `buf` holds it locally, or -1.
  int64_t ownSlot(const tile::BufferPtr &buf, const std::vector<tile::Expr> &indices) const;

  const tile::Kernel &k_;
  DiagnosticEngine &diags_;
  const Options &opts_;
  thir::Kernel out_;
  bool failed_ = false;
  bool inParallel_ = false;
  /// Thread-level code outside Parallel loops: the ids of lets and loop variables whose values
  /// differ between threads, and how many enclosing ifs and loops branch on such values (an
  /// element atomic there runs in every thread that reaches it, not once per block).
  std::set<int> threadVarying_;
  int threadBranches_ = 0;
  int nextVar_ = 0;
  std::map<int, Binding> bindings_;
  std::map<int, int> dimParams_;
  std::map<int, std::pair<int, Type>> letVars_;
  std::set<int> declaredHere_;
  std::set<int> vectorLets_;
  std::map<int, int> varBuffers_;
  std::map<int, int> paramAlign_;
  std::map<int, std::vector<int>> slotVars_; // fragment/local buffer id -> per-slot variables
  std::optional<ElementContext> element_;
  /// Dynamic shared memory: alloc_shared buffers from 0 (byte offsets by buffer id), then the
  /// scratch that cross-warp reductions use, from scratchBase_.
  std::map<int, int64_t> sharedOffsets_;
  int64_t scratchBase_ = 0;
  /// The threads that compute one tile (KernelPlan::tileThreads): every layout is over them.
  int64_t tileThreads_;
  /// Global loads of a fragment loop's body read as one vector per chunk: tile node -> the
  /// vector variable; lane `currentLane_` of it is the element's value.
  std::map<const tile::Node *, std::pair<int, Type>> chunkLoads_;
  int64_t currentLane_ = 0;
  /// Emits, for chunk `c`, one vector load per global read of `body` that moves with the last
  /// loop variable and is aligned for the whole chunk: unconditional where the chunk is provably
  /// in bounds, else behind a run-time check with masked loads of each element as the fallback.
  struct ChunkLoadCache {
    std::set<int> written; // buffers the loop stores to: their loads are never shared
    std::map<std::pair<const tile::Node *, std::string>, std::pair<int, Type>> loads;
  };
  void preloadChunk(const tile::For &f, const ChunkRef &c, int vector, thir::Body &out,
                    ChunkLoadCache *cache);
};

} // namespace tilec::lower::detail
