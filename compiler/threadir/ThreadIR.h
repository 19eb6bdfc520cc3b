// Thread IR: what one GPU thread executes. Explicit thread/block indices, explicit vector
// widths, explicit predicates. Lowering produces it from tile IR; codegen turns it into LLVM IR.
//
// Values are immutable expression trees (shared, so lowering may reuse a subtree); mutable
// per-thread state lives in numbered variables (`Var`), which codegen turns into allocas that
// LLVM's mem2reg promotes to registers.
#pragma once

#include "support/AtomicOp.h"
#include "support/DType.h"

#include <array>
#include <cstdint>
#include <memory>
#include <optional>
#include <string>
#include <type_traits>
#include <variant>
#include <vector>

namespace tilec::thir {

/// A scalar or a short vector (lanes > 1) of one element type.
struct Type {
  DType elem = DType::Int32;
  int lanes = 1;
  friend bool operator==(const Type &, const Type &) = default;
};

struct Node;
using Expr = std::shared_ptr<const Node>;

enum class Special { ThreadIdxX, BlockIdxX, BlockIdxY, BlockIdxZ, GridDimX, GridDimY, GridDimZ };

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
  BitNot // on integers
};
enum class BinOp {
  Add,
  Sub,
  Mul,
  Div, // Div on integers is C division (sema only allows it where operands are >= 0)
  FloorDiv,
  Mod, // floored, as in Python
  Pow,
  Min,
  Max,
  Eq,
  Ne,
  Lt,
  Le,
  Gt,
  Ge, // result type Bool
  And,
  Or, // on Bool
  BitAnd,
  BitXor,
  Shl,
  Shr, // on integers (Shr is arithmetic for signed types)
  BitOr,
};

