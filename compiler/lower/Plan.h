// The decisions the planning passes take before lowering, recorded per kernel so that later
// passes read them instead of deciding again: fragment layouts (infer-layouts), software
// pipelines (plan-pipelines) and shared-memory placement (plan-shared). Lowering to thread IR
// (lowerToThreadIR) only reads them.
#pragma once

#include "analysis/FragmentLayout.h"
#include "analysis/SharedLayout.h"
#include "support/Diagnostics.h"
#include "target/TargetInfo.h"
#include "tileir/TileIR.h"

#include <algorithm>
#include <cstdint>
#include <map>
#include <optional>
#include <string>
#include <utility>
#include <vector>

namespace tilec::lower {

/// The two dimensions of a TMA copy's source that hold the shared tile's rows and columns; the
/// source's other dimensions are single indices (boxes one element wide).
struct TmaDims {
  size_t row = 0, col = 0;
};

/// A Pipelined loop whose global -> shared copies are issued `stages - 1` iterations ahead
/// (cp.async), each copied buffer in `stages` versions used round-robin.
struct PipelinePlan {
  int stages = 1;
  /// The loop's statement (its `num_stages` is what `stages` started from).
  const tile::Stmt *loop = nullptr;
  /// Why the loop is not warp-specialized (empty when it is), for the layout report.
  std::string notSpecialized;
  /// The body's copies from global into shared memory that are not issued ahead, and why.
  std::vector<std::pair<const tile::Stmt *, std::string>> copiesNotAhead;
  std::vector<const tile::Stmt *> lets;   // top-level Lets the copies read, re-run per issue
  std::vector<const tile::Stmt *> copies; // the copies issued ahead
  /// TMA targets (sm_90a): the copies are issued by a producer warpgroup that the kernel gains
  /// beside its `threads` consumer threads, by TMA (or by the producer's plain loads when the
  /// launch cannot encode a tensor map), on full/empty mbarrier rings of `stages` slots. The
  /// kernel then runs the statements before the loop in every thread (they only bind values
  /// and clear registers), and the loop and everything after it in the consumers only.
  bool warpSpecialized = false;
  /// Warp-specialized: where each copy's tile lies in its source tensor, in `copies`' order.
  std::vector<TmaDims> tmaDims;
  /// Warp-specialized: statements before the loop that only the consumers run, at the start of
  /// their branch (copies from global memory into shared buffers the loop does not fill, such as
  /// attention's Q tile); the other statements before the loop run in every thread.
  std::vector<const tile::Stmt *> consumerPrologue;
  /// Where each consumerPrologue copy's tile lies in its source tensor, when every one of them is
  /// a TMA box: then the producer loads them first, on an mbarrier of their own
  /// (prologueBarrier), and the consumers wait for it instead of loading them; empty otherwise.
  std::vector<TmaDims> prologueTmaDims;
  bool producerLoadsPrologue() const { return !prologueTmaDims.empty(); }
  /// The loop's body is its copies and one gemm: on wgmma, each iteration's group stays in flight
  /// while the next is issued, and a stage is released once the group reading it completed.
  bool gemmInFlight = false;
  /// gemmInFlight where statements before the gemm compute one of its operands into a shared
  /// buffer of the loop's own (W4A16's dequantized weights): those buffers, in two versions
  /// used by iteration parity, so that an iteration writes the version the group two iterations
  /// back read (completed: each iteration waits for all but its own group) while the previous
  /// group still reads the other.
  std::vector<int> producedOperands;
  /// Fit for ping-pong: two consumer warpgroups, more than one stage, and a loop that computes
  /// beside its gemms (attention's softmax), so that the warpgroups could take turns issuing
  /// their wgmma, one's other work running while the other's gemms keep the tensor cores busy
  /// (FlashAttention-3's scheduler barriers).
  bool pingPong = false;
  /// Whether they take those turns (PlanOptions::pingPong decides among the fit loops).
  bool turns = false;
  /// A GEMM loop (gemmInFlight) whose kernel computes each tile apart from the others: its
  /// consumers may be `tileGroups` groups of KernelPlan::tileThreads (one warpgroup), each on
  /// its own tiles of a persistent block (CUTLASS's ping-pong schedule), so that one group's
  /// epilogue runs beside another's main loop. Lowering takes it where the kernel is persistent.
  int tileGroups = 1;
  /// FlashAttention-3's overlap inside a warpgroup: the body ends with a gemm (attention's P@V)
  /// whose operands are registers and ring slots, and nothing from the start of the body up to
  /// an earlier gemm (Q@K^T), nor after that until `waitBefore`, touches its registers. Each
  /// iteration then issues its own earlier gemm, then the `rotated` tail of the iteration before
  /// (on the previous slot: register-only statements such as the rescale of the output, then
  /// the last gemm), and runs the statements between (the softmax) while both gemms are in
  /// flight; before `waitBefore` (or at the end of the body) it waits for the last gemm and
  /// releases the previous slot. The last iteration's tail runs after the loop.
  struct GemmOverlap {
    std::vector<const tile::Stmt *> rotated; // the body's tail, its last gemm last
    const tile::Stmt *issueAfter = nullptr;  // the gemm the tail is issued behind
    const tile::Stmt *waitBefore = nullptr;  // null: the end of the body
    /// When every copy is read either only up to `issueAfter` or only by the tail: the tail's
    /// copies (attention's V), which get a ring of their own, so that the others' slots (K) are
    /// released once `issueAfter` completed rather than one iteration later.
    std::vector<const tile::Stmt *> lateCopies;
    const tile::Stmt &gemm() const { return *rotated.back(); }
  };
  std::optional<GemmOverlap> overlap;
  /// Full/empty mbarrier rings: one, or two with an overlap's late copies.
  int rings() const { return overlap && !overlap->lateCopies.empty() ? 2 : 1; }
  /// The ring copy `c` is issued on.
  int ringOf(const tile::Stmt *c) const {
    return overlap && std::find(overlap->lateCopies.begin(), overlap->lateCopies.end(), c) !=
                          overlap->lateCopies.end();
  }
  /// plan-shared: the mbarriers of a warp-specialized loop, ring r's full[s] at barrierOffset +
  /// 8 (2 stages r + s) and empty[s] at barrierOffset + 8 (2 stages r + stages + s).
  int64_t barrierOffset = 0;
  /// The prologue's mbarrier (producerLoadsPrologue), after the rings'.
  int64_t prologueBarrier() const { return barrierOffset + 16 * stages * rings(); }
  /// plan-shared: the block walks tiles (walksTiles) with one consumer group, and its producer
  /// loads each tile's prologue (producerLoadsPrologue) during the epilogue of the tile before,
  /// once the consumers no longer read the prologue's buffers: they arrive on
  /// prologueFreeBarrier after their loop. Those buffers then stay live throughout the kernel.
  /// Not where they do not fit beside the rest, nor where a statement after the loop reads them.
  bool prologuePerTile = false;
  int64_t prologueFreeBarrier() const { return prologueBarrier() + 8; }
  /// Warp-specialized: consecutive iterations whose tiles share one slot of the rings (one
  /// mbarrier handshake for all of them), so that a slot holds enough work to hide its cost
  /// when an iteration's tiles are small. Each buffer has stages * itersPerSlot versions.
  int itersPerSlot = 1;
  int versions() const { return stages * itersPerSlot; }
  /// Some of the loop's buffers are also used by other loops (which rewrite them before reading
  /// them): the loop starts with a barrier so that no thread still reads what it overwrites.
  bool reusesBuffers = false;
};

/// `v` rounded up to a multiple of `a`.
inline int64_t alignUp(int64_t v, int64_t a) { return (v + a - 1) / a * a; }

/// The shape of an on-chip buffer (constant by construction).
inline std::vector<int64_t> constShape(const tile::BufferPtr &b) {
  std::vector<int64_t> s;
  for (const tile::Expr &e : b->shape)
    s.push_back(*tile::asConstInt(e));
  return s;
}

/// Threads of the producer warpgroup a warp-specialized kernel adds to its consumer threads.
inline constexpr int kProducerThreads = 128;
/// Block columns per panel of the rasterization a warp-specialized kernel gets when it has no
/// use_swizzle.
inline constexpr int64_t kDefaultSwizzlePanel = 4;

/// Where a shared buffer lives: `offset` bytes into dynamic shared memory (aligned to
/// TargetInfo::sharedBufferAlign), its elements placed by `layout`, in `versions` copies
/// `layout.bytes()` apart (one per stage of the software pipeline that fills it).
struct SharedPlacement {
  int64_t offset = 0;
  analysis::SharedLayout layout;
  int versions = 1;
};

/// Where a pipelined loop stands in the source (its first copy's line and column): the order
/// in which plans are printed and ties between loops are broken, never their addresses.
inline std::pair<uint32_t, uint32_t> sourcePosition(const PipelinePlan &p) {
  return {p.copies.front()->loc.line, p.copies.front()->loc.col};
}

/// defer-row-sums: a reduce_sum along rows whose result a top-level loop only adds into an
/// accumulator of row values (`acc[i] = acc[i] * factor + sum[i]`, the accumulator zeroed before
/// the loop): each thread that holds part of a row keeps its own partial sum and its own copy of
/// the accumulator, and the copies are summed across those threads once, after the loop.
struct DeferredSum {
  const tile::Stmt *reduce = nullptr; // reduce_sum(source, sum), its cross-thread part dropped
  const tile::Stmt *loop = nullptr;   // the top-level loop after which the accumulator is summed
  tile::BufferPtr sum, accumulator, source;
};

/// plan-score-warpgroup (PlanScoreWarpgroup.cpp): a warp-specialized loop whose scores, a gemm
/// chain split over the two consumer warpgroups by columns into a fragment of one warpgroup's
/// rows, warpgroup 0 computes alone, with what follows from them. Lowering gives each consumer
/// warpgroup a loop of its own (LowerScoreWarpgroup.cpp).
struct ScoreWarpgroup {
  const tile::Stmt *loop = nullptr;
  tile::BufferPtr scores;
  std::vector<const tile::Stmt *> chain; // the gemms into the scores, the first clearing
  std::vector<const tile::Stmt *> owned; // the loop's statements warpgroup 0 alone runs
  /// What warpgroup 0 hands over to warpgroup 1: a fragment or shared buffer (`value`), and the
  /// shared buffer it goes through (the same buffer when it is shared already).
  struct Handover {
    tile::BufferPtr value, shared;
  };
  /// Row values warpgroup 0 computes that statements of both warpgroups read: in the loop (the
  /// rescale), and after it (the running max, the sum).
  std::vector<Handover> published, publishedAfter;
  /// What a gemm of both warpgroups takes as its A operand from warpgroup 0 (P).
  std::vector<Handover> handedOver;
  /// The shared buffers the plan added (for fragments), placed in the scratch space it took.
  std::map<int, SharedPlacement> placements;
  /// The statements of both warpgroups that read a handed-over fragment, rewritten to read its
  /// shared copy.
  std::map<const tile::Stmt *, tile::Stmt> rewritten;
  /// The loop body's first statement of both warpgroups after warpgroup 0's (where the hand-over
  /// happens), and the first of warpgroup 0's that writes a handed-over shared buffer (where
  /// it waits until warpgroup 1 has read the last one); body.size() when there is none.
  size_t handOffAt = 0, firstHandedWrite = 0;
  /// mbarriers of 128 arrivals: `ready` (warpgroup 0 has handed over an iteration's values)
  /// and `free` (warpgroup 1 has read them).
  int64_t readyBarrier = 0, freeBarrier = 0;
  bool owns(const tile::Stmt *s) const {
    return std::find(owned.begin(), owned.end(), s) != owned.end();
  }
};

struct KernelPlan {
  /// infer-layouts: the layout of every fragment (and local buffer), by buffer id.
  std::map<int, analysis::FragmentLayout> fragments;
  /// The threads that compute one tile and that the fragments are laid out over: the kernel's
  /// `threads` (0), or one warpgroup when a pipeline's PipelinePlan::tileGroups split the
  /// consumers (plan-pipelines then laid the fragments out again).
  int64_t tileThreads = 0;
  /// plan-pipelines: the loops to pipeline (plan-shared may lower their stages or drop them
  /// when the versions do not fit), and the versions of each shared buffer they fill (a buffer
  /// two loops fill has the versions of the deeper one).
  std::map<const tile::For *, PipelinePlan> pipelines;
  /// Pipelined loops (num_stages >= 2) that run without a pipeline, and why: from
  /// plan-pipelines, or plan-shared when their versions did not fit. For the layout report.
  struct Unpipelined {
    const tile::Stmt *loop = nullptr;
    std::string reason;
    std::vector<std::pair<const tile::Stmt *, std::string>> copiesNotAhead;
  };
  std::vector<Unpipelined> unpipelined;
  std::map<int, int> stagesOf;
  /// plan-shared: every alloc_shared buffer's place, and the first byte after them (16-byte
  /// aligned), where lowering's scratch space begins.
  std::map<int, SharedPlacement> shared;
  int64_t scratchBase = 0;
  /// defer-row-sums: the row sums reduced across threads after their loop.
  std::vector<DeferredSum> deferredSums;
  /// plan-score-warpgroup: the loops whose scores warpgroup 0 computes alone.
  std::vector<ScoreWarpgroup> scoreWarpgroups;
};

/// One plan per kernel of the program, in the program's order.
struct ProgramPlan {
  std::vector<KernelPlan> kernels;
};

/// infer-layouts: fragment layouts by constraint propagation (analysis/FragmentLayout.h).
/// Returns false after reporting a conflict.
bool inferLayouts(const tile::Program &p, const target::TargetInfo &t, DiagnosticEngine &diags,
                  ProgramPlan &plan);

/// Which warp-specialized kernels walk their grid on as many blocks as fit on the device at
/// once (the producer loads the next tile while the consumers finish the last): GEMM loops
/// (copies and one gemm) by default, every one (On) or none (Off).
enum class Persistence { Gemm, On, Off };

/// Whether the kernel of `p`'s warp-specialized loop walks tiles under `persistence`. Lowering
/// builds the tile walk; plan-shared keeps the rings of such a loop live across the epilogue,
/// where the producer already loads the next tile.
inline bool walksTiles(const PipelinePlan &p, Persistence persistence) {
  return p.warpSpecialized &&
         (persistence == Persistence::On || (persistence == Persistence::Gemm && p.gemmInFlight));
}

/// Where plan-pipelines plans PipelinePlan::overlap: wherever a loop allows it (On), nowhere
/// (Off), or where the rotated gemm is wide enough to pay for it (Auto, the default; the rule is
/// overlapPays in PlanPipelines.cpp).
enum class GemmOverlap { Auto, On, Off };

/// Where plan-pipelines plans PipelinePlan::turns: wherever the consumer warpgroups are fit for
/// them (On), nowhere (Off), or where they pay (Auto, the default; the rule is turnsPay in
/// PlanPipelines.cpp).
enum class PingPong { Auto, On, Off };

struct PlanOptions {
  GemmOverlap overlapGemms = GemmOverlap::Auto;
  PingPong pingPong = PingPong::Auto;
  /// Plan PipelinePlan::tileGroups (two) where a GEMM loop allows it (off by default).
  bool pingPongTiles = false;
  /// Plan PipelinePlan::prologueTmaDims where the consumer prologue allows it.
  bool tmaPrologue = true;
};

/// plan-pipelines: the Pipelined loops whose copies from global to shared memory can be issued
/// ahead (the rules are in PlanPipelines.cpp).
void planPipelines(const tile::Program &p, const target::TargetInfo &t, ProgramPlan &plan,
                   const PlanOptions &opts = {});

/// Sets stagesOf: each pipelined buffer gets as many versions as the loop using most of them.
void countVersions(KernelPlan &kp);

/// plan-shared: places the shared buffers (and their versions), fewer pipeline stages where
/// they would not fit in the target's shared memory. `persistence` as lowering will take it.
void planShared(const tile::Program &p, const target::TargetInfo &t, ProgramPlan &plan,
                Persistence persistence);

/// defer-row-sums: the row sums that can wait for the end of their loop to be reduced across
/// threads (the rules are in PlanDeferredSums.cpp).
void planDeferredSums(const tile::Program &p, ProgramPlan &plan);

/// plan-score-warpgroup: the loops whose scores warpgroup 0 computes alone (the rules are in
/// PlanScoreWarpgroup.cpp). Re-lays out the fragments of the scores' shape it gives warpgroup 0
/// over that warpgroup's 128 threads, and takes scratch space for the hand-over.
void planScoreWarpgroups(const tile::Program &p, const target::TargetInfo &t, ProgramPlan &plan);

/// Human-readable form of what the planning passes recorded so far, for --dump-after.
std::string printPlan(const tile::Program &p, const ProgramPlan &plan);
/// One pipelined loop of `printPlan`'s text, without the "pipeline: " in front (also the layout
/// report's `summary` of the loop).
std::string describePipeline(const tile::Kernel &k, const KernelPlan &kp, const PipelinePlan &p);

} // namespace tilec::lower
