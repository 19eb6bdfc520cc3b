// Typing, constant folding and affine simplification of tile IR scalar expressions. Sema builds
// every expression through these so that constants fold as they are written; lowering uses the
// same functions for index arithmetic.
#pragma once

#include "tileir/TileIR.h"

#include <map>
#include <optional>

namespace tilec::tile {

bool isImm(const Expr &e);
std::optional<double> asConstFloat(const Expr &e); // IntImm or FloatImm value

/// The type both operands of a binary operation take. Immediates (literals and constants) are
/// weakly typed: they adopt the other operand's type, as Python numbers do in TileLang.
DType promote(const Expr &a, const Expr &b);

Expr makeCast(Expr a, DType t, SourceLoc loc = {});
/// Promotes, folds immediates and gives comparisons and logic a Bool result. Folding never
/// invokes undefined behaviour: an integer overflow or a division by zero is left unfolded
/// (sema reports those cases before it gets here).
Expr makeBinary(BinOp op, Expr a, Expr b, SourceLoc loc = {});
Expr makeUnary(UnOp op, Expr a, SourceLoc loc = {});
Expr makeSelect(Expr cond, Expr a, Expr b, SourceLoc loc = {});
Expr makeLoad(BufferPtr buf, std::vector<Expr> indices, SourceLoc loc = {});

/// An integer expression as sum(coef * atom) + constant, where atoms are variables or
/// non-affine subexpressions (keyed by their printed form, which is deterministic).
struct AffineForm {
  std::map<std::string, std::pair<int64_t, Expr>> terms;
  int64_t constant = 0;
};
std::optional<AffineForm> toAffine(const Expr &e);
/// `hi - lo` when it simplifies to a constant (`(bx + 1) * 128 - bx * 128` is 128).
std::optional<int64_t> constDifference(const Expr &hi, const Expr &lo);
/// Whether `e` is provably a multiple of `m` (every coefficient and the constant are).
bool isMultipleOf(const Expr &e, int64_t m);

} // namespace tilec::tile
