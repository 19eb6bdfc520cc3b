// Tile IR: a kernel as buffers with scopes and tile operations on them. Sema builds it from the
// AST with every name resolved, every constant folded, every macro inlined and every type known;
// analysis decides layouts on it; lowering turns it into thread IR.
#pragma once

#include "support/AtomicOp.h"
#include "support/DType.h"
#include "support/Diagnostics.h"

#include <cstdint>
#include <memory>
#include <optional>
#include <string>
#include <variant>
#include <vector>

namespace tilec::tile {

enum class Scope { Global, Shared, Fragment, Local, Var };
const char *scopeName(Scope s);

struct Node;
/// Scalar expressions are immutable trees shared between statements.
using Expr = std::shared_ptr<const Node>;

/// A named scalar: a grid index, a loop variable, a per-thread value bound by `x = ...`, a
/// scalar kernel parameter, a symbolic dimension or one of the thread's own indices.
enum class VarKind { BlockIndex, LoopVar, Let, ScalarParam, Dim, ThreadIndex };
/// VarKind::ThreadIndex vars, by Var::index: thread_id() (get_thread_binding()), lane_id(),
/// warp_id().
enum class ThreadIndexKind { Thread, Lane, Warp };
struct Var {
  int id;
  std::string name;
  DType dtype;
  VarKind kind;
  SourceLoc loc;
  int index = 0; // BlockIndex: grid axis; ScalarParam/Dim: position among the kernel's params/dims;
                 // ThreadIndex: a ThreadIndexKind
};
using VarPtr = std::shared_ptr<const Var>;

struct Buffer {
  int id;
  std::string name;
  Scope scope;
  std::vector<Expr> shape; // Int32 expressions; constants except for global tensors' symbolic dims
  DType dtype;
  SourceLoc loc;
  int paramIndex = -1; // global tensors: position among the kernel's parameters
  Expr initValue;      // alloc_var's initial value, or null
};
using BufferPtr = std::shared_ptr<const Buffer>;

enum class UnOp {
  Neg,
  Not,
  Abs,
  Exp,
  Exp2,
  Log,
  Log2,
  Sqrt,
  Rsqrt,
  Tanh,
  Erf,
  Sigmoid,
  Floor,
  Ceil,
  BitNot // ~x on integers
};
enum class BinOp {
  Add,
  Sub,
  Mul,
  Div,
  FloorDiv,
  Mod,
  Pow,
  Min,
  Max,
  Eq,
  Ne,
  Lt,
  Le,
  Gt,
  Ge,
  And,
  Or,
  // On integers, with C's semantics for the fixed-width dtype: >> is arithmetic on signed
  // types and logical on unsigned ones; a shift count outside 0..width-1 is undefined.
  BitAnd,
  BitXor,
  Shl,
  Shr,
  BitOr,
};
const char *unOpName(UnOp op);
const char *binOpName(BinOp op);

struct IntImm {
  int64_t value;
};
struct FloatImm {
  double value;
};
struct VarRef {
  VarPtr var;
};
struct Load {
  BufferPtr buffer;
  std::vector<Expr> indices;
};
struct Unary {
  UnOp op;
  Expr a;
};
struct Binary {
  BinOp op;
  Expr a, b;
};
struct Select {
  Expr cond, a, b;
};
struct Cast {
  Expr a;
  /// reinterpret(x, dtype): the same bits as the node's dtype (equal widths), not a conversion.
  bool reinterpret = false;
};

enum class ShuffleKind { Xor, Down, Up, Idx };
/// shfl_xor / shfl_down / shfl_up / shfl_idx: `value` as held by the lane of this thread's warp
/// that `arg` names (this lane xor arg, lane + arg, lane - arg, lane arg); every lane of the warp
/// takes part. 32-bit values.
struct Shuffle {
  ShuffleKind kind;
  Expr value, arg;
};

struct Node {
  DType dtype;
  SourceLoc loc;
  std::variant<IntImm, FloatImm, VarRef, Load, Unary, Binary, Select, Cast, Shuffle> op;
};

/// One dimension of a region: `begin` and `extent`; `dropped` dims were selected by an integer
/// index inside a sliced region and do not count towards the region's rank.
struct RegionDim {
  Expr begin;
  Expr extent;
  bool dropped = false;
};
struct Region {
  BufferPtr buffer;
  std::vector<RegionDim> dims;
  SourceLoc loc;
  /// The shape of the region after dropped dimensions are removed.
  std::vector<Expr> shape() const;
  /// Whether the region is all of its buffer (constant zero starts, full extents, none dropped).
  bool whole() const;
};

/// All of `b` (zero starts, full extents).
Region wholeRegion(const BufferPtr &b, SourceLoc loc = {});

struct Stmt;
using Body = std::vector<Stmt>;

/// Binds (first time: declares) a per-thread scalar.
struct Let {
  VarPtr var;
  Expr value;
};
struct Store {
  BufferPtr buffer;
  std::vector<Expr> indices;
  Expr value;
};
struct Copy {
  Region src, dst;
};
struct Fill {
  Region dst;
  Expr value;
};
enum class GemmPolicy { Square, FullRow, FullCol };
struct Gemm {
  Region a, b, c;
  bool transA = false, transB = false, clearAccum = false;
  GemmPolicy policy = GemmPolicy::Square;
};
enum class ReduceKind { Max, Sum, Min, AbsMax, AbsSum };
struct Reduce {
  ReduceKind kind;
  Region src, dst;
  int dim;
  bool clear;
};
struct Cumsum {
  Region src, dst;
  int dim;
  bool reverse;
};
/// atomic_add, atomic_...: `dst op= value` element by element, atomically.
struct Atomic {
  AtomicOp op = AtomicOp::Add;
  Region dst;
  Expr value;                // scalar value (element form) ...
  std::optional<Region> src; // ... or a whole region added elementwise
  std::vector<Expr> indices; // element form: dst element
};
enum class LoopKind { Parallel, Serial, Unroll, Pipelined };
struct For {
  LoopKind kind;
  std::vector<VarPtr> vars;          // several only for Parallel
  std::vector<Expr> begins;          // per var
  std::vector<Expr> extents;         // per var: number of iterations
  Expr step;                         // Serial only (may be negative); null means 1
  int numStages = 1;                 // Pipelined
  std::vector<int64_t> order, stage; // Pipelined manual schedule, empty when absent
  Body body;
};
struct If {
  Expr cond;
  Body then, otherwise;
};
struct UseSwizzle {
  int64_t panelSize;
  bool colOrder;
  /// use_swizzle(..., enable=False): keep the launch order (and no default rasterization).
  bool enabled = true;
};
struct AnnotateLayout {
  BufferPtr buffer;
  std::string layout; // "swizzled"
};
struct Print {
  std::optional<Region> buffer;
  Expr value;
  std::string message;
};

/// sync_threads(): a barrier of the threads that run this code (the block; the consumers of a
/// warp-specialized kernel).
struct SyncThreads {};

struct Stmt {
  SourceLoc loc;
  std::variant<Let, Store, Copy, Fill, Gemm, Reduce, Cumsum, Atomic, For, If, UseSwizzle,
               AnnotateLayout, Print, SyncThreads>
      op;
};

enum class ParamKind { Tensor, Scalar };
struct Param {
  ParamKind kind;
  BufferPtr tensor; // Tensor
  VarPtr scalar;    // Scalar
};

/// @tune(space="...", shapes="..."): what `tilec tune` searches when its command line names no
/// space or shapes, as written (the tuner parses it; docs/bench.md).
struct TuneDecl {
  std::string space, shapes;
  SourceLoc spaceLoc, shapesLoc;
};

struct Kernel {
  std::string name;    // exported symbol
  std::string defName; // name of the def in the source
  SourceLoc loc;
  std::vector<Param> params;
  std::vector<VarPtr> dims; // symbolic dimensions in order of first appearance
  std::vector<Expr> grid;   // 1 to 3 grid extents (Int32 expressions over dims and constants)
  std::vector<VarPtr> blockIndices;
  std::vector<VarPtr> threadIndices; // the ThreadIndex vars the body uses
  int64_t threads = 128;
  SourceLoc kernelLoc;            // the `with Kernel(...)`
  std::vector<BufferPtr> buffers; // every allocation, in program order
  Body body;
  std::optional<TuneDecl> tune;
};

struct Program {
  std::string stem;
  std::vector<Kernel> kernels;
  /// The -D names that matched no constant or symbolic dimension (sema warns about each).
  std::vector<std::string> unusedDefines;
};

// ---- Builders --------------------------------------------------------------------------------
Expr intImm(int64_t v, DType t = DType::Int32, SourceLoc loc = {});
Expr floatImm(double v, DType t = DType::Float32, SourceLoc loc = {});
Expr varRef(VarPtr v, SourceLoc loc = {});
/// Integer value of an expression made of immediates only (after folding), if it is one.
std::optional<int64_t> asConstInt(const Expr &e);
/// Whether a tensor dimension is computed from others (`K // 2`): neither a constant nor a
/// symbolic name. The launch computes it from the dimensions passed and checks its range.
bool isComputedDim(const Expr &dim);

/// Human-readable dump for `--dump-after=tile-ir` and lit tests.
std::string print(const Program &p);
std::string print(const Expr &e);
/// print(e) without the parentheses around the whole expression, for messages: `K // 2`.
std::string printBare(const Expr &e);

} // namespace tilec::tile
