// A stable S-expression dump of the syntax tree, for tests (`tilec check --dump-ast`).
#pragma once

#include "syntax/AST.h"

#include <string>

namespace tilec {

/// One top-level item per line; statements of a body on their own lines, indented two spaces
/// per level. Expressions print as `(int 128)`, `(name x)`, `(+ (name a) (int 1))`,
/// `(call (attr (name T) copy) (name A) (kw dim (int 1)))`, `(slice _ (name n))`.
std::string printAST(const ast::Module &module);
/// One expression, in the same notation.
std::string printExpr(const ast::Expr &expr);

} // namespace tilec
