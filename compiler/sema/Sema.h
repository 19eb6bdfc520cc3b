// Semantic analysis: resolves names, folds constants (with -D overrides), checks dtypes and
// shapes, inlines macros, loads imported stdlib modules and builds the tile IR.
#pragma once

#include "support/Diagnostics.h"
#include "syntax/AST.h"
#include "tileir/TileIR.h"

#include <map>
#include <optional>
#include <string>
#include <vector>

namespace tilec::sema {

struct Options {
  /// `-D NAME=VALUE`: overrides a `const` or turns a symbolic dimension into a constant.
  std::map<std::string, std::string> defines;
  /// Searched in order for `import a.b` as `DIR/a/b.tile`: `-I` directories, then the stdlib.
  std::vector<std::string> moduleSearchPath;
  /// Stem of the main file; names the program.
  std::string stem;
};

/// Analyzes `main` (already parsed from buffer `main.file` of `sm`). Imported modules are read
/// and parsed into `sm`. Returns nullopt when an error was reported.
/// Every name sema accepts as a builtin (functions, loop and allocation forms, tile operations,
/// namespaces), sorted: the list docs/language.md's reference must match.
std::vector<std::string> builtinNameList();

std::optional<tile::Program> analyze(const ast::Module &main, SourceManager &sm,
                                     DiagnosticEngine &diags, const Options &opts);

} // namespace tilec::sema
