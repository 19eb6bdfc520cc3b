// Lowering: tile IR -> thread IR. Decides nothing about layouts itself; it asks analysis/ and
// spells the answer out per thread: indices from thread and block ids, vector accesses, masks.
#pragma once

#include "analysis/FragmentLayout.h"
#include "analysis/ParallelLayout.h"
#include "analysis/SharedLayout.h"
#include "lower/Plan.h"
#include "support/Diagnostics.h"
#include "target/TargetInfo.h"
#include "threadir/ThreadIR.h"
#include "tileir/TileIR.h"

#include <map>
#include <optional>
#include <string>

namespace tilec::lower {

struct Options {
  target::TargetInfo target = target::defaultTarget();
  /// Which warp-specialized kernels walk their grid (Persistence, walksTiles in Plan.h).
  Persistence persistence = Persistence::Gemm;
  /// lowerProgram's plan-pipelines: PlanOptions::overlapGemms, pingPong and pingPongTiles.
  GemmOverlap overlapGemms = GemmOverlap::Auto;
  PingPong pingPong = PingPong::Auto;
  bool pingPongTiles = false;
  /// lowerProgram's defer-row-sums (planDeferredSums).
  bool deferRowSums = true;
};

/// A decision lowering took, kept for the layout report.
struct ParallelLoopRecord {
  std::string kernel;
  SourceLoc loc;
  analysis::ParallelLayout layout;
};

struct FragmentRecord {
  std::string kernel;
  int bufferId;
  analysis::FragmentLayout layout;
};

/// Where a shared buffer of `kernel` lives (plan-shared's placement, or lowering's for an
/// operand it stages through shared memory).
struct SharedRecord {
  std::string kernel;
  int bufferId;
  SharedPlacement placement;
};

/// A loop the planning passes pipelined, as lowering ran it, for the layout report.
struct PipelineRecord {
  std::string kernel;
  SourceLoc loc; // the `for ... in Pipelined(...)` statement
  int requestedStages = 1, stages = 1;
  enum class Schedule { WarpSpecialized, CpAsync, None } schedule = Schedule::None;
  /// Why the loop runs without a pipeline (None), or without warp specialization (CpAsync).
  std::string reason;
  bool gemmInFlight = false, turns = false, persistent = false;
  struct Copy {
    SourceLoc loc;
    std::string buffer; // the shared buffer it fills
    std::string reason; // copiesNotAhead: why it is not issued ahead
  };
  std::vector<Copy> copies, copiesNotAhead;
  /// FlashAttention-3's overlap (PipelinePlan::GemmOverlap): the statements of the previous
  /// iteration issued after `issuedAfter`, waited for before `waitedBefore` (or at the end).
  struct Overlap {
    std::vector<SourceLoc> rotated;
    SourceLoc issuedAfter;
    std::optional<SourceLoc> waitedBefore;
  };
  std::optional<Overlap> overlap;
  std::string summary; // describePipeline's text
};

/// Kernel `k`'s pipelined loops in source order, as `kp` planned them and lowering under
/// `opts` runs them (PlanPrint.cpp).
void recordPipelines(const tile::Kernel &k, const KernelPlan &kp, const Options &opts,
                     std::vector<PipelineRecord> &out);

/// A row sum defer-row-sums reduces across threads after its loop, for the layout report.
struct DeferredSumRecord {
  std::string kernel;
  SourceLoc reduce, loop;
  std::string sum, accumulator; // buffer names
};
/// A loop whose scores plan-score-warpgroup gives warpgroup 0, for the layout report.
struct ScoreWarpgroupRecord {
  std::string kernel;
  SourceLoc loop;
  std::string scores;                // the fragment the gemm chain computes
  std::vector<SourceLoc> statements; // warpgroup 0's statements of the loop body
  std::vector<std::string> published, publishedAfter, handedOver; // buffer names
};
struct Lowered {
  thir::Module module;
  std::vector<PipelineRecord> pipelines;
  std::vector<DeferredSumRecord> deferredSums;
  std::vector<ScoreWarpgroupRecord> scoreWarpgroups;
  std::vector<ParallelLoopRecord> parallelLoops;
  std::vector<FragmentRecord> fragments;
  std::vector<SharedRecord> shared;
  std::map<std::string, int> dynamicSharedBytes; // by kernel
};

/// lower-to-thread-ir: spells out `p` per thread as `plan` decided. Returns nullopt after
/// reporting an error (a construct not supported yet names itself and its location).
std::optional<Lowered> lowerToThreadIR(const tile::Program &p, const ProgramPlan &plan,
                                       DiagnosticEngine &diags, const Options &opts);

/// The planning passes and lowerToThreadIR in order (for tests and tools that want thread IR
/// without the driver's pipeline).
std::optional<Lowered> lowerProgram(const tile::Program &p, DiagnosticEngine &diags,
                                    const Options &opts);

} // namespace tilec::lower
