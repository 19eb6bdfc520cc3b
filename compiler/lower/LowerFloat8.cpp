// float8 on targets without its conversion instructions (sm_80, sm_86): float8 values can be
// moved (loads, stores, copies) but not converted, and code generation has no source
// locations. After each statement is lowered, its thread IR is searched for a conversion, so
// the error names the statement that asked for it.
#include "lower/LowerImpl.h"

#include <fmt/format.h>

namespace tilec::lower::detail {

namespace {

/// Finds the first node under `e` (not in `seen`) that needs a float8 conversion: a cast to or
/// from float8, or arithmetic on float8 (which codegen does in float32).
std::optional<std::string> float8Use(const thir::Expr &e,
                                     std::unordered_set<const thir::Node *> &seen) {
  if (!e || !seen.insert(e.get()).second)
    return std::nullopt;
  DType to = e->type.elem;
  if (auto *c = std::get_if<thir::Cast>(&e->op)) {
    DType from = c->a->type.elem;
    if (from != to && (isFloat8(from) || isFloat8(to)))
      return fmt::format("cast from {} to {}", dtypeName(from), dtypeName(to));
  } else if (auto *u = std::get_if<thir::Unary>(&e->op); u && isFloat8(u->a->type.elem)) {
    return fmt::format("arithmetic on {}", dtypeName(u->a->type.elem));
  } else if (auto *b = std::get_if<thir::Binary>(&e->op); b && isFloat8(b->a->type.elem)) {
    return fmt::format("arithmetic on {}", dtypeName(b->a->type.elem));
  }
  std::optional<std::string> found;
  thir::forEachOperand(*e, [&](const thir::Expr &x) {
    if (!found)
      found = float8Use(x, seen);
  });
  return found;
}

std::optional<std::string> float8Use(const thir::Body &body, size_t from,
                                     std::unordered_set<const thir::Node *> &seen) {
  std::optional<std::string> found;
  auto check = [&](const thir::Expr &e) {
    if (!found)
      found = float8Use(e, seen);
  };
  for (size_t i = from; i < body.size() && !found; ++i) {
    std::visit(
        [&](const auto &op) {
          using T = std::decay_t<decltype(op)>;
          if constexpr (std::is_same_v<T, thir::DeclVar>) {
            check(op.init);
          } else if constexpr (std::is_same_v<T, thir::AssignVar>) {
            check(op.value);
          } else if constexpr (std::is_same_v<T, thir::GlobalStore> ||
                               std::is_same_v<T, thir::GlobalAtomic>) {
            check(op.index);
            check(op.value);
          } else if constexpr (std::is_same_v<T, thir::SharedStore> ||
                               std::is_same_v<T, thir::SharedAtomic>) {
            check(op.byteOffset);
            check(op.value);
          } else if constexpr (std::is_same_v<T, thir::Printf>) {
            for (const thir::Expr &a : op.args)
              check(a);
          } else if constexpr (std::is_same_v<T, thir::IfStmt>) {
            check(op.cond);
            if (!found)
              found = float8Use(op.then, 0, seen);
            if (!found)
              found = float8Use(op.otherwise, 0, seen);
          } else if constexpr (std::is_same_v<T, thir::ForStmt>) {
            check(op.begin);
            check(op.end);
            check(op.step);
            if (!found)
              found = float8Use(op.body, 0, seen);
          }
          // The other statements (barriers, fences, asynchronous copies, ...) carry addresses
          // and counts, never float values.
        },
        body[i].op);
  }
  return found;
}

} // namespace

void KernelLowering::checkFloat8Conversions(const tile::Stmt &s, const thir::Body &out,
                                            size_t from) {
  if (opts_.target.hasFp8Convert || failed_)
    return;
  if (auto what = float8Use(out, from, float8Seen_))
    unsupported(s.loc, fmt::format("{} on {} (float8 conversions need sm_89 or newer)", *what,
                                   opts_.target.arch));
}

} // namespace tilec::lower::detail
