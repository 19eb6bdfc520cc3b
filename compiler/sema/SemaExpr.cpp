// Expressions: names, attributes, subscripts, calls and arithmetic typing (builtin calls in
// SemaBuiltins.cpp, macros in SemaMacros.cpp).
#include "sema/SemaImpl.h"

#include <fmt/format.h>

#include <cctype>
#include <limits>

namespace tilec::sema {

namespace {

std::string describe(const Value &v) {
  return std::visit(
      [](const auto &x) -> std::string {
        using T = std::decay_t<decltype(x)>;
        if constexpr (std::is_same_v<T, ExprVal>)
          return "a scalar";
        else if constexpr (std::is_same_v<T, DTypeVal>)
          return "a dtype";
        else if constexpr (std::is_same_v<T, StrVal>)
          return "a string";
        else if constexpr (std::is_same_v<T, DimVal>)
          return fmt::format("the symbolic dimension '{}' (bound where a tensor shape names it)",
                             x.name);
        else if constexpr (std::is_same_v<T, PolicyVal>)
          return "a GemmWarpPolicy";
        else if constexpr (std::is_same_v<T, BufferVal>)
          return fmt::format("the {} buffer '{}'", tile::scopeName(x.buffer->scope),
                             x.buffer->name);
        else if constexpr (std::is_same_v<T, MacroVal>)
          return fmt::format("the macro '{}'", x.def->name);
        else if constexpr (std::is_same_v<T, ModuleVal>)
          return "a module";
        else if constexpr (std::is_same_v<T, BuiltinVal>)
          return fmt::format("the builtin '{}'", x.name);
        else if constexpr (std::is_same_v<T, std::shared_ptr<TupleVal>>)
          return "a tuple";
        else
          return "a dict";
      },
      v);
}

} // namespace

bool isIdentifier(const std::string &s) {
  if (s.empty() || std::isdigit(static_cast<unsigned char>(s[0])))
    return false;
  for (char ch : s)
    if (!std::isalnum(static_cast<unsigned char>(ch)) && ch != '_')
      return false;
  return true;
}

std::optional<Value> Sema::lookup(const std::string &name, LocalScope &scope, SourceLoc loc) {
  for (LocalScope *s = &scope; s; s = s->parent)
    if (auto it = s->names.find(name); it != s->names.end()) {
      // A variable's use carries the use's location (later diagnostics point at it), not the
      // location where the variable was declared.
      if (auto *ev = std::get_if<ExprVal>(&it->second))
        if (auto *ref = std::get_if<tile::VarRef>(&ev->expr->op))
          return ExprVal{tile::varRef(ref->var, loc)};
      return it->second;
    }
  if (scope.module)
    if (auto it = scope.module->names.find(name); it != scope.module->names.end())
      return it->second;
  if (auto dt = parseDType(name))
    return DTypeVal{*dt};
  if (isBuiltin(name))
    return BuiltinVal{name};
  if (scope.module && scope.module->failed.count(name))
    return std::nullopt; // its declaration's error was reported
  diags_.error(loc, fmt::format("use of undeclared name '{}'", name));
  return std::nullopt;
}

tile::Expr Sema::toScalar(const Value &v, SourceLoc loc, const char *what) {
  if (auto *e = std::get_if<ExprVal>(&v))
    return e->expr;
  if (auto *b = std::get_if<BufferVal>(&v); b && b->buffer->scope == tile::Scope::Var)
    return tile::makeLoad(b->buffer, {}, loc);
  diags_.error(loc, fmt::format("expected {}, but this is {}", what, describe(v)));
  return nullptr;
}

tile::Expr Sema::evalScalar(const ast::Expr &e, LocalScope &scope, const char *what) {
  auto v = eval(e, scope);
  if (!v)
    return nullptr;
  return toScalar(*v, e.loc(), what);
}

tile::Expr Sema::evalInt(const ast::Expr &e, LocalScope &scope, const char *what) {
  tile::Expr x = evalScalar(e, scope, what);
  if (!x)
    return nullptr;
  if (isFloat(x->dtype) || x->dtype == DType::Bool) {
    diags_.error(e.loc(), fmt::format("{} must be an integer, but this has type {}", what,
                                      dtypeName(x->dtype)));
    return nullptr;
  }
  return x;
}

std::optional<int64_t> Sema::evalConstInt(const ast::Expr &e, LocalScope &scope, const char *what) {
  tile::Expr x = evalInt(e, scope, what);
  if (!x)
    return std::nullopt;
  auto c = tile::asConstInt(x);
  if (!c)
    diags_.error(e.loc(), fmt::format("{} must be a compile-time constant", what));
  return c;
}

std::optional<DType> Sema::evalDType(const ast::Expr &e, LocalScope &scope) {
  if (auto *s = std::get_if<ast::StringLit>(&e.node)) {
    if (auto dt = parseDTypeString(s->value))
      return dt;
    diags_.error(e.loc(), fmt::format("unknown dtype \"{}\"", s->value));
    return std::nullopt;
  }
  // A name that means nothing where a dtype is expected is most likely a misspelled dtype.
  if (auto *n = std::get_if<ast::Name>(&e.node)) {
    bool known =
        parseDType(n->id) || isBuiltin(n->id) ||
        (scope.module && (scope.module->names.count(n->id) || scope.module->failed.count(n->id)));
    for (LocalScope *sc = &scope; sc && !known; sc = sc->parent)
      known = sc->names.count(n->id) != 0;
    if (!known) {
      diags_.error(e.loc(), fmt::format("unknown dtype '{}'", n->id));
      return std::nullopt;
    }
  }
  auto v = eval(e, scope);
  if (!v)
    return std::nullopt;
  if (auto *d = std::get_if<DTypeVal>(&*v))
    return d->type;
  if (auto *s = std::get_if<StrVal>(&*v)) {
    if (auto dt = parseDTypeString(s->value))
      return dt;
    diags_.error(e.loc(), fmt::format("unknown dtype \"{}\"", s->value));
    return std::nullopt;
  }
  diags_.error(e.loc(), fmt::format("expected a dtype, but this is {}", describe(*v)));
  return std::nullopt;
}

tile::Expr Sema::binary(ast::BinaryOp op, tile::Expr a, tile::Expr b, SourceLoc loc) {
  using ast::BinaryOp;
  using tile::BinOp;
  static const std::map<BinaryOp, BinOp> map = {{BinaryOp::Add, BinOp::Add},
                                                {BinaryOp::Sub, BinOp::Sub},
                                                {BinaryOp::Mul, BinOp::Mul},
                                                {BinaryOp::Div, BinOp::Div},
                                                {BinaryOp::FloorDiv, BinOp::FloorDiv},
                                                {BinaryOp::Mod, BinOp::Mod},
                                                {BinaryOp::Pow, BinOp::Pow},
                                                {BinaryOp::Eq, BinOp::Eq},
                                                {BinaryOp::Ne, BinOp::Ne},
                                                {BinaryOp::Lt, BinOp::Lt},
                                                {BinaryOp::Le, BinOp::Le},
                                                {BinaryOp::Gt, BinOp::Gt},
                                                {BinaryOp::Ge, BinOp::Ge},
                                                {BinaryOp::And, BinOp::And},
                                                {BinaryOp::Or, BinOp::Or},
                                                {BinaryOp::BitAnd, BinOp::BitAnd},
                                                {BinaryOp::BitOr, BinOp::BitOr},
                                                {BinaryOp::BitXor, BinOp::BitXor},
                                                {BinaryOp::Shl, BinOp::Shl},
                                                {BinaryOp::Shr, BinOp::Shr}};
  BinOp bop = map.at(op);
  bool intA = !isFloat(a->dtype), intB = !isFloat(b->dtype);
  if (bop == BinOp::Div && intA && intB) {
    diags_.error(loc, "'/' on two integers; write '//' for integer division or make one operand "
                      "a float");
    return nullptr;
  }
  if ((bop == BinOp::Div || bop == BinOp::FloorDiv || bop == BinOp::Mod) && intA && intB) {
    if (tile::asConstInt(b) == 0) {
      diags_.error(loc, "integer division by zero");
      return nullptr;
    }
  }
  const bool bitwise = bop >= BinOp::BitAnd;
  if (bitwise) {
    for (const tile::Expr *x : {&a, &b}) {
      DType t = (*x)->dtype;
      if (t == DType::Bool) {
        diags_.error(loc, fmt::format("'{}' on a bool (integers only; use and, or, not)",
                                      ast::binaryOpSpelling(op)));
        return nullptr;
      }
      if (!isInteger(t)) {
        diags_.error(loc, fmt::format("'{}' on {} (integers only; reinterpret(x, dtype) gives "
                                      "a float's bits)",
                                      ast::binaryOpSpelling(op), dtypeName(t)));
        return nullptr;
      }
    }
    if (bop == BinOp::Shl || bop == BinOp::Shr) {
      // Constants fold in 64 bits (and widen, as other constant arithmetic does). As in C, a
      // shift has its left operand's type whatever the count's (`u >> s` on a uint32 is logical
      // for an int32 `s`); a literal on the left is an int32 (int64 when it needs to be).
      const bool folds = tile::isImm(a) && tile::isImm(b);
      DType t = folds ? DType::Int64 : a->dtype;
      if (auto n = tile::asConstInt(b); n && (*n < 0 || *n >= dtypeBits(t))) {
        diags_.error(loc, fmt::format("shift count {} outside 0..{} for {}", *n, dtypeBits(t) - 1,
                                      dtypeName(t)));
        return nullptr;
      }
      if (!folds && b->dtype != t)
        b = tile::makeCast(b, t);
      if (!folds && tile::isImm(a))
        a = tile::makeCast(a, t);
    }
  }
  bool arith = bop <= BinOp::Max || bitwise;
  if (arith && (a->dtype == DType::Bool || b->dtype == DType::Bool) && bop != BinOp::Min &&
      bop != BinOp::Max) {
    diags_.error(
        loc, fmt::format("arithmetic '{}' on a bool; cast it first", ast::binaryOpSpelling(op)));
    return nullptr;
  }
  if (bop == BinOp::Pow && intA && intB) {
    auto eb = tile::asConstInt(b);
    if (!eb || *eb < 0 || !tile::asConstInt(a)) {
      // Integer powers only fold; anything else is computed in floating point.
      a = tile::makeCast(a, DType::Float32);
    }
  }
  if (tile::isImm(a) && tile::isImm(b) && intA && intB && arith) {
    tile::Expr r = tile::makeBinary(bop, a, b, loc);
    if (!tile::isImm(r)) {
      diags_.error(loc, "integer overflow in constant expression");
      return nullptr;
    }
    return r;
  }
  return tile::makeBinary(bop, std::move(a), std::move(b), loc);
}

std::optional<Value> Sema::eval(const ast::Expr &e, LocalScope &scope) {
  SourceLoc loc = e.loc();
  return std::visit(
      [&](const auto &n) -> std::optional<Value> {
        using T = std::decay_t<decltype(n)>;
        if constexpr (std::is_same_v<T, ast::IntLit>) {
          DType t = (n.value >= std::numeric_limits<int32_t>::min() &&
                     n.value <= std::numeric_limits<int32_t>::max())
                        ? DType::Int32
                        : DType::Int64;
          return ExprVal{tile::intImm(n.value, t, loc)};
        } else if constexpr (std::is_same_v<T, ast::FloatLit>) {
          return ExprVal{tile::floatImm(n.value, DType::Float32, loc)};
        } else if constexpr (std::is_same_v<T, ast::BoolLit>) {
          return ExprVal{tile::intImm(n.value, DType::Bool, loc)};
        } else if constexpr (std::is_same_v<T, ast::StringLit>) {
          return StrVal{n.value};
        } else if constexpr (std::is_same_v<T, ast::Name>) {
          return lookup(n.id, scope, loc);
        } else if constexpr (std::is_same_v<T, ast::Attribute>) {
          return evalAttribute(e, n, scope);
        } else if constexpr (std::is_same_v<T, ast::Slice>) {
          diags_.error(loc, "a slice is only allowed inside a subscript");
          return std::nullopt;
        } else if constexpr (std::is_same_v<T, ast::Subscript>) {
          return evalSubscript(e, n, scope);
        } else if constexpr (std::is_same_v<T, ast::Call>) {
          return evalCall(e, n, scope);
        } else if constexpr (std::is_same_v<T, ast::Unary>) {
          tile::Expr a = evalScalar(*n.operand, scope, "a scalar operand");
          if (!a)
            return std::nullopt;
          switch (n.op) {
          case ast::UnaryOp::Pos:
            return ExprVal{a};
          case ast::UnaryOp::Neg:
            if (a->dtype == DType::Bool) {
              diags_.error(loc, "unary '-' on a bool");
              return std::nullopt;
            }
            if (auto c = tile::asConstInt(a); c && *c == std::numeric_limits<int64_t>::min()) {
              diags_.error(loc, "integer overflow in constant expression");
              return std::nullopt;
            }
            return ExprVal{tile::makeUnary(tile::UnOp::Neg, a, loc)};
          case ast::UnaryOp::Not:
            return ExprVal{tile::makeUnary(tile::UnOp::Not, a, loc)};
          case ast::UnaryOp::Invert:
            if (!isInteger(a->dtype)) {
              diags_.error(loc, fmt::format("'~' on {} (integers only)",
                                            a->dtype == DType::Bool ? std::string("a bool")
                                                                    : dtypeName(a->dtype)));
              return std::nullopt;
            }
            return ExprVal{tile::makeUnary(tile::UnOp::BitNot, a, loc)};
          }
          return std::nullopt;
        } else if constexpr (std::is_same_v<T, ast::Binary>) {
          tile::Expr a = evalScalar(*n.lhs, scope, "a scalar operand");
          if (!a)
            return std::nullopt;
          // Constant short-circuit, so that `causal and ...` with causal=False skips the rest.
          if (n.op == ast::BinaryOp::And || n.op == ast::BinaryOp::Or) {
            if (auto c = tile::asConstInt(tile::makeCast(a, DType::Bool))) {
              bool isAnd = n.op == ast::BinaryOp::And;
              if ((isAnd && !*c) || (!isAnd && *c))
                return ExprVal{tile::intImm(*c != 0, DType::Bool, loc)};
            }
          }
          tile::Expr b = evalScalar(*n.rhs, scope, "a scalar operand");
          if (!b)
            return std::nullopt;
          tile::Expr r = binary(n.op, a, b, loc);
          if (!r)
            return std::nullopt;
          return ExprVal{r};
        } else if constexpr (std::is_same_v<T, ast::Conditional>) {
          tile::Expr c = evalScalar(*n.cond, scope, "a condition");
          if (!c)
            return std::nullopt;
          if (auto cc = tile::asConstInt(tile::makeCast(c, DType::Bool)))
            return eval(*cc ? *n.then : *n.otherwise, scope);
          tile::Expr a = evalScalar(*n.then, scope, "a scalar");
          tile::Expr b = evalScalar(*n.otherwise, scope, "a scalar");
          if (!a || !b)
            return std::nullopt;
          return ExprVal{tile::makeSelect(c, a, b, loc)};
        } else if constexpr (std::is_same_v<T, ast::Tuple> || std::is_same_v<T, ast::List>) {
          auto t = std::make_shared<TupleVal>();
          for (const ast::ExprPtr &x : n.elts) {
            auto v = eval(*x, scope);
            if (!v)
              return std::nullopt;
            t->elts.push_back(std::move(*v));
          }
          return t;
        } else if constexpr (std::is_same_v<T, ast::Dict>) {
          auto d = std::make_shared<DictVal>();
          for (const ast::DictEntry &entry : n.entries) {
            auto k = eval(*entry.key, scope);
            auto v = eval(*entry.value, scope);
            if (!k || !v)
              return std::nullopt;
            d->entries.emplace_back(std::move(*k), std::move(*v));
          }
          return d;
        }
      },
      e.node);
}

std::optional<Value> Sema::evalAttribute(const ast::Expr &e, const ast::Attribute &a,
                                         LocalScope &scope) {
  auto base = eval(*a.base, scope);
  if (!base)
    return std::nullopt;
  if (auto *b = std::get_if<BuiltinVal>(&*base)) {
    if (b->name == "T") {
      if (auto dt = parseDType(a.attr))
        return DTypeVal{*dt};
      if (isBuiltin(a.attr) && a.attr != "T")
        return BuiltinVal{a.attr};
      if (a.attr == "macro" || a.attr == "prim_func")
        return BuiltinVal{a.attr};
      diags_.error(a.attrLoc, fmt::format("unknown builtin 'T.{}'", a.attr));
      return std::nullopt;
    }
    if (b->name == "GemmWarpPolicy") {
      if (a.attr == "Square")
        return PolicyVal{tile::GemmPolicy::Square};
      if (a.attr == "FullRow")
        return PolicyVal{tile::GemmPolicy::FullRow};
      if (a.attr == "FullCol")
        return PolicyVal{tile::GemmPolicy::FullCol};
      diags_.error(a.attrLoc, fmt::format("unknown GemmWarpPolicy '{}'; expected Square, FullRow "
                                          "or FullCol",
                                          a.attr));
      return std::nullopt;
    }
  }
  if (auto *m = std::get_if<ModuleVal>(&*base)) {
    if (auto it = m->scope->names.find(a.attr); it != m->scope->names.end())
      return it->second;
    diags_.error(a.attrLoc, fmt::format("module '{}' has no name '{}'", m->scope->name, a.attr));
    return std::nullopt;
  }
  if (auto *b = std::get_if<BufferVal>(&*base)) {
    if (a.attr == "dtype")
      return DTypeVal{b->buffer->dtype};
    if (a.attr == "shape") {
      auto t = std::make_shared<TupleVal>();
      for (const tile::Expr &d : b->buffer->shape)
        t->elts.push_back(ExprVal{d});
      return t;
    }
  }
  diags_.error(a.attrLoc, fmt::format("{} has no attribute '{}'", describe(*base), a.attr));
  return std::nullopt;
}

std::optional<Value> Sema::evalSubscript(const ast::Expr &e, const ast::Subscript &s,
                                         LocalScope &scope) {
  auto base = eval(*s.base, scope);
  if (!base)
    return std::nullopt;
  for (const ast::ExprPtr &i : s.indices)
    if (std::holds_alternative<ast::Slice>(i->node)) {
      diags_.error(i->loc(), "a region (slice) can only be an operand of a tile operation such "
                             "as copy; index a single element here");
      return std::nullopt;
    }
  if (auto *t = std::get_if<std::shared_ptr<TupleVal>>(&*base)) {
    if (s.indices.size() != 1) {
      diags_.error(e.loc(), "a tuple takes one index");
      return std::nullopt;
    }
    auto i = evalConstInt(*s.indices[0], scope, "a tuple index");
    if (!i)
      return std::nullopt;
    int64_t n = static_cast<int64_t>((*t)->elts.size());
    int64_t idx = *i < 0 ? *i + n : *i;
    if (idx < 0 || idx >= n) {
      diags_.error(s.indices[0]->loc(),
                   fmt::format("index {} is out of range for a tuple of {} elements", *i, n));
      return std::nullopt;
    }
    return (*t)->elts[idx];
  }
  auto *b = std::get_if<BufferVal>(&*base);
  if (!b) {
    diags_.error(s.base->loc(), fmt::format("{} cannot be indexed", describe(*base)));
    return std::nullopt;
  }
  const tile::BufferPtr &buf = b->buffer;
  if (buf->scope == tile::Scope::Var) {
    diags_.error(e.loc(),
                 fmt::format("'{}' is an alloc_var scalar; use it without an index", buf->name));
    return std::nullopt;
  }
  if (s.indices.size() != buf->shape.size()) {
    diags_.error(e.loc(), fmt::format("'{}' has {} dimension(s) but {} index(es) were given",
                                      buf->name, buf->shape.size(), s.indices.size()));
    return std::nullopt;
  }
  std::vector<tile::Expr> idx;
  for (const ast::ExprPtr &i : s.indices) {
    tile::Expr x = evalInt(*i, scope, "an index");
    if (!x)
      return std::nullopt;
    idx.push_back(x);
  }
  // Constant indices into on-chip buffers are checked now; global accesses are masked instead.
  if (buf->scope != tile::Scope::Global)
    for (size_t d = 0; d < idx.size(); ++d) {
      auto c = tile::asConstInt(idx[d]);
      auto n = tile::asConstInt(buf->shape[d]);
      if (c && n && (*c < 0 || *c >= *n)) {
        diags_.error(s.indices[d]->loc(),
                     fmt::format("index {} is out of bounds for dimension {} of '{}' (size {})", *c,
                                 d, buf->name, *n));
        return std::nullopt;
      }
    }
  return ExprVal{tile::makeLoad(buf, std::move(idx), e.loc())};
}

std::optional<Value> Sema::evalCall(const ast::Expr &e, const ast::Call &c, LocalScope &scope) {
  auto callee = eval(*c.callee, scope);
  if (!callee)
    return std::nullopt;
  if (auto *b = std::get_if<BuiltinVal>(&*callee))
    return evalBuiltinCall(b->name, e, c, scope);
  if (auto *m = std::get_if<MacroVal>(&*callee))
    return expandMacro(*m, e, c, scope);
  if (auto *d = std::get_if<DTypeVal>(&*callee)) {
    if (c.args.size() != 1 || !c.kwargs.empty()) {
      diags_.error(e.loc(), fmt::format("{}(x) takes exactly one argument", dtypeName(d->type)));
      return std::nullopt;
    }
    tile::Expr x = evalScalar(*c.args[0], scope, "a scalar");
    if (!x)
      return std::nullopt;
    return ExprVal{tile::makeCast(x, d->type, e.loc())};
  }
  diags_.error(c.callee->loc(), fmt::format("{} is not callable", describe(*callee)));
  return std::nullopt;
}

} // namespace tilec::sema
