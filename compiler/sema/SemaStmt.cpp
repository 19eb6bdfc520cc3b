// Statements of a kernel body: bindings, stores, loops, control flow and tile operations.
#include "sema/SemaImpl.h"

#include <fmt/format.h>

#include <algorithm>

namespace tilec::sema {

namespace {

const std::string *calleeBuiltin(const ast::Call &c) {
  if (auto *n = std::get_if<ast::Name>(&c.callee->node))
    return &n->id;
  if (auto *a = std::get_if<ast::Attribute>(&c.callee->node))
    if (auto *base = std::get_if<ast::Name>(&a->base->node); base && base->id == "T")
      return &a->attr;
  return nullptr;
}

} // namespace

void Sema::analyzeBlock(const ast::Block &b, LocalScope &scope, tile::Body &out,
                        std::vector<size_t> *ends) {
  for (const ast::StmtPtr &s : b) {
    if (std::holds_alternative<ast::Return>(s->node)) {
      auto &r = std::get<ast::Return>(s->node);
      if (macroDepth_ == 0)
        diags_.error(s->loc(), "'return' outside a macro");
      else if (r.value)
        diags_.error(s->loc(), "a macro called as a statement cannot return a value");
      return;
    }
    analyzeStmt(*s, scope, out);
    if (ends)
      ends->push_back(out.size());
  }
}

void Sema::checkSchedule(const ast::For &f, const std::vector<size_t> &ends, tile::For &loop) {
  const size_t n = f.body.size();
  if (ends.size() != n)
    return; // the body stopped early with an error
  // A statement the pipeline can issue ahead: one copy from a global tensor to a shared buffer.
  std::vector<bool> copy(n, false);
  for (size_t i = 0, begin = 0; i < n; begin = ends[i], ++i) {
    if (ends[i] != begin + 1)
      continue;
    auto *c = std::get_if<tile::Copy>(&loop.body[begin].op);
    copy[i] = c && c->src.buffer->scope == tile::Scope::Global &&
              c->dst.buffer->scope == tile::Scope::Shared;
  }
  SourceLoc at = f.iter->loc();
  if (!loop.stage.empty()) {
    const std::vector<int64_t> &st = loop.stage;
    // Every statement at one stage: TileLang runs the loop without overlap, and so does tilec.
    const bool flat = std::all_of(st.begin(), st.end(), [&](int64_t v) { return v == st[0]; });
    if (flat)
      loop.numStages = 1;
    // Otherwise the copies at one stage, 0 or -1 (TileLang's mark of copies a producer issues),
    // the other statements at one stage after it.
    std::optional<int64_t> copies, rest;
    for (size_t i = 0; i < n && !flat; ++i) {
      std::optional<int64_t> &same = copy[i] ? copies : rest;
      bool ok = (!same || st[i] == *same) && (!copy[i] || st[i] == 0 || st[i] == -1) &&
                (copy[i] ? !rest || *rest > st[i] : !copies || st[i] > *copies);
      same = st[i];
      if (!ok) {
        diags_.error(at, fmt::format("not supported yet: Pipelined(stage=[...]) other than the "
                                     "copies from global to shared memory at stage 0 (or -1) and "
                                     "the other statements at one later stage; statement {} is {} "
                                     "at stage {}",
                                     i + 1, copy[i] ? "such a copy" : "not such a copy", st[i]));
        return;
      }
    }
  }
  if (!loop.order.empty()) {
    // The copies are issued ahead wherever they are listed; the rest keep the body's order.
    std::optional<int64_t> previous;
    for (size_t i = 0; i < n; ++i) {
      if (copy[i])
        continue;
      if (previous && loop.order[i] <= *previous) {
        diags_.error(at, fmt::format("not supported yet: Pipelined(order=[...]) that reorders "
                                     "the statements other than the copies from global to shared "
                                     "memory (statement {} at {} after one at {})",
                                     i + 1, loop.order[i], *previous));
        return;
      }
      previous = loop.order[i];
    }
  }
}

tile::BufferPtr Sema::findBufferAssignedVar(const std::string &name, LocalScope &scope) {
  for (LocalScope *s = &scope; s; s = s->parent)
    if (auto it = s->names.find(name); it != s->names.end()) {
      if (auto *b = std::get_if<BufferVal>(&it->second))
        return b->buffer;
      return nullptr;
    }
  return nullptr;
}

std::optional<tile::BufferPtr> Sema::allocate(const std::string &name, SourceLoc nameLoc,
                                              const std::string &fn, const ast::Expr &e,
                                              const ast::Call &c, LocalScope &scope) {
  auto buf = std::make_shared<tile::Buffer>();
  buf->id = nextBufferId_++;
  buf->name = name;
  buf->loc = nameLoc;
  if (fn == "alloc_var") {
    auto args = bindArgs(diags_, fn, e, c, {"dtype", "init"}, 1);
    if (!args)
      return std::nullopt;
    auto dt = evalDType(*args->get(0), scope);
    if (!dt)
      return std::nullopt;
    buf->scope = tile::Scope::Var;
    buf->dtype = *dt;
    if (const ast::Expr *init = args->get(1)) {
      tile::Expr v = evalScalar(*init, scope, "an initial value");
      if (!v)
        return std::nullopt;
      buf->initValue = tile::makeCast(v, *dt);
    }
    return buf;
  }
  auto args = bindArgs(diags_, fn, e, c, {"shape", "dtype", "scope"}, 2);
  if (!args)
    return std::nullopt;
  if (args->get(2))
    diags_.warning(args->get(2)->loc(), "the 'scope' argument is ignored; tilec chooses it");
  buf->scope = fn == "alloc_shared"     ? tile::Scope::Shared
               : fn == "alloc_fragment" ? tile::Scope::Fragment
                                        : tile::Scope::Local;
  auto shapeVal = eval(*args->get(0), scope);
  auto dt = evalDType(*args->get(1), scope);
  if (!shapeVal || !dt)
    return std::nullopt;
  buf->dtype = *dt;
  std::vector<Value> dims;
  if (auto *t = std::get_if<std::shared_ptr<TupleVal>>(&*shapeVal))
    dims = (*t)->elts;
  else
    dims.push_back(*shapeVal);
  if (dims.empty() || dims.size() > 4) {
    diags_.error(args->get(0)->loc(), fmt::format("{} takes a shape of 1 to 4 dimensions", fn));
    return std::nullopt;
  }
  int64_t elements = 1;
  for (const Value &d : dims) {
    auto *ev = std::get_if<ExprVal>(&d);
    auto n = ev ? tile::asConstInt(ev->expr) : std::nullopt;
    if (!n || (ev && (isFloat(ev->expr->dtype) || ev->expr->dtype == DType::Bool))) {
      diags_.error(args->get(0)->loc(),
                   fmt::format("the shape of '{}' must be compile-time integer constants", name));
      return std::nullopt;
    }
    if (*n <= 0) {
      diags_.error(args->get(0)->loc(),
                   fmt::format("dimension {} of '{}' must be positive", *n, name));
      return std::nullopt;
    }
    if (__builtin_mul_overflow(elements, *n, &elements) || elements > (int64_t{1} << 24)) {
      diags_.error(args->get(0)->loc(),
                   fmt::format("'{}' is too large: more than 2^24 elements", name));
      return std::nullopt;
    }
    buf->shape.push_back(tile::intImm(*n));
  }
  return buf;
}

void Sema::analyzeAssign(const ast::Stmt &s, const ast::Expr &target, tile::Expr value,
                         LocalScope &scope, tile::Body &out) {
  if (auto *n = std::get_if<ast::Name>(&target.node)) {
    if (scope.exprMacro) {
      scope.names[n->id] = ExprVal{value};
      return;
    }
    for (LocalScope *sc = &scope; sc; sc = sc->parent) {
      auto it = sc->names.find(n->id);
      if (it == sc->names.end())
        continue;
      if (auto *b = std::get_if<BufferVal>(&it->second)) {
        if (b->buffer->scope == tile::Scope::Var) {
          out.push_back(
              {s.loc(), tile::Store{b->buffer, {}, tile::makeCast(value, b->buffer->dtype)}});
          return;
        }
        diags_.error(target.loc(), fmt::format("cannot assign to buffer '{}'; write its elements "
                                               "('{}[i, ...] = ...') or use copy/fill",
                                               n->id, n->id));
        return;
      }
      auto *ev = std::get_if<ExprVal>(&it->second);
      auto *ref = ev ? std::get_if<tile::VarRef>(&ev->expr->op) : nullptr;
      if (ref && ref->var->kind == tile::VarKind::Let) {
        out.push_back({s.loc(), tile::Let{ref->var, tile::makeCast(value, ref->var->dtype)}});
        return;
      }
      const char *what = "a constant";
      if (ref && ref->var->kind == tile::VarKind::LoopVar)
        what = "a loop variable";
      else if (ref && ref->var->kind == tile::VarKind::BlockIndex)
        what = "a block index";
      else if (ref && ref->var->kind == tile::VarKind::ScalarParam)
        what = "a kernel parameter";
      else if (ref && ref->var->kind == tile::VarKind::Dim)
        what = "a symbolic dimension";
      diags_.error(target.loc(), fmt::format("cannot assign to '{}': it is {}", n->id, what));
      return;
    }
    // Top-level names (constants, macros, imported modules, kernels) are not rebound.
    if (scope.module)
      if (auto it = scope.module->names.find(n->id); it != scope.module->names.end()) {
        const Value &tv = it->second;
        const char *what = std::holds_alternative<MacroVal>(tv)     ? "a macro"
                           : std::holds_alternative<ModuleVal>(tv)  ? "a module"
                           : std::holds_alternative<BuiltinVal>(tv) ? "a kernel"
                                                                    : "a constant";
        diags_.error(target.loc(), fmt::format("cannot assign to '{}': it is {}", n->id, what));
        if (auto d = scope.module->defLocs.find(n->id); d != scope.module->defLocs.end())
          diags_.note(d->second, "defined here");
        return;
      }
    tile::VarPtr v = newVar(n->id, value->dtype, tile::VarKind::Let, target.loc());
    scope.names[n->id] = ExprVal{tile::varRef(v, target.loc())};
    out.push_back({s.loc(), tile::Let{v, value}});
    return;
  }
  if (auto *sub = std::get_if<ast::Subscript>(&target.node)) {
    auto loadVal = evalSubscript(target, *sub, scope);
    if (!loadVal)
      return;
    auto &load = std::get<tile::Load>(std::get<ExprVal>(*loadVal).expr->op);
    if (scope.exprMacro) {
      diags_.error(target.loc(), "a macro used as a value cannot write to a buffer");
      return;
    }
    out.push_back({s.loc(), tile::Store{load.buffer, load.indices,
                                        tile::makeCast(value, load.buffer->dtype)}});
    return;
  }
  if (std::holds_alternative<ast::Tuple>(target.node)) {
    diags_.error(target.loc(), "not supported yet: tuple assignment");
    return;
  }
  diags_.error(target.loc(), "invalid assignment target");
}

void Sema::analyzeStmt(const ast::Stmt &s, LocalScope &scope, tile::Body &out) {
  std::visit(
      [&](const auto &n) {
        using T = std::decay_t<decltype(n)>;
        if constexpr (std::is_same_v<T, ast::ExprStmt>) {
          auto *call = std::get_if<ast::Call>(&n.expr->node);
          if (!call) {
            diags_.error(s.loc(), "this expression does nothing; only calls of tile operations "
                                  "and macros may stand alone");
            return;
          }
          auto callee = eval(*call->callee, scope);
          if (!callee)
            return;
          if (auto *b = std::get_if<BuiltinVal>(&*callee)) {
            analyzeOpCall(b->name, *n.expr, *call, scope, out);
            return;
          }
          if (auto *m = std::get_if<MacroVal>(&*callee)) {
            std::optional<LocalScope> inner = bindMacroCall(*m, *call, scope, s.loc(), true);
            if (!inner)
              return;
            ++macroDepth_;
            analyzeBlock(m->def->body, *inner, out);
            --macroDepth_;
            return;
          }
          diags_.error(s.loc(), "this expression does nothing; only calls of tile operations "
                                "and macros may stand alone");
        } else if constexpr (std::is_same_v<T, ast::Assign>) {
          if (auto *call = std::get_if<ast::Call>(&n.value->node)) {
            if (const std::string *fn = calleeBuiltin(*call); fn && fn->rfind("alloc_", 0) == 0) {
              auto *name = std::get_if<ast::Name>(&n.target->node);
              if (!name) {
                diags_.error(n.target->loc(), fmt::format("the result of {} must be bound to a "
                                                          "plain name",
                                                          *fn));
                return;
              }
              if (*fn != "alloc_shared" && *fn != "alloc_fragment" && *fn != "alloc_local" &&
                  *fn != "alloc_var") {
                diags_.error(call->callee->loc(), fmt::format("unknown allocation '{}'", *fn));
                return;
              }
              if (scope.parent || loopDepth_ > 0 || macroDepth_ > 0) {
                diags_.error(n.value->loc(), "buffers are allocated at the top level of the "
                                             "'with Kernel' block");
                return;
              }
              if (scope.names.count(name->id)) {
                diags_.error(n.target->loc(), fmt::format("'{}' is already defined", name->id));
                return;
              }
              auto buf = allocate(name->id, n.target->loc(), *fn, *n.value, *call, scope);
              if (!buf)
                return;
              kernel_->buffers.push_back(*buf);
              scope.names[name->id] = BufferVal{*buf};
              return;
            }
          }
          if (std::holds_alternative<ast::Tuple>(n.target->node)) {
            diags_.error(n.target->loc(), "not supported yet: tuple assignment; assign each name "
                                          "on its own line");
            return;
          }
          tile::Expr v = evalScalar(*n.value, scope, "a scalar value");
          if (!v)
            return;
          analyzeAssign(s, *n.target, v, scope, out);
        } else if constexpr (std::is_same_v<T, ast::AugAssign>) {
          tile::Expr cur = evalScalar(*n.target, scope, "a scalar target");
          tile::Expr v = evalScalar(*n.value, scope, "a scalar value");
          if (!cur || !v)
            return;
          tile::Expr r = binary(n.op, cur, v, s.loc());
          if (!r)
            return;
          analyzeAssign(s, *n.target, r, scope, out);
        } else if constexpr (std::is_same_v<T, ast::For>) {
          analyzeFor(s, n, scope, out);
        } else if constexpr (std::is_same_v<T, ast::With>) {
          diags_.error(s.loc(), "'with' is only allowed once per kernel, as 'with Kernel(...)'");
        } else if constexpr (std::is_same_v<T, ast::If>) {
          tile::Expr c = evalScalar(*n.cond, scope, "a condition");
          if (!c)
            return;
          c = tile::makeCast(c, DType::Bool);
          if (auto cc = tile::asConstInt(c)) {
            // Decided at compile time: the other branch is not compiled (nor checked).
            analyzeBlock(*cc ? n.then : n.orelse, scope, out);
            return;
          }
          tile::If stmt;
          stmt.cond = c;
          analyzeBlock(n.then, scope, stmt.then);
          analyzeBlock(n.orelse, scope, stmt.otherwise);
          out.push_back({s.loc(), std::move(stmt)});
        } else if constexpr (std::is_same_v<T, ast::Pass>) {
        } else if constexpr (std::is_same_v<T, ast::Return>) {
          diags_.error(s.loc(), "'return' outside a macro");
        }
      },
      s.node);
}

void Sema::analyzeFor(const ast::Stmt &s, const ast::For &f, LocalScope &scope, tile::Body &out) {
  auto *call = std::get_if<ast::Call>(&f.iter->node);
  std::optional<Value> callee = call ? eval(*call->callee, scope) : std::nullopt;
  auto *b = callee ? std::get_if<BuiltinVal>(&*callee) : nullptr;
  if (!b || (b->name != "Parallel" && b->name != "Pipelined" && b->name != "serial" &&
             b->name != "range" && b->name != "unroll")) {
    if (call && !callee)
      return;
    diags_.error(f.iter->loc(), "a for loop iterates over Parallel(...), Pipelined(...), "
                                "serial(...), range(...) or unroll(...)");
    return;
  }
  if (loopDepth_ >= 16) {
    diags_.error(s.loc(), "loops nested too deeply (limit 16)");
    return;
  }
  tile::For loop;
  const std::string &kind = b->name;
  auto inParallel = [&]() {
    for (LocalScope *sc = &scope; sc; sc = sc->parent)
      if (sc->names.count("<parallel>"))
        return true;
    return false;
  };
  if (kind == "Parallel") {
    loop.kind = tile::LoopKind::Parallel;
    if (inParallel()) {
      diags_.error(s.loc(), "not supported yet: a Parallel loop nested in a Parallel loop; give "
                            "all extents to one Parallel(...)");
      return;
    }
    if (call->args.empty() || call->args.size() > 4 || !call->kwargs.empty()) {
      diags_.error(f.iter->loc(), "Parallel takes 1 to 4 extents and no keyword arguments");
      return;
    }
    if (call->args.size() != f.vars.size()) {
      diags_.error(f.vars.front().loc,
                   fmt::format("Parallel has {} extent(s) but the loop names {} variable(s)",
                               call->args.size(), f.vars.size()));
      return;
    }
    for (const ast::ExprPtr &a : call->args) {
      auto n = evalConstInt(*a, scope, "a Parallel extent");
      if (!n)
        return;
      if (*n <= 0 || *n > (1 << 24)) {
        diags_.error(a->loc(), fmt::format("Parallel extent must be in 1 .. 2^24, got {}", *n));
        return;
      }
      loop.begins.push_back(tile::intImm(0));
      loop.extents.push_back(tile::intImm(*n));
    }
  } else {
    if (f.vars.size() != 1) {
      diags_.error(f.vars.back().loc, fmt::format("{} loops have one loop variable", kind));
      return;
    }
    if (kind == "Pipelined") {
      loop.kind = tile::LoopKind::Pipelined;
      auto args = bindArgs(diags_, kind, *f.iter, *call,
                           {"extent", "num_stages", "order", "stage", "group", "sync"}, 1);
      if (!args)
        return;
      tile::Expr ext = evalInt(*args->get(0), scope, "the Pipelined extent");
      if (!ext)
        return;
      loop.begins.push_back(tile::intImm(0));
      loop.extents.push_back(ext);
      if (const ast::Expr *st = args->get(1)) {
        auto n = evalConstInt(*st, scope, "num_stages");
        if (!n)
          return;
        if (*n < 0 || *n > 8) {
          diags_.error(st->loc(), fmt::format("num_stages must be in 0 .. 8, got {}", *n));
          return;
        }
        loop.numStages = static_cast<int>(std::max<int64_t>(*n, 1));
      }
      for (int which = 2; which <= 3; ++which) {
        const ast::Expr *le = args->get(which);
        if (!le)
          continue;
        auto v = eval(*le, scope);
        if (!v)
          return;
        auto *t = std::get_if<std::shared_ptr<TupleVal>>(&*v);
        std::vector<int64_t> vals;
        for (size_t i = 0; t && i < (*t)->elts.size(); ++i) {
          auto *ev = std::get_if<ExprVal>(&(*t)->elts[i]);
          auto c = ev ? tile::asConstInt(ev->expr) : std::nullopt;
          if (!c) {
            t = nullptr;
            break;
          }
          vals.push_back(*c);
        }
        const char *nm = which == 2 ? "order" : "stage";
        if (!t) {
          diags_.error(le->loc(), fmt::format("'{}' must be a list of integer constants", nm));
          return;
        }
        if (vals.size() != f.body.size()) {
          diags_.error(le->loc(), fmt::format("'{}' has {} entries but the loop body has {} "
                                              "statements",
                                              nm, vals.size(), f.body.size()));
          return;
        }
        (which == 2 ? loop.order : loop.stage) = std::move(vals);
      }
      for (int which = 4; which <= 5; ++which)
        if (args->get(which))
          diags_.error(args->get(which)->loc(), fmt::format("not supported yet: Pipelined({}=...)",
                                                            which == 4 ? "group" : "sync"));
    } else {
      loop.kind = kind == "unroll" ? tile::LoopKind::Unroll : tile::LoopKind::Serial;
      if (call->args.empty() || call->args.size() > 3 || !call->kwargs.empty()) {
        diags_.error(f.iter->loc(), fmt::format("{}(...) takes 1 to 3 arguments: (stop), (start, "
                                                "stop) or (start, stop, step)",
                                                kind));
        return;
      }
      tile::Expr begin = tile::intImm(0), end, step = tile::intImm(1);
      if (call->args.size() == 1) {
        end = evalInt(*call->args[0], scope, "the loop bound");
      } else {
        begin = evalInt(*call->args[0], scope, "the loop start");
        end = evalInt(*call->args[1], scope, "the loop bound");
      }
      if (!begin || !end)
        return;
      int64_t st = 1;
      if (call->args.size() == 3) {
        auto c = evalConstInt(*call->args[2], scope, "the loop step");
        if (!c)
          return;
        if (*c == 0) {
          diags_.error(call->args[2]->loc(), "the loop step cannot be zero");
          return;
        }
        st = *c;
        step = tile::intImm(st);
      }
      // Iteration count: ceil((end - begin) / step), never negative.
      tile::Expr span = st > 0 ? tile::makeBinary(tile::BinOp::Sub, end, begin)
                               : tile::makeBinary(tile::BinOp::Sub, begin, end);
      int64_t ast = st > 0 ? st : -st;
      tile::Expr count = tile::makeBinary(
          tile::BinOp::FloorDiv, tile::makeBinary(tile::BinOp::Add, span, tile::intImm(ast - 1)),
          tile::intImm(ast));
      count = tile::makeBinary(tile::BinOp::Max, count, tile::intImm(0));
      if (loop.kind == tile::LoopKind::Unroll) {
        auto c = tile::asConstInt(count);
        if (!c) {
          diags_.error(f.iter->loc(), "unroll needs a compile-time trip count");
          return;
        }
        if (*c > 1024) {
          diags_.error(f.iter->loc(),
                       fmt::format("unroll of {} iterations; the limit is 1024", *c));
          return;
        }
        if (*c > 0 && unrollCopies_ * *c > kMaxUnrolledCopies) {
          diags_.error(f.iter->loc(),
                       fmt::format("unroll of {} iterations inside unrolled loops makes {} copies "
                                   "of the body; the limit is {}",
                                   *c, unrollCopies_ * *c, kMaxUnrolledCopies));
          return;
        }
      }
      loop.begins.push_back(begin);
      loop.extents.push_back(count);
      loop.step = st == 1 ? nullptr : step;
    }
  }
  LocalScope inner;
  inner.parent = &scope;
  inner.module = scope.module;
  if (loop.kind == tile::LoopKind::Parallel)
    inner.names["<parallel>"] = BuiltinVal{"<parallel>"};
  for (const ast::LoopVar &v : f.vars) {
    if (inner.names.count(v.name)) {
      diags_.error(v.loc, fmt::format("loop variable '{}' named twice", v.name));
      return;
    }
    tile::VarPtr var = newVar(v.name, DType::Int32, tile::VarKind::LoopVar, v.loc);
    loop.vars.push_back(var);
    inner.names[v.name] = ExprVal{tile::varRef(var, v.loc)};
  }
  int64_t outerCopies = unrollCopies_;
  if (loop.kind == tile::LoopKind::Unroll)
    if (auto c = tile::asConstInt(loop.extents[0]); c && *c > 0)
      unrollCopies_ *= *c;
  ++loopDepth_;
  std::vector<size_t> ends;
  analyzeBlock(f.body, inner, loop.body, &ends);
  --loopDepth_;
  unrollCopies_ = outerCopies;
  if (!loop.order.empty() || !loop.stage.empty())
    checkSchedule(f, ends, loop);
  out.push_back({s.loc(), std::move(loop)});
}

} // namespace tilec::sema
