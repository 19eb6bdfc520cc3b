// The invariants of well-formed thread IR: what codegen and the header generator assume of
// their input (and treat as compiler bugs when broken). Thread IR read from text is checked
// with it before codegen sees it; tests check builder-made IR with it.
#pragma once

#include "support/Diagnostics.h"
#include "threadir/ThreadIR.h"

#include <functional>

namespace tilec::thir {

/// Where a Node, Stmt, Kernel or Param of the module being verified was written (the parser
/// knows); an invalid SourceLoc when unknown.
using Locator = std::function<SourceLoc(const void *)>;

/// The most lanes a value may have (the widest wgmma accumulator of lowering is 128).
inline constexpr int kMaxLanes = 256;

/// Reports through `diags` every violation in `m`: operand types, types of nodes against their
/// operands', variables used before their declaration or with another type, parameter indices
/// and kinds, shared-memory use without dynamic shared memory, alignments, instruction shapes,
/// names and launch configuration. Errors without a location name the kernel. Returns true when
/// there is none.
bool verify(const Module &m, DiagnosticEngine &diags, const Locator &locate = {});

} // namespace tilec::thir
