// Walks over thread IR that passes share: which variables code reads, the largest id in use (to
// number new variables), every nested body.
#pragma once

#include "threadir/ThreadIR.h"

#include <optional>
#include <set>

namespace tilec::thir {

/// The variables expression `e` reads (a subtree shared within it counted once).
std::set<int> varsRead(const Expr &e);
/// The variables statement `s` reads: its expressions, a wgmma.wait's tied variables, and the
/// statements of its bodies.
std::set<int> varsRead(const Stmt &s);
/// Whether `e` reads any of `vars`.
bool readsAny(const Expr &e, const std::set<int> &vars);
/// Whether `e` holds a wgmma (a statement assigning it is then no plain register assignment).
bool containsWgmma(const Expr &e);
/// A statement that only computes a register: the variable it declares or assigns, and the
/// value (which holds no wgmma; loads included).
struct RegisterAssignment {
  int def;
  const Expr *value;
};
std::optional<RegisterAssignment> registerAssignment(const Stmt &s);
/// The largest variable id declared in `b` or its bodies (loop variables included); -1 if none.
int maxVarId(const Body &b);

/// Calls `f(Body &)` for every body nested in `b` (loop bodies, both branches of an if),
/// innermost first, then for `b` itself.
template <class F> void forEachBodyInnermostFirst(Body &b, F &&f) {
  for (Stmt &s : b) {
    if (auto *l = std::get_if<ForStmt>(&s.op)) {
      forEachBodyInnermostFirst(l->body, f);
    } else if (auto *c = std::get_if<IfStmt>(&s.op)) {
      forEachBodyInnermostFirst(c->then, f);
      forEachBodyInnermostFirst(c->otherwise, f);
    }
  }
  f(b);
}

} // namespace tilec::thir
