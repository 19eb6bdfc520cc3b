// Tile operations: operand regions, shape agreement and the checks each operation needs.
#include "sema/SemaImpl.h"

#include <fmt/format.h>

namespace tilec::sema {

std::optional<BoundArgs> bindArgs(DiagnosticEngine &diags, const std::string &fn,
                                  const ast::Expr &e, const ast::Call &c,
                                  const std::vector<std::string> &params, size_t required) {
  BoundArgs b;
  b.args.assign(params.size(), nullptr);
  if (c.args.size() > params.size()) {
    diags.error(c.args[params.size()]->loc(),
                fmt::format("'{}' takes at most {} argument(s), {} given", fn, params.size(),
                            c.args.size()));
    return std::nullopt;
  }
  for (size_t i = 0; i < c.args.size(); ++i)
    b.args[i] = c.args[i].get();
  for (const ast::KeywordArg &kw : c.kwargs) {
    size_t i = 0;
    while (i < params.size() && params[i] != kw.name)
      ++i;
    if (i == params.size()) {
      std::string list;
      for (const std::string &p : params)
        list += (list.empty() ? "" : ", ") + p;
      diags.error(kw.loc,
                  fmt::format("'{}' has no argument '{}' (its arguments: {})", fn, kw.name, list));
      return std::nullopt;
    }
    if (b.args[i]) {
      diags.error(kw.loc, fmt::format("argument '{}' of '{}' given twice", kw.name, fn));
      return std::nullopt;
    }
    b.args[i] = kw.value.get();
  }
  for (size_t i = 0; i < required; ++i)
    if (!b.args[i]) {
      diags.error(e.loc(), fmt::format("'{}' is missing argument '{}'", fn, params[i]));
      return std::nullopt;
    }
  return b;
}

std::string shapeText(const std::vector<tile::Expr> &shape) {
  std::string s = "[";
  for (size_t i = 0; i < shape.size(); ++i)
    s += (i ? ", " : "") + tile::print(shape[i]);
  return s + "]";
}

std::optional<tile::Region> Sema::evalRegion(const ast::Expr &e, LocalScope &scope, bool &corner) {
  corner = false;
  const ast::Expr *baseExpr = &e;
  auto *sub = std::get_if<ast::Subscript>(&e.node);
  if (sub)
    baseExpr = sub->base.get();
  auto base = eval(*baseExpr, scope);
  if (!base)
    return std::nullopt;
  auto *bv = std::get_if<BufferVal>(&*base);
  if (!bv) {
    diags_.error(e.loc(), "expected a buffer or a region of one here");
    return std::nullopt;
  }
  const tile::BufferPtr &buf = bv->buffer;
  tile::Region r;
  r.buffer = buf;
  r.loc = e.loc();
  if (buf->scope == tile::Scope::Var) {
    diags_.error(e.loc(), fmt::format("'{}' is an alloc_var scalar, not a tile", buf->name));
    return std::nullopt;
  }
  if (!sub) {
    for (const tile::Expr &d : buf->shape)
      r.dims.push_back({tile::intImm(0), d, false});
    return r;
  }
  if (sub->indices.size() != buf->shape.size()) {
    diags_.error(e.loc(), fmt::format("'{}' has {} dimension(s) but {} index(es) were given",
                                      buf->name, buf->shape.size(), sub->indices.size()));
    return std::nullopt;
  }
  bool anySlice = false;
  for (const ast::ExprPtr &i : sub->indices)
    anySlice = anySlice || std::holds_alternative<ast::Slice>(i->node);
  corner = !anySlice;
  for (size_t d = 0; d < sub->indices.size(); ++d) {
    const ast::Expr &ie = *sub->indices[d];
    if (auto *sl = std::get_if<ast::Slice>(&ie.node)) {
      tile::Expr lo = sl->lo ? evalInt(*sl->lo, scope, "a slice start") : tile::intImm(0);
      tile::Expr hi = sl->hi ? evalInt(*sl->hi, scope, "a slice end") : buf->shape[d];
      if (!lo || !hi)
        return std::nullopt;
      tile::Expr extent;
      if (auto diff = tile::constDifference(hi, lo)) {
        if (*diff <= 0) {
          diags_.error(ie.loc(), fmt::format("empty slice: its extent is {}", *diff));
          return std::nullopt;
        }
        extent = tile::intImm(*diff);
      } else {
        extent = tile::makeBinary(tile::BinOp::Sub, hi, lo);
      }
      r.dims.push_back({lo, extent, false});
    } else {
      tile::Expr i = evalInt(ie, scope, "an index");
      if (!i)
        return std::nullopt;
      r.dims.push_back({i, corner ? nullptr : tile::intImm(1), !corner});
    }
  }
  return r;
}

bool Sema::completeRegions(tile::Region &a, bool cornerA, tile::Region &b, bool cornerB,
                           SourceLoc loc) {
  if (cornerA && cornerB) {
    diags_.error(loc, "both operands are single positions; give at least one as a whole buffer "
                      "or a sliced region so that the tile's extent is known");
    return false;
  }
  auto fill = [&](tile::Region &corner, const tile::Region &other) {
    std::vector<tile::Expr> shape = other.shape();
    size_t rank = corner.dims.size();
    if (shape.size() > rank) {
      diags_.error(corner.loc, fmt::format("'{}' has {} dimension(s) but the other operand is a "
                                           "{}-D tile",
                                           corner.buffer->name, rank, shape.size()));
      return false;
    }
    // Leading dimensions the other operand lacks are taken one at a time and dropped.
    size_t lead = rank - shape.size();
    for (size_t d = 0; d < rank; ++d) {
      if (d < lead) {
        corner.dims[d].extent = tile::intImm(1);
        corner.dims[d].dropped = true;
      } else {
        corner.dims[d].extent = shape[d - lead];
      }
    }
    return true;
  };
  if (cornerA)
    return fill(a, b);
  if (cornerB)
    return fill(b, a);
  return true;
}

bool Sema::checkSameShape(const tile::Region &a, const tile::Region &b, SourceLoc loc,
                          const char *op) {
  std::vector<tile::Expr> sa = a.shape(), sb = b.shape();
  bool ok = sa.size() == sb.size();
  for (size_t i = 0; ok && i < sa.size(); ++i) {
    auto ca = tile::asConstInt(sa[i]), cb = tile::asConstInt(sb[i]);
    if (ca && cb)
      ok = *ca == *cb;
    else if (!ca && !cb)
      ok = tile::constDifference(sa[i], sb[i]).value_or(0) == 0;
  }
  if (!ok)
    diags_.error(loc, fmt::format("{}: the shapes of '{}' {} and '{}' {} do not match", op,
                                  a.buffer->name, shapeText(sa), b.buffer->name, shapeText(sb)));
  return ok;
}

bool insideParallel(const LocalScope &scope) {
  for (const LocalScope *sc = &scope; sc; sc = sc->parent)
    if (sc->names.count("<parallel>"))
      return true;
  return false;
}

const std::vector<TileOpInfo> &tileOps() {
  // print and the element form of the atomics act on one element, so a Parallel loop's
  // iterations can each run them.
  static const std::vector<TileOpInfo> ops = {
      {"copy", &Sema::analyzeCopy},
      {"clear", &Sema::analyzeFill},
      {"fill", &Sema::analyzeFill},
      {"gemm", &Sema::analyzeGemm},
      {"reduce_max", &Sema::analyzeReduce},
      {"reduce_sum", &Sema::analyzeReduce},
      {"reduce_min", &Sema::analyzeReduce},
      {"reduce_absmax", &Sema::analyzeReduce},
      {"reduce_abssum", &Sema::analyzeReduce},
      {"cumsum", &Sema::analyzeCumsum},
      {"atomic_add", &Sema::analyzeAtomic, true},
      {"atomic_max", &Sema::analyzeAtomic, true},
      {"atomic_min", &Sema::analyzeAtomic, true},
      {"use_swizzle", &Sema::analyzeUseSwizzle},
      {"annotate_layout", &Sema::analyzeAnnotateLayout},
      {"print", &Sema::analyzePrint, true},
      {"sync_threads", &Sema::analyzeSyncThreads},
  };
  return ops;
}

const TileOpInfo *findTileOp(std::string_view name) {
  for (const TileOpInfo &op : tileOps())
    if (op.name == name)
      return &op;
  return nullptr;
}

std::optional<bool> Sema::constBool(LocalScope &scope, const ast::Expr *x, bool dflt,
                                    const char *what) {
  if (!x)
    return dflt;
  auto val = eval(*x, scope);
  if (!val)
    return std::nullopt;
  auto *ev = std::get_if<ExprVal>(&*val);
  tile::Expr v = ev ? ev->expr : nullptr;
  auto cv = v ? tile::asConstInt(tile::makeCast(v, DType::Bool)) : std::nullopt;
  if (!cv || v->dtype != DType::Bool) {
    diags_.error(x->loc(), fmt::format("{} must be True or False", what));
    return std::nullopt;
  }
  return *cv != 0;
}

void Sema::analyzeOpCall(const std::string &name, const ast::Expr &e, const ast::Call &c,
                         LocalScope &scope, tile::Body &out) {
  SourceLoc loc = e.loc();
  const TileOpInfo *op = findTileOp(name);
  if (insideParallel(scope) && !(op && op->inParallel)) {
    diags_.error(loc, fmt::format("'{}' cannot be used inside a Parallel loop", name));
    return;
  }
  if (scope.exprMacro) {
    diags_.error(loc, fmt::format("'{}' in a macro used as a value", name));
    return;
  }
  if (op)
    return (this->*op->analyze)(name, e, c, scope, out);
  if (name == "Kernel") {
    diags_.error(loc, "'Kernel' can only be used as 'with Kernel(...) as ...'");
    return;
  }
  // Everything else is an expression builtin whose value would be thrown away.
  if (evalBuiltinCall(name, e, c, scope))
    diags_.error(loc, fmt::format("the result of '{}' is unused", name));
}

void Sema::analyzeCopy(const std::string &name, const ast::Expr &e, const ast::Call &c,
                       LocalScope &scope, tile::Body &out) {
  SourceLoc loc = e.loc();
  auto args = bindArgs(diags_, name, e, c, {"src", "dst", "disable_tma", "coalesced_width"}, 2);
  if (!args)
    return;
  bool ca = false, cb = false;
  auto src = evalRegion(*args->get(0), scope, ca);
  auto dst = evalRegion(*args->get(1), scope, cb);
  if (!src || !dst || !completeRegions(*src, ca, *dst, cb, loc))
    return;
  if (!checkSameShape(*src, *dst, loc, "copy"))
    return;
  if (src->buffer->scope == tile::Scope::Global && dst->buffer->scope == tile::Scope::Global) {
    diags_.error(loc, "not supported yet: copy from global memory to global memory");
    return;
  }
  if (args->get(2) || args->get(3))
    diags_.warning(loc, "copy's disable_tma and coalesced_width are hints tilec ignores");
  out.push_back({loc, tile::Copy{std::move(*src), std::move(*dst)}});
}

void Sema::analyzeFill(const std::string &name, const ast::Expr &e, const ast::Call &c,
                       LocalScope &scope, tile::Body &out) {
  SourceLoc loc = e.loc();
  auto args = name == "clear" ? bindArgs(diags_, name, e, c, {"buffer"}, 1)
                              : bindArgs(diags_, name, e, c, {"buffer", "value"}, 2);
  if (!args)
    return;
  bool corner = false;
  auto dst = evalRegion(*args->get(0), scope, corner);
  if (!dst)
    return;
  if (corner) {
    diags_.error(args->get(0)->loc(), fmt::format("{} takes a buffer or a sliced region", name));
    return;
  }
  tile::Expr v = name == "clear" ? tile::intImm(0) : evalScalar(*args->get(1), scope, "a value");
  if (!v)
    return;
  v = tile::makeCast(v, dst->buffer->dtype);
  out.push_back({loc, tile::Fill{std::move(*dst), v}});
}

void Sema::analyzeGemm(const std::string &name, const ast::Expr &e, const ast::Call &c,
                       LocalScope &scope, tile::Body &out) {
  SourceLoc loc = e.loc();
  auto args = bindArgs(
      diags_, name, e, c,
      {"A", "B", "C", "transpose_A", "transpose_B", "policy", "clear_accum", "k_pack", "wg_wait"},
      3);
  if (!args)
    return;
  tile::Gemm g;
  bool corner = false;
  std::optional<tile::Region> regs[3];
  const char *names[3] = {"A", "B", "C"};
  for (int i = 0; i < 3; ++i) {
    regs[i] = evalRegion(*args->get(i), scope, corner);
    if (!regs[i])
      return;
    if (corner) {
      diags_.error(args->get(i)->loc(), "gemm operands are whole buffers or sliced regions");
      return;
    }
    if (regs[i]->shape().size() != 2) {
      diags_.error(args->get(i)->loc(),
                   fmt::format("gemm operand {} must be 2-D, '{}' is {}", names[i],
                               regs[i]->buffer->name, shapeText(regs[i]->shape())));
      return;
    }
  }
  auto sa = regs[0]->buffer->scope, sb = regs[1]->buffer->scope, sc = regs[2]->buffer->scope;
  if (sa != tile::Scope::Shared && sa != tile::Scope::Fragment) {
    diags_.error(args->get(0)->loc(), fmt::format("gemm operand A must be a shared or fragment "
                                                  "buffer, '{}' is {}",
                                                  regs[0]->buffer->name, tile::scopeName(sa)));
    return;
  }
  if (sb != tile::Scope::Shared && sb != tile::Scope::Fragment) {
    diags_.error(args->get(1)->loc(), fmt::format("gemm operand B must be a shared or fragment "
                                                  "buffer, '{}' is {}",
                                                  regs[1]->buffer->name, tile::scopeName(sb)));
    return;
  }
  if (sc != tile::Scope::Fragment) {
    diags_.error(args->get(2)->loc(), fmt::format("gemm accumulator C must be a fragment, '{}' "
                                                  "is {}",
                                                  regs[2]->buffer->name, tile::scopeName(sc)));
    return;
  }
  auto ta = constBool(scope, args->get(3), false, "transpose_A");
  auto tb = constBool(scope, args->get(4), false, "transpose_B");
  auto ac = constBool(scope, args->get(6), false, "clear_accum");
  if (!ta || !tb || !ac)
    return;
  g.transA = *ta;
  g.transB = *tb;
  g.clearAccum = *ac;
  if (const ast::Expr *p = args->get(5)) {
    auto v = eval(*p, scope);
    if (!v)
      return;
    auto *pv = std::get_if<PolicyVal>(&*v);
    if (!pv) {
      diags_.error(p->loc(), "policy must be GemmWarpPolicy.Square, .FullRow or .FullCol");
      return;
    }
    g.policy = pv->policy;
  }
  for (int i : {7, 8})
    if (args->get(i))
      diags_.warning(args->get(i)->loc(), "gemm's k_pack and wg_wait are hints tilec ignores");
  auto dims = [](const tile::Region &r) {
    auto s = r.shape();
    return std::make_pair(tile::asConstInt(s[0]).value_or(-1), tile::asConstInt(s[1]).value_or(-1));
  };
  auto [a0, a1] = dims(*regs[0]);
  auto [b0, b1] = dims(*regs[1]);
  auto [c0, c1] = dims(*regs[2]);
  int64_t m = g.transA ? a1 : a0, ka = g.transA ? a0 : a1;
  int64_t kb = g.transB ? b1 : b0, n = g.transB ? b0 : b1;
  if (ka != kb || m != c0 || n != c1) {
    diags_.error(loc, fmt::format("gemm shapes do not agree: A{} is {}, B{} is {}, C is {}; "
                                  "expected A (M, K), B (K, N), C (M, N)",
                                  g.transA ? "^T" : "", shapeText(regs[0]->shape()),
                                  g.transB ? "^T" : "", shapeText(regs[1]->shape()),
                                  shapeText(regs[2]->shape())));
    return;
  }
  // float8 tensor cores take e4m3 and e5m2 operands in any combination.
  DType da = regs[0]->buffer->dtype, db = regs[1]->buffer->dtype;
  if (da != db && !(isFloat8(da) && isFloat8(db))) {
    diags_.error(loc,
                 fmt::format("gemm operands A ({}) and B ({}) must have the same dtype (float8 "
                             "e4m3 and e5m2 may mix)",
                             dtypeName(regs[0]->buffer->dtype), dtypeName(regs[1]->buffer->dtype)));
    return;
  }
  g.a = std::move(*regs[0]);
  g.b = std::move(*regs[1]);
  g.c = std::move(*regs[2]);
  out.push_back({loc, std::move(g)});
}

void Sema::analyzeReduce(const std::string &name, const ast::Expr &e, const ast::Call &c,
                         LocalScope &scope, tile::Body &out) {
  SourceLoc loc = e.loc();
  static const std::map<std::string, tile::ReduceKind> kinds = {
      {"reduce_max", tile::ReduceKind::Max},
      {"reduce_sum", tile::ReduceKind::Sum},
      {"reduce_min", tile::ReduceKind::Min},
      {"reduce_absmax", tile::ReduceKind::AbsMax},
      {"reduce_abssum", tile::ReduceKind::AbsSum}};
  auto args = bindArgs(diags_, name, e, c, {"buffer", "out", "dim", "clear"}, 2);
  if (!args)
    return;
  bool ca = false, cb = false;
  auto src = evalRegion(*args->get(0), scope, ca);
  auto dst = evalRegion(*args->get(1), scope, cb);
  if (!src || !dst)
    return;
  if (ca || cb) {
    diags_.error(args->get(ca ? 0 : 1)->loc(),
                 fmt::format("{} takes whole buffers or sliced regions", name));
    return;
  }
  int64_t rank = static_cast<int64_t>(src->shape().size());
  int64_t dim = -1;
  if (args->get(2)) {
    auto d = evalConstInt(*args->get(2), scope, "dim");
    if (!d)
      return;
    dim = *d;
  }
  if (dim < -rank || dim >= rank) {
    diags_.error(
        args->get(2) ? args->get(2)->loc() : loc,
        fmt::format("dim {} is out of range for the {}-D '{}'", dim, rank, src->buffer->name));
    return;
  }
  if (dim < 0)
    dim += rank;
  auto clr = constBool(scope, args->get(3), true, "clear");
  if (!clr)
    return;
  std::vector<tile::Expr> expect = src->shape();
  expect.erase(expect.begin() + dim);
  std::vector<tile::Expr> got = dst->shape();
  bool ok = expect.size() == got.size();
  for (size_t i = 0; ok && i < got.size(); ++i)
    ok = tile::asConstInt(expect[i]) == tile::asConstInt(got[i]);
  if (!ok) {
    diags_.error(loc, fmt::format("{} over dim {} of '{}' {} gives shape {}, but '{}' is {}", name,
                                  dim, src->buffer->name, shapeText(src->shape()),
                                  shapeText(expect), dst->buffer->name, shapeText(got)));
    return;
  }
  for (const tile::Region *r : {&*src, &*dst})
    if (r->buffer->scope == tile::Scope::Global) {
      diags_.error(r->loc, fmt::format("{} works on shared or fragment buffers; copy '{}' in "
                                       "first",
                                       name, r->buffer->name));
      return;
    }
  out.push_back({loc, tile::Reduce{kinds.at(name), std::move(*src), std::move(*dst),
                                   static_cast<int>(dim), *clr}});
}

void Sema::analyzeCumsum(const std::string &name, const ast::Expr &e, const ast::Call &c,
                         LocalScope &scope, tile::Body &out) {
  SourceLoc loc = e.loc();
  auto args = bindArgs(diags_, name, e, c, {"src", "dst", "dim", "reverse"}, 1);
  if (!args)
    return;
  bool ca = false, cb = false;
  auto src = evalRegion(*args->get(0), scope, ca);
  if (!src)
    return;
  std::optional<tile::Region> dst = src;
  if (args->get(1)) {
    dst = evalRegion(*args->get(1), scope, cb);
    if (!dst)
      return;
  }
  if (ca || cb) {
    diags_.error(args->get(ca ? 0 : 1)->loc(), "cumsum takes whole buffers or sliced regions");
    return;
  }
  if (!checkSameShape(*src, *dst, loc, "cumsum"))
    return;
  int64_t rank = static_cast<int64_t>(src->shape().size());
  int64_t dim = 0;
  if (args->get(2)) {
    auto d = evalConstInt(*args->get(2), scope, "dim");
    if (!d)
      return;
    dim = *d;
  }
  if (dim < -rank || dim >= rank) {
    diags_.error(args->get(2)->loc(), fmt::format("dim {} is out of range for the {}-D '{}'", dim,
                                                  rank, src->buffer->name));
    return;
  }
  auto rev = constBool(scope, args->get(3), false, "reverse");
  if (!rev)
    return;
  out.push_back({loc, tile::Cumsum{std::move(*src), std::move(*dst),
                                   static_cast<int>(dim < 0 ? dim + rank : dim), *rev}});
}

void Sema::analyzeAtomic(const std::string &name, const ast::Expr &e, const ast::Call &c,
                         LocalScope &scope, tile::Body &out) {
  SourceLoc loc = e.loc();
  auto args = bindArgs(diags_, name, e, c, {"dst", "value"}, 2);
  if (!args)
    return;
  tile::Atomic op;
  // The table registers this member under "atomic_" + each AtomicOp's name.
  op.op = *atomicOpByName(std::string_view(name).substr(std::string_view("atomic_").size()));
  auto *sub = std::get_if<ast::Subscript>(&args->get(0)->node);
  bool elementForm = sub != nullptr;
  if (sub)
    for (const ast::ExprPtr &i : sub->indices)
      elementForm = elementForm && !std::holds_alternative<ast::Slice>(i->node);
  // A sliced value (`F[0:64]`) is a region; evaluating it as a value would reject the slice.
  bool valueSliced = false;
  if (auto *vs = std::get_if<ast::Subscript>(&args->get(1)->node))
    for (const ast::ExprPtr &i : vs->indices)
      valueSliced = valueSliced || std::holds_alternative<ast::Slice>(i->node);
  std::optional<Value> valueVal;
  if (!valueSliced) {
    valueVal = eval(*args->get(1), scope);
    if (!valueVal)
      return;
  }
  bool valueIsScalar = valueVal && std::holds_alternative<ExprVal>(*valueVal);
  if (insideParallel(scope) && !(elementForm && valueIsScalar)) {
    diags_.error(loc, fmt::format("{} inside a Parallel loop {} one element per iteration: "
                                  "{}(C[i, j], value)",
                                  name, atomicOpVerb(op.op), name));
    return;
  }
  if (elementForm && valueIsScalar) {
    auto ld = evalSubscript(*args->get(0), *sub, scope);
    if (!ld)
      return;
    auto &load = std::get<tile::Load>(std::get<ExprVal>(*ld).expr->op);
    bool corner = false;
    auto dst = evalRegion(*args->get(0), scope, corner);
    if (!dst)
      return;
    for (auto &d : dst->dims) {
      d.extent = tile::intImm(1);
      d.dropped = false;
    }
    op.dst = std::move(*dst);
    op.indices = load.indices;
    op.value = tile::makeCast(std::get<ExprVal>(*valueVal).expr, load.buffer->dtype);
  } else {
    bool ca = false, cb = false;
    auto dst = evalRegion(*args->get(0), scope, ca);
    auto src = evalRegion(*args->get(1), scope, cb);
    if (!dst || !src || !completeRegions(*dst, ca, *src, cb, loc) ||
        !checkSameShape(*src, *dst, loc, name.c_str()))
      return;
    op.dst = std::move(*dst);
    op.src = std::move(*src);
  }
  if (op.dst.buffer->scope != tile::Scope::Global && op.dst.buffer->scope != tile::Scope::Shared) {
    diags_.error(args->get(0)->loc(), fmt::format("{} writes to a global or shared buffer", name));
    return;
  }
  out.push_back({loc, std::move(op)});
}

void Sema::analyzeUseSwizzle(const std::string &name, const ast::Expr &e, const ast::Call &c,
                             LocalScope &scope, tile::Body &out) {
  SourceLoc loc = e.loc();
  auto args = bindArgs(diags_, name, e, c, {"panel_size", "order", "enable"}, 1);
  if (!args)
    return;
  auto p = evalConstInt(*args->get(0), scope, "panel_size");
  if (!p)
    return;
  if (*p <= 0 || *p > 65535) {
    diags_.error(args->get(0)->loc(), fmt::format("panel_size must be positive, got {}", *p));
    return;
  }
  bool col = false;
  if (const ast::Expr *o = args->get(1)) {
    auto v = eval(*o, scope);
    if (!v)
      return;
    auto *sv = std::get_if<StrVal>(&*v);
    if (!sv || (sv->value != "row" && sv->value != "col")) {
      diags_.error(o->loc(), "order must be \"row\" or \"col\"");
      return;
    }
    col = sv->value == "col";
  }
  auto en = constBool(scope, args->get(2), true, "enable");
  if (!en)
    return;
  out.push_back({loc, tile::UseSwizzle{*p, col, *en}});
}

void Sema::analyzeSyncThreads(const std::string &name, const ast::Expr &e, const ast::Call &c,
                              LocalScope &, tile::Body &out) {
  if (!bindArgs(diags_, name, e, c, {}, 0))
    return;
  out.push_back({e.loc(), tile::SyncThreads{}});
}

void Sema::analyzeAnnotateLayout(const std::string &name, const ast::Expr &e, const ast::Call &c,
                                 LocalScope &scope, tile::Body &out) {
  SourceLoc loc = e.loc();
  auto args = bindArgs(diags_, name, e, c, {"layout_map"}, 1);
  if (!args)
    return;
  auto *dict = std::get_if<ast::Dict>(&args->get(0)->node);
  if (!dict) {
    diags_.error(args->get(0)->loc(), "annotate_layout takes a dict {buffer: layout}");
    return;
  }
  for (const ast::DictEntry &entry : dict->entries) {
    auto k = eval(*entry.key, scope);
    if (!k)
      return;
    auto *kb = std::get_if<BufferVal>(&*k);
    if (!kb || kb->buffer->scope != tile::Scope::Shared) {
      diags_.error(entry.key->loc(), "annotate_layout keys are shared buffers");
      return;
    }
    // Judged by the callee's spelling: other layout constructors are not builtins, and
    // "undeclared name" would hide what is really missing.
    auto *vc = std::get_if<ast::Call>(&entry.value->node);
    std::string fname;
    if (vc) {
      if (auto *n = std::get_if<ast::Name>(&vc->callee->node))
        fname = n->id;
      else if (auto *a = std::get_if<ast::Attribute>(&vc->callee->node))
        if (auto *b = std::get_if<ast::Name>(&a->base->node); b && b->id == "T")
          fname = a->attr;
    }
    if (fname != "make_swizzled_layout" || vc->args.size() != 1 || !vc->kwargs.empty()) {
      diags_.error(entry.value->loc(), "not supported yet: layouts other than "
                                       "make_swizzled_layout(buffer)");
      return;
    }
    auto arg = eval(*vc->args[0], scope);
    auto *ab = arg ? std::get_if<BufferVal>(&*arg) : nullptr;
    if (!ab || ab->buffer != kb->buffer) {
      diags_.error(vc->args[0]->loc(),
                   fmt::format("make_swizzled_layout must name the annotated buffer '{}'",
                               kb->buffer->name));
      return;
    }
    out.push_back({loc, tile::AnnotateLayout{kb->buffer, "swizzled"}});
  }
}

void Sema::analyzePrint(const std::string &name, const ast::Expr &e, const ast::Call &c,
                        LocalScope &scope, tile::Body &out) {
  SourceLoc loc = e.loc();
  auto args = bindArgs(diags_, name, e, c, {"obj", "msg"}, 1);
  if (!args)
    return;
  tile::Print p;
  if (const ast::Expr *m = args->get(1)) {
    auto v = eval(*m, scope);
    if (!v)
      return;
    auto *sv = std::get_if<StrVal>(&*v);
    if (!sv) {
      diags_.error(m->loc(), "msg must be a string");
      return;
    }
    p.message = sv->value;
  }
  // A sliced region (`print(S[0:64])`) is printed as a tile; evaluating it as a value would
  // reject the slice.
  bool sliced = false;
  if (auto *sub = std::get_if<ast::Subscript>(&args->get(0)->node))
    for (const ast::ExprPtr &i : sub->indices)
      sliced = sliced || std::holds_alternative<ast::Slice>(i->node);
  if (sliced) {
    bool corner = false;
    p.buffer = evalRegion(*args->get(0), scope, corner);
    if (!p.buffer)
      return;
    out.push_back({loc, std::move(p)});
    return;
  }
  auto v = eval(*args->get(0), scope);
  if (!v)
    return;
  if (auto *bv = std::get_if<BufferVal>(&*v); bv && bv->buffer->scope != tile::Scope::Var) {
    bool corner = false;
    p.buffer = evalRegion(*args->get(0), scope, corner);
    if (!p.buffer)
      return;
  } else {
    p.value = toScalar(*v, args->get(0)->loc(), "a buffer or a scalar");
    if (!p.value)
      return;
  }
  out.push_back({loc, std::move(p)});
}

} // namespace tilec::sema
