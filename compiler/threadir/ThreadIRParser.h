// Reads the text form of thread IR that thir::print writes (docs/thread-ir.md), so that codegen
// can be driven and tested from hand-written thread IR (`tilec compile FILE.thir`).
#pragma once

#include "support/Diagnostics.h"
#include "threadir/ThreadIR.h"

#include <cstdint>
#include <optional>

namespace tilec::thir {

/// The deepest nesting of brackets and bodies, and the deepest expression (counting through
/// `let` bindings), the parser accepts: later stages recurse over both.
inline constexpr int kMaxParseDepth = 1000;

/// Parses buffer `file` of `sm` and verifies the result (thir::verify). Reports the first syntax
/// error, or every verifier error, as `file:line:col: error: ...` and returns nullopt then.
/// print(*parseThreadIR(print(m))) == print(m) for every module print accepts.
std::optional<Module> parseThreadIR(const SourceManager &sm, uint32_t file,
                                    DiagnosticEngine &diags);

} // namespace tilec::thir
