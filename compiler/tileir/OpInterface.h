// The operand interface of tile-IR statements: for each statement kind, once, what it reads
// and writes (buffer regions or elements), which scalar expressions it evaluates, which
// variables it assigns and which bodies it nests. Walkers over tile IR ask this instead of
// matching statement kinds themselves, so that none of them silently skips a kind: the
// definitions in OpInterface.cpp are one std::visit over an overload set with a case per kind,
// and a kind without a case does not compile.
#pragma once

#include "tileir/TileIR.h"

#include <functional>
#include <string_view>
#include <variant>
#include <vector>

namespace tilec::tile {

/// A visitor from lambdas, one per alternative: `std::visit(Overloaded{...}, v)`.
template <class... F> struct Overloaded : F... { using F::operator()...; };
template <class... F> Overloaded(F...) -> Overloaded<F...>;

/// What a statement does with a buffer's contents.
enum class Access {
  Read,
  Write,     // every element of the region is overwritten
  ReadWrite, // accumulated into (gemm without clear_accum, reduce without clear, atomic_add)
  Name,      // named without touching its contents (annotate_layout)
};
inline bool writes(Access a) { return a == Access::Write || a == Access::ReadWrite; }

/// One use of a buffer by a statement: a region (tile operations) or one element (stores and
/// element atomics); loads inside expressions are not uses of the statement (forEachLoad).
struct BufferUse {
  BufferPtr buffer;
  Access access;
  const Region *region = nullptr;             // region uses
  const std::vector<Expr> *indices = nullptr; // element uses
};

/// The operands of one statement, by role.
struct Operands {
  std::vector<BufferUse> uses;      // in operand order (sources before destinations)
  std::vector<const Expr *> exprs;  // evaluated scalars: indices, region bounds, values, ...
  std::vector<VarPtr> defines;      // variables it assigns: a Let's, a loop's
  std::vector<const Body *> bodies; // nested bodies
};

/// The operands of `s` as its kind defines them (not those of its nested bodies).
Operands operandsOf(const Stmt &s);

/// The name of a statement's kind as the language spells it ("copy", "gemm", "atomic_add",
/// "for", ...).
std::string opName(const Stmt &s);

/// The operands of an expression node, in order (a Load's are its indices); one case per node
/// kind, like operandsOf(Stmt).
std::vector<const Expr *> operandsOf(const Node &n);

enum class WalkOrder { NodeFirst, OperandsFirst };
/// Calls `f` on every node of `e` (null allowed), each node before or after its operands; a
/// Load's operands are its indices.
void forEachNode(const Expr &e, const std::function<void(const Node &)> &f,
                 WalkOrder order = WalkOrder::NodeFirst);

/// Every buffer `body` refers to, nested bodies included, statement by statement: its uses
/// (those `keepUse` keeps, when given), the buffers its expressions load from, then its nested
/// bodies. Repeats are kept.
std::vector<BufferPtr>
buffersIn(const Body &body,
          const std::function<bool(const Stmt &, const BufferUse &)> &keepUse = nullptr);

} // namespace tilec::tile
