// The syntax tree of a .tile file: a close mirror of the text, every node with its source range.
// Sema gives it meaning; nothing here knows what `copy` or `Kernel` is.
#pragma once

#include "support/Diagnostics.h"

#include <cstdint>
#include <memory>
#include <optional>
#include <string>
#include <variant>
#include <vector>

namespace tilec::ast {

struct Expr;
struct Stmt;
using ExprPtr = std::unique_ptr<Expr>;
using StmtPtr = std::unique_ptr<Stmt>;
using Block = std::vector<StmtPtr>;

// ---- Expressions ---------------------------------------------------------------------------

struct IntLit {
  int64_t value;
};
struct FloatLit {
  double value;
};
struct BoolLit {
  bool value;
};
struct StringLit {
  std::string value;
};
struct Name {
  std::string id;
};
/// `base.attr`: `T.copy`, `GemmWarpPolicy.Square`, `buf.dtype`, `std.activations.gelu`.
struct Attribute {
  ExprPtr base;
  std::string attr;
  SourceLoc attrLoc;
};
/// `lo:hi` inside a subscript; either bound may be absent. A step is not part of the language.
struct Slice {
  ExprPtr lo;
  ExprPtr hi;
};
/// `base[i, j, lo:hi]`; each index is an expression or a Slice node.
struct Subscript {
  ExprPtr base;
  std::vector<ExprPtr> indices;
};
struct KeywordArg {
  std::string name;
  SourceLoc loc;
  ExprPtr value;
};
struct Call {
  ExprPtr callee;
  std::vector<ExprPtr> args;
  std::vector<KeywordArg> kwargs;
};
enum class UnaryOp { Neg, Pos, Not, Invert };
struct Unary {
  UnaryOp op;
  ExprPtr operand;
};
enum class BinaryOp {
  Add,
  Sub,
  Mul,
  Div,
  FloorDiv,
  Mod,
  Pow,
  Eq,
  Ne,
  Lt,
  Le,
  Gt,
  Ge,
  And,
  Or,
  BitAnd,
  BitOr,
  BitXor,
  Shl,
  Shr,
};
struct Binary {
  BinaryOp op;
  ExprPtr lhs;
  ExprPtr rhs;
};
/// `then if cond else otherwise`.
struct Conditional {
  ExprPtr cond;
  ExprPtr then;
  ExprPtr otherwise;
};
struct Tuple {
  std::vector<ExprPtr> elts;
};
struct List {
  std::vector<ExprPtr> elts;
};
struct DictEntry {
  ExprPtr key;
  ExprPtr value;
};
struct Dict {
  std::vector<DictEntry> entries;
};

struct Expr {
  SourceRange range;
  std::variant<IntLit, FloatLit, BoolLit, StringLit, Name, Attribute, Slice, Subscript, Call, Unary,
               Binary, Conditional, Tuple, List, Dict>
      node;
  SourceLoc loc() const { return range.begin; }
};

// ---- Statements ----------------------------------------------------------------------------

struct ExprStmt {
  ExprPtr expr;
};
/// `target = value`; the target is a Name, a Subscript, or a Tuple of those.
struct Assign {
  ExprPtr target;
  ExprPtr value;
};
/// `target op= value` with op one of + - * / // % **.
struct AugAssign {
  BinaryOp op;
  ExprPtr target;
  ExprPtr value;
};
struct LoopVar {
  std::string name;
  SourceLoc loc;
};
/// `for a, b in iter:` where iter is a call such as Parallel(...), Pipelined(...), range(...).
struct For {
  std::vector<LoopVar> vars;
  ExprPtr iter;
  Block body;
};
/// `with expr as v` / `with expr as (a, b)`; vars is empty without `as`.
struct With {
  ExprPtr expr;
  std::vector<LoopVar> vars;
  Block body;
};
/// `if` / `elif` / `else`: an elif chain is an If nested alone in `orelse`.
struct If {
  ExprPtr cond;
  Block then;
  Block orelse;
};
struct Pass {};
struct Return {
  ExprPtr value; // may be null
};

struct Stmt {
  SourceRange range;
  std::variant<ExprStmt, Assign, AugAssign, For, With, If, Pass, Return> node;
  SourceLoc loc() const { return range.begin; }
};

// ---- Top level -----------------------------------------------------------------------------

/// `import std.activations` (alias empty) or `import std.activations as act`.
struct Import {
  std::vector<std::string> module; // dotted path, split
  std::string alias;
  SourceLoc loc;
};
struct ImportedName {
  std::string name;
  std::string alias; // empty when none
  SourceLoc loc;
};
/// `from std.activations import gelu, silu as swish`.
struct FromImport {
  std::vector<std::string> module;
  std::vector<ImportedName> names;
  SourceLoc loc;
};
struct ConstDecl {
  std::string name;
  SourceLoc nameLoc;
  ExprPtr value;
  SourceLoc loc;
};
/// `@name` or `@name(args)` above a def.
struct Decorator {
  std::string name;
  SourceLoc loc;
  std::optional<Call> call; // present when written with parentheses (callee is unused)
};
struct Param {
  std::string name;
  SourceLoc loc;
  ExprPtr annotation; // null when none (macro parameters)
};
struct FuncDef {
  std::vector<Decorator> decorators;
  std::string name;
  SourceLoc nameLoc;
  std::vector<Param> params;
  Block body;
  SourceLoc loc;
};

using TopLevel = std::variant<Import, FromImport, ConstDecl, FuncDef>;

struct Module {
  uint32_t file = 0;
  std::vector<TopLevel> items;
};

const char *binaryOpSpelling(BinaryOp op);

} // namespace tilec::ast
