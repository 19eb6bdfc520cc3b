// Lowering: tile IR -> thread IR. Decides nothing about layouts itself; it asks analysis/ and
// spells the answer out per thread: indices from thread and block ids, vector accesses, masks.
#pragma once

#include "analysis/FragmentLayout.h"
#include "analysis/ParallelLayout.h"
#include "support/Diagnostics.h"
#include "threadir/ThreadIR.h"
#include "tileir/TileIR.h"

#include <optional>
#include <string>

namespace tilec::lower {

struct Options {
  std::string arch = "sm_90a";
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

struct Lowered {
  thir::Module module;
  std::vector<ParallelLoopRecord> parallelLoops;
  std::vector<FragmentRecord> fragments;
};

/// Returns nullopt after reporting an error (a construct not supported yet names itself and its
/// location).
std::optional<Lowered> lowerProgram(const tile::Program &p, DiagnosticEngine &diags,
                                    const Options &opts);

} // namespace tilec::lower
