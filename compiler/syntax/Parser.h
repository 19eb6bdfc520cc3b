// The recursive-descent parser of the .tile language.
#pragma once

#include "support/Diagnostics.h"
#include "syntax/AST.h"

#include <cstddef>
#include <cstdint>
#include <optional>

namespace tilec {

/// Source files larger than this are rejected before lexing.
inline constexpr size_t kMaxSourceFileSize = size_t{16} << 20;
/// The deepest nesting of brackets, unary operators and blocks the parser accepts.
inline constexpr int kMaxNestingDepth = 200;

/// Parses buffer `file` of `sm`. Returns nullopt when any error was reported.
std::optional<ast::Module> parseModule(const SourceManager &sm, uint32_t file,
                                       DiagnosticEngine &diags);

} // namespace tilec