struct ConstInt {
  int64_t value;
};
struct ConstFloat {
  double value;
};
/// A value of its type that no one reads: what a cleared wgmma accumulator holds before the
/// wgmma (fold-accumulator-clears assigns it so that the variable's old value dies there).
struct Undef {};
/// Kernel parameter by position in Kernel::params (scalar parameters and symbolic dimensions).
struct ParamRef {
  int index;
};
struct SpecialReg {
  Special reg;
};
struct VarRef {
  int id;
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
/// Conversion to Node::type (int<->float, widening, narrowing, float16/bfloat16 rounding).
struct Cast {
  Expr a;
};
/// Splats a scalar to Node::type.lanes lanes.
struct Broadcast {
  Expr a;
};
/// Reads Node::type (a vector when lanes > 1) from global tensor parameter `param` at element
/// offset `index` (Int64). `alignBytes` is what the access may assume.
struct GlobalLoad {
  int param;
  Expr index;
  int alignBytes;
};

/// Lane `lane` of a vector.
struct ExtractLane {
  Expr vec;
  int lane;
};
/// A vector of Node::type.lanes scalars of one type.
struct MakeVector {
  std::vector<Expr> elems;
};
/// `shfl.sync.bfly` over the full warp (ds_bpermute over the wavefront on AMD): the value of
/// lane (laneid ^ laneMask), laneMask in 0..63; a lane outside the warp gives the thread its
/// own value. 32- and 64-bit scalars.
struct ShflXor {
  Expr value;
  int laneMask;
};
enum class ShflMode { Xor, Down, Up, Idx };
/// `shfl.sync.{bfly,down,up,idx}` over the full warp with a run-time lane argument `arg` (Int32):
/// the value of lane laneid ^ arg, laneid + arg, laneid - arg or arg (a lane out of the warp
/// gives the thread its own value). 32-bit scalars.
struct Shfl {
  ShflMode mode;
  Expr value, arg;
};
/// The bytes [begin, end) of dynamic shared memory an access stays within (its buffer, every
/// version), where lowering knows them: the synchronization passes order only accesses whose
/// regions overlap. An access without one may touch any byte.
struct SmemRegion {
  int64_t begin = 0, end = 0;
  friend bool operator==(const SmemRegion &, const SmemRegion &) = default;
};
/// Reads Node::type (scalar or vector, naturally aligned up to 16 bytes) from the kernel's
/// dynamic shared memory at `byteOffset` (Int32).
struct SharedLoad {
  Expr byteOffset;
  std::optional<SmemRegion> region;
};
/// `ldmatrix.sync.aligned.m8n8.x{num}[.trans].shared.b16`: each lane passes the byte offset of
/// one 16-byte row; the result is `num` b32 registers (Node::type = Int32 x num).
struct LdMatrix {
  Expr byteOffset;
  int num;
  bool trans;
  std::optional<SmemRegion> region;
};
/// `mma.sync.aligned.m16n8k16.row.col.f32.{f16|bf16}`: a = Int32x4, b = Int32x2, c = Float32x4;
/// the result is D = A*B + C (Float32x4).
struct MmaSync {
  Expr a, b, c;
  DType inputType;
};
/// `v_mfma_f32_{m}x{n}x{k}_{f16|bf16}` of one 64-lane wavefront (AMD; the shapes of
/// TargetInfo::mfmaShapes): a and b are the lane's four 16-bit inputs (inputType x 4), c its
/// accumulator items (Float32 x m*n/64), in the layouts of analysis/MfmaLayout.h; the result is
/// D = A*B + C (c's type).
struct Mfma {
  Expr a, b, c;
  int m = 32, n = 32, k = 8;
  DType inputType = DType::Float16;
};
/// Reinterprets the bits of `a` as Node::type (same total width).
struct Bitcast {
  Expr a;
};
/// The 32-bit shared-window address (what wgmma descriptors and mbarriers take) of byte
/// `byteOffset` (Int32) of the kernel's dynamic shared memory. Node::type = Int32.
struct SharedAddress {
  Expr byteOffset;
};
/// One instruction of a Wgmma group: A from a shared-memory descriptor (Int64) or from four
/// registers (Int32x4), B from a descriptor, accumulating into the group's accumulator lanes
/// [accFirst, accFirst + n / 2).
struct WgmmaInstr {
  Expr a, bDesc;
  int accFirst = 0;
};
/// `wgmma.fence; wgmma.mma_async.m64n{n}k{k} x instrs; wgmma.commit_group; wgmma.wait_group 0`
/// of one warpgroup, as one unit: the accumulators (`acc`, Float32 x lanes) are read and written
/// only by it, so no code can touch them while the instructions are in flight. D = A*B + D for
/// every instruction (accumulators are cleared by ordinary code). Node::type = acc's type.
struct Wgmma {
  Expr acc;
  /// A Bool: where it is true, the accumulators are cleared rather than read (wgmma's scale-d
  /// is 0 in the first instruction writing each lane), so `acc` may hold anything there; where
  /// it is false or absent, D = A*B + acc. The instructions then write every lane.
  Expr clearAcc;
  std::vector<WgmmaInstr> instrs;
  int n = 8;
  DType inputType = DType::Float16;
  bool aInRegisters = false;
  // The operand in shared memory is MN-major (M or N contiguous): wgmma's imm-trans bit. A
  // stored M x K and B stored N x K are K-major, wgmma's untransposed forms.
  bool aMnMajor = false, bMnMajor = false;
  /// `wgmma.wait_group pending` after the commit. With pending > 0 the groups committed last
  /// may still be writing the accumulators when the result is produced: nothing may read it
  /// before a WgmmaWait that covers them.
  int pending = 0;
  /// The kernel's first two warpgroups take turns issuing (ping-pong, see WarpgroupTurn):
  /// warpgroup w (threadIdx.x / 128 % 2) waits for its turn before the fence (`bar.sync
  /// barrier + w, 256`) and hands it to the other after the commit (`bar.arrive barrier + 1 -
  /// w, 256`); a turn may span several wgmma (the first waits, the last passes).
  struct Turn {
    int barrier = -1; // none
    bool wait = false, pass = false;
    friend bool operator==(const Turn &, const Turn &) = default;
  } turn;
  // B's type where it differs from A's (`inputType`): float8 wgmma may mix e4m3 and e5m2.
  std::optional<DType> bInputType;
  DType bType() const { return bInputType.value_or(inputType); }
  /// The shared bytes its descriptors read (A's and B's buffers, every version of them), for
  /// insert-barriers; none listed: every byte.
  std::vector<SmemRegion> reads;
  /// A Bool, the same in every thread of a warpgroup: where false, the warpgroup branches over
  /// the group (fence to wait), and the accumulators keep their values, or are undefined where
  /// `clearAcc` holds. Not with a turn. Lowering sets it where a warpgroup's rows
  /// of the result are never read (a K split between warpgroups: each uses one gemm's rows).
  Expr active;
  /// The k of one instruction: 32 for float8 inputs (which are K-major only), 16 for 16-bit.
  int k() const { return dtypeBits(inputType) == 8 ? 32 : 16; }
};

struct Node {
  Type type;
  std::variant<ConstInt, ConstFloat, Undef, ParamRef, SpecialReg, VarRef, Unary, Binary, Select,
               Cast, Broadcast, GlobalLoad, ExtractLane, MakeVector, ShflXor, SharedLoad, LdMatrix,
               MmaSync, Bitcast, SharedAddress, Wgmma, Shfl, Mfma>
      op;
};

struct Stmt;
using Body = std::vector<Stmt>;

/// Declares variable `id` of `type` with an initial value.
struct DeclVar {
  int id;
  Type type;
  Expr init;
};
struct AssignVar {
  int id;
  Expr value;
};
/// Writes `value` (scalar or vector) to global tensor parameter `param` at element offset `index`.
struct GlobalStore {
  int param;
  Expr index;
  Expr value;
  int alignBytes;
};
/// Updates element `index` of global tensor parameter `param` with `value` (scalar) by `op`
/// atomically (relaxed, device scope): `x = x + value` for AtomicOp::Add.
struct GlobalAtomic {
  int param;
  Expr index;
  Expr value;
  AtomicOp op = AtomicOp::Add;
};
/// An atomic read-modify-write of dynamic shared memory at `byteOffset` (Int32) with `value`
/// (whose type is the element's): `atom.shared.{add,max,min}`. Atomics of other threads are not
/// ordered against it; plain reads and writes of its region are.
struct SharedAtomic {
  Expr byteOffset;
  Expr value;
  AtomicOp op = AtomicOp::Add;
  std::optional<SmemRegion> region;
};
/// `cp.async.cg.shared.global [smem], [global], 16`: starts copying 16 bytes of global tensor
/// `param` from element `index` (16-byte aligned) to dynamic shared memory at `byteOffset`
/// (16-byte aligned) without going through registers; complete after a CpAsyncWait covering the
/// commit group it belongs to. With `srcBytes` (int32, 0 to 16) only that many bytes are read
/// and the rest of the 16 are zero-filled (`cp.async ..., 16, src-size`): a chunk at a tensor's
/// ragged edge, or wholly outside it (0 bytes read: `index` need not be inside then).
struct CpAsync {
  int param;
  Expr index;
  Expr byteOffset;
  Expr srcBytes = nullptr;
};
/// `cp.async.commit_group` / `cp.async.wait_group pending`: close the thread's open copies into
/// a group; wait until at most `pending` most recent groups are incomplete.
struct CpAsyncCommit {};
struct CpAsyncWait {
  int pending = 0;
};
/// Device printf (vprintf): `format` with printf conversions for `args` (scalars; floats are
/// passed as double, integers of up to 32 bits as int, 64-bit ones as long long).
struct Printf {
  std::string format;
  std::vector<Expr> args;
};
/// Threads that run a branch as whole warps and synchronize among themselves with named barrier
/// `barrier` of `threads` threads (warp specialization's consumers): insert-barriers orders the
/// branch's shared-memory accesses with it, and the verifier allows no other barrier there.
struct SyncGroup {
  int barrier = 1;
  int threads = 0;
  friend bool operator==(const SyncGroup &, const SyncGroup &) = default;
};
struct IfStmt {
  Expr cond;
  Body then;
  Body otherwise;
  std::optional<SyncGroup> thenGroup = std::nullopt, elseGroup = std::nullopt;
};
/// for (var = begin; var < end; var += step); var is an Int32 or Int64 variable declared here.
struct ForStmt {
  int var;
  Type varType;
  Expr begin, end, step;
  Body body;
  bool unroll = false;
  /// > 1: unrolled by this many iterations (LLVM's llvm.loop.unroll.count), so that the loads
  /// of several iterations are in flight at once; `unroll` unrolls fully instead.
  int unrollCount = 0;
};
/// `bar.sync id, threads`: waits until `threads` threads (a multiple of the warp size) arrived
/// at barrier `id`; threads == 0 means the whole block (`bar.sync 0`).
struct Barrier {
  int id = 0;
  int threads = 0;
};
/// `mbarrier.init.shared::cta.b64`: the mbarrier (8 bytes, 8-aligned) at `byteOffset` (Int32)
/// of dynamic shared memory starts phase 0, expecting `count` (Int32) arrivals per phase.
struct MbarrierInit {
  Expr byteOffset;
  Expr count;
};
/// One arrival on the mbarrier at `byteOffset` (release, CTA scope); with `txBytes` (Int32),
/// `mbarrier.arrive.expect_tx`: the phase also waits for that many bytes of async copies.
struct MbarrierArrive {
  Expr byteOffset;
  Expr txBytes; // null: a plain arrival
};
/// Spins on `mbarrier.try_wait.parity` until the phase of parity `parity` (Int32, 0 or 1) of the
/// mbarrier at `byteOffset` has completed (acquire, CTA scope).
struct MbarrierWait {
  Expr byteOffset;
  Expr parity;
};
/// `fence.mbarrier_init.release.cluster`: orders earlier mbarrier.init before later uses by other
/// threads (and the async proxy) once a barrier follows.
struct FenceMbarrierInit {};
/// `cp.async.bulk.tensor.{N}d` (TMA): copies the box at `coords` (Int32, innermost first) of the
/// tensor that TensorMap parameter `map` describes into dynamic shared memory at `byteOffset`
/// (laid out and swizzled as the map says), completing `box bytes` of transactions on the
/// mbarrier at `barOffset`. Out-of-bounds elements are written as zero.
struct TmaLoad {
  int map;
  std::vector<Expr> coords;
  Expr byteOffset;
  Expr barOffset;
};
/// `setmaxnreg.{inc|dec}.sync.aligned.u32 regs`, executed by every thread of a warpgroup.
struct SetMaxNReg {
  bool increase;
  int regs;
};
/// `wgmma.wait_group pending`; the Float32 variables `vars` (accumulators of the groups it
/// waits for) are tied to it, so no read of them moves above it.
struct WgmmaWait {
  int pending = 0;
  std::vector<int> vars;
};
/// The turn of the ping-pong that wgmma's `turnBarrier` runs, outside a wgmma: `pass` hands it
/// to the other warpgroup (`bar.arrive barrier + 1 - w, 256` in warpgroup w), otherwise this
/// warpgroup waits for it (`bar.sync barrier + w, 256`). The second warpgroup passes once
/// before the first wgmma, so that the first starts; the first waits once after the last, so
/// that no arrival is left over. It orders the issue of work only: the analyses of shared
/// memory do not count it as a barrier.
struct WarpgroupTurn {
  int barrier = 2;
  bool pass = false;
};
/// `fence.proxy.async.shared::cta`: makes this thread's earlier generic-proxy shared-memory
/// writes visible to async-proxy readers (wgmma, TMA) once a barrier follows.
struct FenceProxyAsync {};
/// `fence.acq_rel.cta`: this thread's earlier memory accesses before its later ones, as seen by
/// the CTA. Lowering places one where ptxas must not move the work above it below what follows:
/// ptxas keeps a warp's shuffles and their inputs above it.
struct FenceCta {};
/// Writes a scalar or vector (naturally aligned up to 16 bytes) to the kernel's dynamic shared
/// memory at `byteOffset` (Int32). `ahead`: a software pipeline's store into a buffer version no
/// thread reads until the pipeline's own synchronization (its wait and barrier, or an mbarrier)
/// says so; insert-barriers leaves such stores to that protocol, as it does cp.async and TMA.
struct SharedStore {
  Expr byteOffset;
  Expr value;
  bool ahead = false;
  std::optional<SmemRegion> region;
};

struct Stmt {
  std::variant<DeclVar, AssignVar, GlobalStore, IfStmt, ForStmt, Barrier, SharedStore,
               FenceProxyAsync, FenceCta, GlobalAtomic, SharedAtomic, Printf, CpAsync,
               CpAsyncCommit, CpAsyncWait, MbarrierInit, MbarrierArrive, MbarrierWait,
               FenceMbarrierInit, TmaLoad, SetMaxNReg, WgmmaWait, WarpgroupTurn>
      op;
};

/// TensorMap: a 128-byte `CUtensorMap` passed by value (`__grid_constant__`), which the launch
/// function encodes from Tensor parameter `tensor` (cuTensorMapEncodeTiled) before each launch.
/// TmaEnabled: an Int32 the launch function sets to 1 when it could encode every TensorMap of
/// the launch and to 0 when not (a row stride that is not a multiple of 16 bytes); the kernel
/// then copies without TMA.
enum class ParamKind { Tensor, Scalar, Dim, TensorMap, TmaEnabled };

/// What a TensorMap parameter describes: a tiled view of a tensor, innermost dimension first.
struct TensorMapInfo {
  int tensor = -1;           // the Tensor parameter's index
  std::vector<Expr> dims;    // global extents (host-evaluable Int64, as grid expressions)
  std::vector<Expr> strides; // byte strides of dimensions 1.. (host-evaluable Int64)
  std::vector<int> box;      // box extents in elements
  int swizzleBytes = 0;      // 0 (none), 32, 64 or 128
};

struct Param {
  std::string name;
  ParamKind kind;
  DType dtype;         // element type of a Tensor or TensorMap, type of a Scalar; Int64 for a Dim
  int alignBytes = 16; // Tensor: alignment the kernel assumes of the pointer (launch checks it)
  TensorMapInfo map;   // TensorMap only
};

/// A tensor dimension computed from the symbolic dimensions (`K // 2`): the launch checks that it
/// is in 1 .. 2^31-1, as it checks the dimensions the caller passes.
struct DimCheck {
  Expr value;       // host-evaluable, Int64, as a grid expression
  std::string what; // how the launch names it in an error: "B's dimension 1 (K // 2)"
};

struct Kernel {
  std::string name; // exported symbol
  std::vector<Param> params;
  int threads = 128; // block size (1-D)
  Body body;
  /// Launch grid as host-evaluable Int64 expressions over ParamRefs of Dim and integer Scalar
  /// parameters and constants (ops: + - * // % / min max select, integer casts); a null entry
  /// means 1. The generated header evaluates them before each launch.
  std::array<Expr, 3> grid;
  /// Dynamic shared memory per block, bytes; above 48 KB the header raises the function's limit.
  int dynamicSharedBytes = 0;
  /// Blocks that must fit on one SM together (launch bounds `.minnctapersm`); 0 leaves it to
  /// ptxas. With setmaxnreg it fixes the registers a thread holds at entry.
  int minBlocksPerSM = 0;
  /// Persistent kernels walk their grid themselves (a block's tiles are blockIdx.x, + gridDim.x,
  /// ... of the grid's blocks in x-major order): the launch runs min(the grid's blocks, SMs x
  /// this) blocks along x. 0: one block per grid block.
  int persistentBlocksPerSM = 0;
  /// A persistent kernel whose tiles differ in work along x (a loop bounded by the x block
  /// index, as causal attention's): its launch runs the largest block count up to that limit
  /// that is coprime with the grid's x extent (persistentLaunchBlocks).
  bool persistentBalanceX = false;
  std::vector<DimCheck> dimChecks;
};

/// The blocks a persistent kernel is launched on: min(`blocks`, `resident`), and with
/// `balanceX`, the largest count up to that which is coprime with `gridX`. Block b walks the
/// tiles b, b + G, b + 2G, ... whose x is (b + kG) mod gridX: with G and gridX sharing a factor
/// d, each block meets only the x of one residue class mod d (132 blocks over 32 row blocks:
/// the class of x = 3, 7, ..., 31 carries 9% more of causal attention's work than the average).
/// The runtime header (tilec/runtime.h) makes the same choice.
int64_t persistentLaunchBlocks(int64_t blocks, int64_t resident, int64_t gridX, bool balanceX);

struct Module {
  std::string name;
  std::vector<Kernel> kernels;
};

// ---- Builders: keep lowering code short and types explicit. ------------------------------
Expr constInt(int64_t v, DType t = DType::Int64);
Expr constFloat(double v, DType t = DType::Float32);
Expr undef(Type t);
Expr param(int index, DType t);
Expr special(Special s); // Int32
Expr var(int id, Type t);
Expr unary(UnOp op, Expr a);           // type of a
Expr binary(BinOp op, Expr a, Expr b); // a and b must have equal types; comparisons give Bool
Expr select(Expr c, Expr a, Expr b);
Expr cast(Expr a, Type t); // returns a when already of type t
Expr broadcast(Expr a, int lanes);
Expr globalLoad(int param, Expr index, Type t, int alignBytes);
Expr extractLane(Expr vec, int lane);
Expr makeVector(std::vector<Expr> elems);       // all of one scalar type
Expr shflXor(Expr value, int laneMask);         // 32-bit scalar
Expr shfl(ShflMode mode, Expr value, Expr arg); // 32-bit scalar value, Int32 arg
/// "xor", "down", "up", "idx".
const char *shflModeName(ShflMode m);
Expr sharedLoad(Expr byteOffset, Type t, std::optional<SmemRegion> region = std::nullopt);
Expr ldMatrix(Expr byteOffset, int num, bool trans,
              std::optional<SmemRegion> region = std::nullopt);
/// The text of a region as thread IR writes it after an offset: "; begin, end", or nothing.
std::string regionSuffix(const std::optional<SmemRegion> &region);
/// The text of a wgmma's turn: ".turnB" (waits and passes on barriers B, B + 1), ".turnwaitB",
/// ".turnpassB", or nothing.
std::string turnSuffix(const Wgmma::Turn &turn);
Expr mmaSync(Expr a, Expr b, Expr c, DType inputType);
Expr mfma(Expr a, Expr b, Expr c, int m, int n, int k, DType inputType);
Expr bitcast(Expr a, Type t);
Expr sharedAddress(Expr byteOffset);
Expr wgmma(Expr acc, std::vector<WgmmaInstr> instrs, int n, DType inputType, bool aInRegisters,
           bool aMnMajor, bool bMnMajor, int pending = 0,
           std::optional<DType> bInputType = std::nullopt, Wgmma::Turn turn = {},
           std::vector<SmemRegion> reads = {}, Expr clearAcc = nullptr, Expr active = nullptr);
/// Whether code generation has unary `op` on float64: the transcendentals it evaluates only in
/// float32 (exp, log, tanh, ...) it has not; lowering reports them at their source.
bool hasFloat64(UnOp op);
/// Whether wgmma takes A of type `a` and B of type `b`: both float16, both bfloat16, or both
/// float8 (e4m3 and e5m2 in any combination).
bool wgmmaTypes(DType a, DType b);
/// Whether wgmma instructions of width n can clear `lanes` accumulators: together they write
/// every lane, and each writes only lanes no earlier one wrote (it clears them) or only lanes
/// an earlier one wrote (it accumulates).
bool clearsWholeLanes(const std::vector<WgmmaInstr> &instrs, int n, int lanes);

/// Calls `f(const Expr &)` for each operand of `n`, in field order.
template <class F> void forEachOperand(const Node &n, F &&f) {
  std::visit(
      [&](const auto &op) {
        using T = std::decay_t<decltype(op)>;
        if constexpr (std::is_same_v<T, Unary> || std::is_same_v<T, Cast> ||
                      std::is_same_v<T, Broadcast> || std::is_same_v<T, Bitcast>) {
          f(op.a);
        } else if constexpr (std::is_same_v<T, Binary>) {
          f(op.a);
          f(op.b);
        } else if constexpr (std::is_same_v<T, Select>) {
          f(op.cond);
          f(op.a);
          f(op.b);
        } else if constexpr (std::is_same_v<T, GlobalLoad>) {
          f(op.index);
        } else if constexpr (std::is_same_v<T, ExtractLane>) {
          f(op.vec);
        } else if constexpr (std::is_same_v<T, MakeVector>) {
          for (const Expr &e : op.elems)
            f(e);
        } else if constexpr (std::is_same_v<T, Shfl>) {
          f(op.value);
          f(op.arg);
        } else if constexpr (std::is_same_v<T, ShflXor>) {
          f(op.value);
        } else if constexpr (std::is_same_v<T, SharedLoad> || std::is_same_v<T, LdMatrix> ||
                             std::is_same_v<T, SharedAddress>) {
          f(op.byteOffset);
        } else if constexpr (std::is_same_v<T, MmaSync> || std::is_same_v<T, Mfma>) {
          f(op.a);
          f(op.b);
          f(op.c);
        } else if constexpr (std::is_same_v<T, Wgmma>) {
          f(op.acc);
          if (op.clearAcc)
            f(op.clearAcc);
          if (op.active)
            f(op.active);
          for (const WgmmaInstr &i : op.instrs) {
            f(i.a);
            f(i.bDesc);
          }
        }
      },
      n.op);
}

/// Calls `f(const Expr &)` for each expression of statement `s` itself (an if's condition, a
/// loop's bounds; not the statements of their bodies), null ones skipped.
template <class F> void forEachStmtExpr(const Stmt &s, F &&f) {
  auto each = [&](std::initializer_list<const Expr *> es) {
    for (const Expr *e : es)
      if (*e)
        f(*e);
  };
  std::visit(
      [&](const auto &op) {
        using T = std::decay_t<decltype(op)>;
        if constexpr (std::is_same_v<T, DeclVar>)
          each({&op.init});
        else if constexpr (std::is_same_v<T, AssignVar>)
          each({&op.value});
        else if constexpr (std::is_same_v<T, GlobalStore> || std::is_same_v<T, GlobalAtomic>)
          each({&op.index, &op.value});
        else if constexpr (std::is_same_v<T, SharedStore> || std::is_same_v<T, SharedAtomic>)
          each({&op.byteOffset, &op.value});
        else if constexpr (std::is_same_v<T, IfStmt>)
          each({&op.cond});
        else if constexpr (std::is_same_v<T, ForStmt>)
          each({&op.begin, &op.end, &op.step});
        else if constexpr (std::is_same_v<T, Printf>)
          for (const Expr &a : op.args)
            each({&a});
        else if constexpr (std::is_same_v<T, CpAsync>)
          each({&op.index, &op.byteOffset, &op.srcBytes});
        else if constexpr (std::is_same_v<T, MbarrierInit>)
          each({&op.byteOffset, &op.count});
        else if constexpr (std::is_same_v<T, MbarrierArrive>)
          each({&op.byteOffset, &op.txBytes});
        else if constexpr (std::is_same_v<T, MbarrierWait>)
          each({&op.byteOffset, &op.parity});
        else if constexpr (std::is_same_v<T, TmaLoad>) {
          for (const Expr &c : op.coords)
            each({&c});
          each({&op.byteOffset, &op.barOffset});
        }
      },
      s.op);
}

/// Constants, parameters, special registers and variable reads: no operands, and evaluating one
/// twice in a statement costs nothing after LLVM's CSE, so the text form never names them.
bool isLeaf(const Node &n);

/// The text form of a module (docs/thread-ir.md): every field, one statement a line, subtrees
/// shared within a statement named by `let`. parseThreadIR reads it back exactly.
/// The barriers of `k` that lie where a warpgroup holds a ping-pong turn (from its wait to its
/// pass; a loop's body counts twice, as a turn may span iterations). The other warpgroup waits
/// for the turn there and never reaches the barrier: the block would hang.
std::vector<const Stmt *> barriersInHeldTurns(const Kernel &k);

std::string print(const Module &m);
/// `float32` or `float32x4`.
std::string typeString(Type t);
/// One expression as a tree (shared subtrees repeated; parameters named from `k`), for
/// comments in generated headers and as a structural key. Not the syntax print() writes.
std::string printExpr(const Expr &e, const Kernel &k);

} // namespace tilec::thir
