// Macros in expression position: binding the arguments of a call and expanding its body.
#include "sema/SemaImpl.h"

#include "tileir/OpInterface.h"

#include <fmt/format.h>

#include <unordered_map>

namespace tilec::sema {

bool Sema::countMacroExpansion(const std::string &name, SourceLoc loc) {
  if (++macroExpansions_ <= kMaxMacroExpansions)
    return true;
  if (macroExpansions_ == kMaxMacroExpansions + 1)
    diags_.error(loc, fmt::format("too many macro expansions (limit {}) while expanding '{}'",
                                  kMaxMacroExpansions, name));
  return false;
}

namespace {

/// An expression macro binds its locals by substitution, so its value shares subtrees: as a
/// tree (which later passes walk, recursively) it can be exponentially large (`y = y * y`
/// repeated) or very deep (`y = y + 1` repeated). Reports a value past the limits.
bool checkMacroValue(DiagnosticEngine &diags, const Value &v, const std::string &name,
                     SourceLoc loc) {
  constexpr uint64_t kMaxSize = 100000, kMaxDepth = 1000;
  auto *ev = std::get_if<ExprVal>(&v);
  if (!ev || !ev->expr)
    return true;
  struct Extent {
    uint64_t size, depth;
  };
  std::unordered_map<const tile::Node *, Extent> done;
  auto children = [](const tile::Node *n) {
    std::vector<const tile::Node *> out;
    for (const tile::Expr *operand : tile::operandsOf(*n))
      out.push_back(operand->get());
    return out;
  };
  // Iterative post-order over the DAG, sizes saturated just above the limit.
  std::vector<std::pair<const tile::Node *, bool>> stack{{ev->expr.get(), false}};
  while (!stack.empty()) {
    auto [n, expanded] = stack.back();
    if (!n || done.count(n)) {
      stack.pop_back();
      continue;
    }
    std::vector<const tile::Node *> kids = children(n);
    if (!expanded) {
      stack.back().second = true;
      for (const tile::Node *k : kids)
        if (k && !done.count(k))
          stack.push_back({k, false});
      continue;
    }
    stack.pop_back();
    Extent x{1, 1};
    for (const tile::Node *k : kids)
      if (k) {
        x.size = std::min(x.size + done[k].size, kMaxSize + 1);
        x.depth = std::max(x.depth, done[k].depth + 1);
      }
    done[n] = x;
  }
  Extent root = done[ev->expr.get()];
  if (root.size <= kMaxSize && root.depth <= kMaxDepth)
    return true;
  diags.error(loc, fmt::format("macro '{}' builds too large an expression (limits: {} "
                               "operations, nesting {})",
                               name, kMaxSize, kMaxDepth));
  return false;
}

} // namespace

std::optional<LocalScope> Sema::bindMacroCall(const MacroVal &m, const ast::Call &c,
                                              LocalScope &scope, SourceLoc loc, bool asStatement) {
  const ast::FuncDef &def = *m.def;
  if (macroDepth_ >= 32) {
    diags_.error(loc, fmt::format("macro expansion too deep (limit 32) while expanding '{}'; "
                                  "is it recursive?",
                                  def.name));
    return std::nullopt;
  }
  LocalScope inner;
  inner.module = m.scope;
  inner.exprMacro = !asStatement;
  inheritParallel(inner, scope);
  if (asStatement && (c.args.size() != def.params.size() || !c.kwargs.empty())) {
    diags_.error(loc, fmt::format("macro '{}' takes {} positional argument(s), {} given", def.name,
                                  def.params.size(), c.args.size()));
    return std::nullopt;
  }
  if (c.args.size() > def.params.size()) {
    diags_.error(loc, fmt::format("macro '{}' takes {} argument(s), {} given", def.name,
                                  def.params.size(), c.args.size()));
    return std::nullopt;
  }
  for (size_t i = 0; i < c.args.size(); ++i) {
    auto v = eval(*c.args[i], scope);
    if (!v)
      return std::nullopt;
    inner.names[def.params[i].name] = std::move(*v);
  }
  for (const ast::KeywordArg &kw : c.kwargs) {
    bool found = false;
    for (const ast::Param &p : def.params)
      found = found || p.name == kw.name;
    if (!found) {
      diags_.error(kw.loc, fmt::format("macro '{}' has no parameter '{}'", def.name, kw.name));
      return std::nullopt;
    }
    if (inner.names.count(kw.name)) {
      diags_.error(kw.loc, fmt::format("argument '{}' given twice", kw.name));
      return std::nullopt;
    }
    auto v = eval(*kw.value, scope);
    if (!v)
      return std::nullopt;
    inner.names[kw.name] = std::move(*v);
  }
  for (const ast::Param &p : def.params)
    if (!inner.names.count(p.name)) {
      diags_.error(loc, fmt::format("macro '{}' is missing argument '{}'", def.name, p.name));
      return std::nullopt;
    }
  if (!countMacroExpansion(def.name, loc))
    return std::nullopt;
  return inner;
}

std::optional<Value> Sema::expandMacro(const MacroVal &m, const ast::Expr &e, const ast::Call &c,
                                       LocalScope &scope) {
  const ast::FuncDef &def = *m.def;
  std::optional<LocalScope> bound = bindMacroCall(m, c, scope, e.loc(), false);
  if (!bound)
    return std::nullopt;
  LocalScope &inner = *bound;
  ++macroDepth_;
  struct DepthGuard {
    int &d;
    ~DepthGuard() { --d; }
  } guard{macroDepth_};

  for (const ast::StmtPtr &s : def.body) {
    if (auto *r = std::get_if<ast::Return>(&s->node)) {
      if (!r->value) {
        diags_.error(s->loc(),
                     fmt::format("macro '{}' is used as a value but returns nothing", def.name));
        return std::nullopt;
      }
      auto v = eval(*r->value, inner);
      if (v && !checkMacroValue(diags_, *v, def.name, r->value->loc()))
        return std::nullopt;
      return v;
    }
    if (auto *a = std::get_if<ast::Assign>(&s->node)) {
      auto *n = std::get_if<ast::Name>(&a->target->node);
      if (std::holds_alternative<ast::Subscript>(a->target->node)) {
        diags_.error(a->target->loc(), fmt::format("macro '{}' is used as a value and cannot "
                                                   "write to a buffer; call it as a statement",
                                                   def.name));
        diags_.note(e.loc(), "expanded from here");
        return std::nullopt;
      }
      if (!n) {
        diags_.error(s->loc(), "not supported yet: assignment to anything but a name in a macro "
                               "used as a value");
        diags_.note(e.loc(), "expanded from here");
        return std::nullopt;
      }
      auto v = eval(*a->value, inner);
      if (!v || !checkMacroValue(diags_, *v, def.name, a->value->loc()))
        return std::nullopt;
      inner.names[n->id] = std::move(*v);
      continue;
    }
    if (std::holds_alternative<ast::Pass>(s->node))
      continue;
    diags_.error(s->loc(), fmt::format("not supported yet: statements other than assignments and "
                                       "'return' in macro '{}' used as a value",
                                       def.name));
    diags_.note(e.loc(), "expanded from here");
    return std::nullopt;
  }
  diags_.error(e.loc(), fmt::format("macro '{}' is used as a value but has no 'return'", def.name));
  return std::nullopt;
}

} // namespace tilec::sema
