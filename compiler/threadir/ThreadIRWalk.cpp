#include "threadir/ThreadIRWalk.h"

#include <algorithm>
#include <unordered_set>

namespace tilec::thir {

namespace {

void collectVars(const Expr &e, std::set<int> &out, std::unordered_set<const Node *> &seen) {
  if (!e || !seen.insert(e.get()).second)
    return;
  if (auto *v = std::get_if<VarRef>(&e->op))
    out.insert(v->id);
  forEachOperand(*e, [&](const Expr &x) { collectVars(x, out, seen); });
}

void collectStmtVars(const Stmt &s, std::set<int> &out) {
  std::unordered_set<const Node *> seen;
  forEachStmtExpr(s, [&](const Expr &e) { collectVars(e, out, seen); });
  if (auto *w = std::get_if<WgmmaWait>(&s.op))
    out.insert(w->vars.begin(), w->vars.end());
  auto body = [&](const Body &b) {
    for (const Stmt &t : b)
      collectStmtVars(t, out);
  };
  if (auto *c = std::get_if<IfStmt>(&s.op)) {
    body(c->then);
    body(c->otherwise);
  } else if (auto *f = std::get_if<ForStmt>(&s.op)) {
    body(f->body);
  }
}

} // namespace

std::set<int> varsRead(const Expr &e) {
  std::set<int> out;
  std::unordered_set<const Node *> seen;
  collectVars(e, out, seen);
  return out;
}

std::set<int> varsRead(const Stmt &s) {
  std::set<int> out;
  collectStmtVars(s, out);
  return out;
}

bool readsAny(const Expr &e, const std::set<int> &vars) {
  for (int v : varsRead(e))
    if (vars.count(v))
      return true;
  return false;
}

namespace {

bool containsWgmma(const Expr &e, std::unordered_set<const Node *> &seen) {
  if (!e || !seen.insert(e.get()).second)
    return false;
  if (std::holds_alternative<Wgmma>(e->op))
    return true;
  bool found = false;
  forEachOperand(*e, [&](const Expr &x) { found = found || containsWgmma(x, seen); });
  return found;
}

} // namespace

bool containsWgmma(const Expr &e) {
  std::unordered_set<const Node *> seen;
  return containsWgmma(e, seen);
}

std::optional<RegisterAssignment> registerAssignment(const Stmt &s) {
  RegisterAssignment a{-1, nullptr};
  if (auto *d = std::get_if<DeclVar>(&s.op))
    a = {d->id, &d->init};
  else if (auto *v = std::get_if<AssignVar>(&s.op))
    a = {v->id, &v->value};
  else
    return std::nullopt;
  if (containsWgmma(*a.value))
    return std::nullopt;
  return a;
}

int maxVarId(const Body &b) {
  int m = -1;
  for (const Stmt &s : b) {
    if (auto *d = std::get_if<DeclVar>(&s.op))
      m = std::max(m, d->id);
    else if (auto *f = std::get_if<ForStmt>(&s.op))
      m = std::max({m, f->var, maxVarId(f->body)});
    else if (auto *c = std::get_if<IfStmt>(&s.op))
      m = std::max({m, maxVarId(c->then), maxVarId(c->otherwise)});
  }
  return m;
}

} // namespace tilec::thir
