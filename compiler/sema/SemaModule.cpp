// Top level: imports, constants and -D overrides, macros, kernel signatures.
#include "sema/SemaImpl.h"
#include "syntax/Parser.h"
#include "target/TargetInfo.h"
#include "tileir/OpInterface.h"

#include <fmt/format.h>

#include <charconv>
#include <filesystem>
#include <fstream>
#include <sstream>

namespace tilec::sema {

std::optional<tile::Program> analyze(const ast::Module &main, SourceManager &sm,
                                     DiagnosticEngine &diags, const Options &opts) {
  Sema s(sm, diags, opts);
  return s.run(main);
}

tile::VarPtr Sema::newVar(std::string name, DType t, tile::VarKind kind, SourceLoc loc, int index) {
  return std::make_shared<tile::Var>(tile::Var{nextVarId_++, std::move(name), t, kind, loc, index});
}

std::optional<tile::Program> Sema::run(const ast::Module &main) {
  for (const auto &[name, value] : opts_.defines)
    usedDefines_[name] = false;
  auto scope = std::make_unique<ModuleScope>();
  ModuleScope &mainScope = *scope;
  modules_.push_back(std::move(scope));
  loadModule(main, mainScope);

  tile::Program program;
  program.stem = opts_.stem;
  std::map<std::string, SourceLoc> exported;
  for (const ast::FuncDef *def : mainScope.kernels) {
    auto k = analyzeKernel(*def, mainScope);
    if (!k)
      continue;
    if (auto [it, inserted] = exported.emplace(k->name, def->loc); !inserted) {
      diags_.error(def->nameLoc, fmt::format("two kernels export the symbol '{}'", k->name));
      diags_.note(it->second, "the other kernel is here");
      continue;
    }
    program.kernels.push_back(std::move(*k));
  }
  for (const auto &[name, used] : usedDefines_)
    if (!used) {
      diags_.warning({}, fmt::format("-D {} matches no constant or symbolic dimension", name));
      program.unusedDefines.push_back(name);
    }
  if (diags_.hasErrors())
    return std::nullopt;
  if (program.kernels.empty()) {
    diags_.error({main.file, 1, 1}, "no @kernel function in this file");
    return std::nullopt;
  }
  return program;
}

static std::string joinPath(const std::vector<std::string> &parts) {
  std::string s;
  for (const std::string &p : parts)
    s += (s.empty() ? "" : ".") + p;
  return s;
}

const ModuleScope *Sema::importModule(const std::vector<std::string> &path, SourceLoc loc) {
  std::string dotted = joinPath(path);
  if (auto it = moduleByName_.find(dotted); it != moduleByName_.end())
    return it->second;
  for (const std::string &active : importStack_)
    if (active == dotted) {
      diags_.error(loc, fmt::format("module '{}' imports itself", dotted));
      return nullptr;
    }
  if (importStack_.size() >= 16) {
    diags_.error(loc, "imports nested too deeply (limit 16)");
    return nullptr;
  }
  std::filesystem::path rel;
  for (const std::string &p : path)
    rel /= p;
  rel += ".tile";
  std::error_code ec;
  for (const std::string &dir : opts_.moduleSearchPath) {
    std::filesystem::path candidate = std::filesystem::path(dir) / rel;
    if (!std::filesystem::is_regular_file(candidate, ec))
      continue;
    std::ifstream in(candidate, std::ios::binary);
    std::stringstream text;
    text << in.rdbuf();
    if (!in && !in.eof()) {
      diags_.error(loc, fmt::format("cannot read module '{}' ({})", dotted, candidate.string()));
      return nullptr;
    }
    uint32_t file = sm_.addBuffer(candidate.string(), text.str());
    auto parsed = parseModule(sm_, file, diags_);
    if (!parsed) {
      diags_.note(loc, fmt::format("while importing '{}'", dotted));
      return nullptr;
    }
    importedAsts_.push_back(std::make_unique<ast::Module>(std::move(*parsed)));
    auto scope = std::make_unique<ModuleScope>();
    scope->name = dotted;
    ModuleScope *raw = scope.get();
    modules_.push_back(std::move(scope));
    importStack_.push_back(dotted);
    unsigned before = diags_.numErrors();
    loadModule(*importedAsts_.back(), *raw);
    importStack_.pop_back();
    if (diags_.numErrors() != before)
      diags_.note(loc, fmt::format("while importing '{}'", dotted));
    moduleByName_[dotted] = raw;
    return raw;
  }
  std::string searched;
  for (const std::string &dir : opts_.moduleSearchPath)
    searched += (searched.empty() ? "" : ", ") + dir;
  diags_.error(loc, fmt::format("module '{}' not found (searched: {})", dotted,
                                searched.empty() ? "nothing" : searched));
  return nullptr;
}

static bool defineName(ModuleScope &scope, DiagnosticEngine &diags, const std::string &name,
                       SourceLoc loc, Value v) {
  if (auto it = scope.defLocs.find(name); it != scope.defLocs.end()) {
    diags.error(loc, fmt::format("redefinition of '{}'", name));
    diags.note(it->second, "previous definition is here");
    return false;
  }
  scope.defLocs[name] = loc;
  scope.names[name] = std::move(v);
  return true;
}

bool Sema::loadModule(const ast::Module &m, ModuleScope &scope) {
  for (const ast::TopLevel &item : m.items) {
    if (auto *imp = std::get_if<ast::Import>(&item)) {
      const ModuleScope *mod = importModule(imp->module, imp->loc);
      if (!mod)
        continue;
      if (!imp->alias.empty()) {
        defineName(scope, diags_, imp->alias, imp->loc, ModuleVal{mod});
        continue;
      }
      // `import a.b` binds `a`; attribute access walks package scopes down to the module.
      ModuleScope *pkg = nullptr;
      std::string root = imp->module.front();
      if (imp->module.size() == 1) {
        defineName(scope, diags_, root, imp->loc, ModuleVal{mod});
        continue;
      }
      if (auto it = scope.names.find(root); it != scope.names.end()) {
        if (auto *mv = std::get_if<ModuleVal>(&it->second))
          pkg = const_cast<ModuleScope *>(mv->scope);
      }
      if (!pkg) {
        auto p = std::make_unique<ModuleScope>();
        p->name = root;
        pkg = p.get();
        modules_.push_back(std::move(p));
        if (!defineName(scope, diags_, root, imp->loc, ModuleVal{pkg}))
          continue;
      }
      for (size_t i = 1; i + 1 < imp->module.size(); ++i) {
        auto &slot = pkg->names[imp->module[i]];
        auto *mv = std::get_if<ModuleVal>(&slot);
        if (!mv || !mv->scope) {
          auto p = std::make_unique<ModuleScope>();
          p->name = imp->module[i];
          slot = ModuleVal{p.get()};
          pkg = p.get();
          modules_.push_back(std::move(p));
        } else {
          pkg = const_cast<ModuleScope *>(mv->scope);
        }
      }
      pkg->names[imp->module.back()] = ModuleVal{mod};
    } else if (auto *from = std::get_if<ast::FromImport>(&item)) {
      unsigned errorsBefore = diags_.numErrors();
      const ModuleScope *mod = importModule(from->module, from->loc);
      if (!mod)
        continue;
      // A module that reported errors may lack names it defines: do not pile on.
      bool moduleFailed = diags_.numErrors() != errorsBefore;
      for (const ast::ImportedName &n : from->names) {
        auto it = mod->names.find(n.name);
        if (it == mod->names.end()) {
          if (!moduleFailed)
            diags_.error(n.loc, fmt::format("module '{}' has no name '{}'", mod->name, n.name));
          continue;
        }
        defineName(scope, diags_, n.alias.empty() ? n.name : n.alias, n.loc, it->second);
      }
    } else if (auto *c = std::get_if<ast::ConstDecl>(&item)) {
      defineConst(*c, scope);
    } else if (auto *f = std::get_if<ast::FuncDef>(&item)) {
      bool isKernel = false, isMacro = false;
      for (const ast::Decorator &d : f->decorators) {
        if (d.name == "kernel" || d.name == "T.prim_func")
          isKernel = true;
        else if (d.name == "macro" || d.name == "T.macro")
          isMacro = true;
        else if (d.name != "tune")
          diags_.error(
              d.loc,
              fmt::format("unknown decorator '@{}'; expected @kernel, @macro or @tune", d.name));
        if (d.name == "macro" && d.call)
          diags_.error(d.loc, "@macro takes no arguments");
      }
      for (const ast::Decorator &d : f->decorators)
        if (d.name == "tune" && !isKernel)
          diags_.error(d.loc, "@tune applies to a @kernel");
      if (isKernel && isMacro) {
        diags_.error(f->loc, "a function cannot be both @kernel and @macro");
      } else if (isKernel) {
        if (!scope.name.empty()) {
          diags_.warning(f->nameLoc, fmt::format("kernel '{}' in imported module '{}' is not "
                                                 "compiled; only macros and constants are imported",
                                                 f->name, scope.name));
          continue;
        }
        if (defineName(scope, diags_, f->name, f->nameLoc, BuiltinVal{"<kernel>"}))
          scope.kernels.push_back(f);
      } else if (isMacro) {
        defineName(scope, diags_, f->name, f->nameLoc, MacroVal{f, &scope});
      } else if (f->decorators.empty()) {
        diags_.error(f->nameLoc,
                     fmt::format("function '{}' needs a @kernel or @macro decorator", f->name));
      }
    }
  }
  return true;
}

std::optional<Value> Sema::parseDefine(const std::string &name, const std::string &text,
                                       SourceLoc loc) {
  std::string t;
  for (char ch : text)
    if (ch != '_')
      t += ch;
  if (t == "True" || t == "False")
    return ExprVal{tile::intImm(t == "True", DType::Bool, loc)};
  if (auto dt = parseDType(text))
    return DTypeVal{*dt};
  int64_t iv = 0;
  int base = 10;
  std::string_view digits = t;
  bool neg = !digits.empty() && digits.front() == '-';
  if (neg)
    digits.remove_prefix(1);
  if (digits.size() > 2 && digits[0] == '0' && (digits[1] == 'x' || digits[1] == 'X')) {
    base = 16;
    digits.remove_prefix(2);
  }
  auto [p, ec] = std::from_chars(digits.data(), digits.data() + digits.size(), iv, base);
  if (ec == std::errc() && p == digits.data() + digits.size() && !digits.empty()) {
    iv = neg ? -iv : iv;
    return ExprVal{
        tile::intImm(iv, (iv >= INT32_MIN && iv <= INT32_MAX) ? DType::Int32 : DType::Int64, loc)};
  }
  if (!t.empty()) {
    char *end = nullptr;
    double dv = std::strtod(t.c_str(), &end);
    if (end && *end == '\0' && std::isfinite(dv))
      return ExprVal{tile::floatImm(dv, DType::Float32, loc)};
  }
  diags_.error(loc, fmt::format("invalid value '{}' for -D {}: expected an integer, a float, "
                                "True, False or a dtype",
                                text, name));
  return std::nullopt;
}

void Sema::defineConst(const ast::ConstDecl &c, ModuleScope &scope) {
  std::optional<Value> v;
  if (scope.name.empty()) {
    if (auto it = opts_.defines.find(c.name); it != opts_.defines.end()) {
      usedDefines_[c.name] = true;
      // On a bad value (already reported) the written value is used, so that later uses of
      // the name do not report it as undeclared.
      v = parseDefine(c.name, it->second, c.nameLoc);
    }
  }
  if (!v) {
    LocalScope local;
    local.module = &scope;
    v = eval(*c.value, local);
    if (!v) {
      scope.failed.insert(c.name);
      return;
    }
    if (auto *ev = std::get_if<ExprVal>(&*v); ev && !tile::isImm(ev->expr)) {
      diags_.error(c.value->loc(),
                   fmt::format("the value of const '{}' is not a compile-time constant", c.name));
      return;
    }
    if (std::holds_alternative<BufferVal>(*v) || std::holds_alternative<MacroVal>(*v)) {
      diags_.error(c.value->loc(),
                   fmt::format("const '{}' must be a number, a bool, a string or a dtype", c.name));
      return;
    }
  }
  defineName(scope, diags_, c.name, c.nameLoc, std::move(*v));
}

void Sema::warnComputedOnlyDims(const tile::Kernel &k, const LocalScope &scope) {
  // A name that only appears inside computed dimensions (`Tensor((N, Kk // 2), uint8)`) is
  // still a symbolic dimension the caller passes, but no tensor's shape pins it down: usually a
  // misspelling of one that does. One declared with dynamic("m") is meant.
  for (const tile::VarPtr &dim : k.dims) {
    bool plain = false;
    for (const tile::Param &param : k.params)
      if (param.tensor)
        for (const tile::Expr &e : param.tensor->shape)
          if (auto *r = std::get_if<tile::VarRef>(&e->op); r && r->var == dim)
            plain = true;
    bool declared = false;
    for (const auto &[name, value] : scope.module->names)
      if (auto *d = std::get_if<DimVal>(&value); d && d->name == dim->name)
        declared = true;
    if (!plain && !declared)
      diags_.warning(dim->loc,
                     fmt::format("symbolic dimension '{}' appears only inside computed "
                                 "dimensions, never as a tensor's dimension itself: a "
                                 "misspelling? (if not, declare it: {} = dynamic(\"{}\"))",
                                 dim->name, dim->name, dim->name));
  }
}

bool Sema::analyzeParam(const ast::Param &p, tile::Kernel &k, LocalScope &scope) {
  if (!p.annotation) {
    diags_.error(p.loc, fmt::format("kernel parameter '{}' needs a type: Tensor((d0, ...), dtype) "
                                    "or a scalar dtype such as float32",
                                    p.name));
    return false;
  }
  if (scope.names.count(p.name)) {
    diags_.error(p.loc, fmt::format("duplicate parameter '{}'", p.name));
    return false;
  }
  const ast::Expr &ann = *p.annotation;
  auto *call = std::get_if<ast::Call>(&ann.node);
  auto calleeIs = [&](const char *name) {
    if (!call)
      return false;
    if (auto *n = std::get_if<ast::Name>(&call->callee->node))
      return n->id == name;
    if (auto *a = std::get_if<ast::Attribute>(&call->callee->node))
      return a->attr == name;
    return false;
  };
  if (calleeIs("Tensor") || calleeIs("Buffer")) {
    if (call->args.size() != 2 || !call->kwargs.empty()) {
      diags_.error(ann.loc(), "Tensor takes a shape and a dtype: Tensor((d0, d1, ...), dtype)");
      return false;
    }
    std::vector<const ast::Expr *> dimExprs;
    const ast::Expr &shapeExpr = *call->args[0];
    if (auto *t = std::get_if<ast::Tuple>(&shapeExpr.node))
      for (const auto &e : t->elts)
        dimExprs.push_back(e.get());
    else if (auto *l = std::get_if<ast::List>(&shapeExpr.node))
      for (const auto &e : l->elts)
        dimExprs.push_back(e.get());
    else
      dimExprs.push_back(&shapeExpr);
    if (dimExprs.empty() || dimExprs.size() > 8) {
      diags_.error(shapeExpr.loc(), "a tensor has 1 to 8 dimensions");
      return false;
    }
    auto dt = evalDType(*call->args[1], scope);
    if (!dt)
      return false;
    std::vector<tile::Expr> shape;
    std::string definedName; // the last name bindName gave a -D value
    // A free name is a symbolic dimension, shared by every shape that names it; so is a
    // constant declared as dynamic("m"), which names the dimension m (under the constant's
    // name in the kernel). -D gives either a value. Returns the dimension when `name` is one.
    auto bindName = [&](const ast::Name &name, SourceLoc loc) -> std::optional<tile::Expr> {
      const DimVal *declared = nullptr;
      if (!scope.names.count(name.id))
        if (auto it = scope.module->names.find(name.id); it != scope.module->names.end())
          declared = std::get_if<DimVal>(&it->second);
      bool known = !declared && (scope.names.count(name.id) || scope.module->names.count(name.id) ||
                                 scope.module->failed.count(name.id));
      const std::string dimName = declared ? declared->name : name.id;
      if (known || (!declared && parseDType(name.id)))
        return std::nullopt;
      if (opts_.defines.count(dimName)) {
        usedDefines_[dimName] = true;
        definedName = dimName;
        if (auto v = parseDefine(dimName, opts_.defines.at(dimName), loc))
          scope.names[name.id] = *v;
        return std::nullopt;
      }
      tile::VarPtr dim;
      for (const tile::VarPtr &existing : k.dims)
        if (existing->name == dimName)
          dim = existing;
      if (!dim) {
        dim =
            newVar(dimName, DType::Int32, tile::VarKind::Dim, loc, static_cast<int>(k.dims.size()));
        k.dims.push_back(dim);
      }
      tile::Expr ref = tile::varRef(dim, loc);
      scope.names[name.id] = ExprVal{ref};
      return ref;
    };
    for (const ast::Expr *d : dimExprs) {
      definedName.clear();
      if (auto *name = std::get_if<ast::Name>(&d->node)) {
        if (auto dim = bindName(*name, d->loc())) {
          shape.push_back(*dim);
          continue;
        }
      } else {
        // A dimension computed from others (TileLang's `K // 2`, `ceildiv(K, group)`): the free
        // names among its operands are symbolic dimensions too.
        std::function<void(const ast::Expr &)> operands = [&](const ast::Expr &e) {
          std::visit(tile::Overloaded{
                         [&](const ast::Name &n) { bindName(n, e.loc()); },
                         [&](const ast::Binary &b) {
                           operands(*b.lhs);
                           operands(*b.rhs);
                         },
                         [&](const ast::Unary &u) { operands(*u.operand); },
                         [&](const ast::Call &c) {
                           for (const ast::ExprPtr &a : c.args)
                             operands(*a);
                         },
                         [&](const ast::Conditional &c) {
                           operands(*c.cond);
                           operands(*c.then);
                           operands(*c.otherwise);
                         },
                         [](const auto &) {},
                     },
                     e.node);
        };
        operands(*d);
      }
      const bool defined = !definedName.empty() && std::holds_alternative<ast::Name>(d->node);
      auto v = eval(*d, scope);
      if (!v)
        return false;
      auto *ev = std::get_if<ExprVal>(&*v);
      if (!ev || isFloat(ev->expr->dtype) || ev->expr->dtype == DType::Bool) {
        if (defined)
          diags_.error(d->loc(),
                       fmt::format("-D {}={} gives the symbolic dimension '{}' a value "
                                   "that is not an integer",
                                   definedName, opts_.defines.at(definedName), definedName));
        else
          diags_.error(d->loc(), "a tensor dimension must be an integer or a symbolic name");
        return false;
      }
      if (auto c = tile::asConstInt(ev->expr)) {
        if (*c <= 0 || *c > INT32_MAX) {
          diags_.error(d->loc(),
                       fmt::format("tensor dimension {} is out of range (1 .. 2^31-1)", *c));
          return false;
        }
        shape.push_back(tile::intImm(*c));
        continue;
      }
      // Computed at launch from the symbolic dimensions the caller passes: nothing else may
      // appear in it (a scalar parameter is not one of them).
      const tile::Var *other = nullptr;
      tile::forEachNode(ev->expr, [&](const tile::Node &n) {
        if (auto *r = std::get_if<tile::VarRef>(&n.op); r && r->var->kind != tile::VarKind::Dim)
          other = r->var.get();
      });
      if (other) {
        diags_.error(d->loc(), fmt::format("a tensor dimension is computed from constants and "
                                           "symbolic dimensions only, and '{}' is neither",
                                           other->name));
        return false;
      }
      shape.push_back(ev->expr);
    }
    // Element offsets are 64-bit: the constant part of the shape alone must fit (symbolic
    // dimensions are checked at launch).
    unsigned __int128 bytes = static_cast<unsigned __int128>(dtypeBytes(*dt));
    for (const tile::Expr &e : shape)
      if (auto c = tile::asConstInt(e); c && bytes <= (static_cast<unsigned __int128>(1) << 64))
        bytes *= static_cast<unsigned __int128>(*c);
    if (bytes > static_cast<unsigned __int128>(INT64_MAX)) {
      diags_.error(p.loc, fmt::format("tensor '{}' is too large: its constant dimensions hold "
                                      "more than 2^63 bytes",
                                      p.name));
      return false;
    }
    auto buf = std::make_shared<tile::Buffer>();
    buf->id = nextBufferId_++;
    buf->name = p.name;
    buf->scope = tile::Scope::Global;
    buf->shape = std::move(shape);
    buf->dtype = *dt;
    buf->loc = p.loc;
    buf->paramIndex = static_cast<int>(k.params.size());
    k.params.push_back({tile::ParamKind::Tensor, buf, nullptr});
    scope.names[p.name] = BufferVal{buf};
    return true;
  }
  auto dt = evalDType(ann, scope);
  if (!dt)
    return false;
  if (*dt == DType::Float8E4M3 || *dt == DType::Float8E5M2) {
    diags_.error(ann.loc(), "not supported yet: float8 scalar parameters");
    return false;
  }
  tile::VarPtr v =
      newVar(p.name, *dt, tile::VarKind::ScalarParam, p.loc, static_cast<int>(k.params.size()));
  k.params.push_back({tile::ParamKind::Scalar, nullptr, v});
  scope.names[p.name] = ExprVal{tile::varRef(v, p.loc)};
  return true;
}

std::optional<tile::TuneDecl> Sema::tuneDecl(const ast::Decorator &d) {
  if (!d.call || !d.call->args.empty() || d.call->kwargs.empty()) {
    diags_.error(d.loc, "@tune takes keyword arguments: @tune(space=\"block_M=64,128;...\", "
                        "shapes=\"M=4096,N=4096;...\")");
    return std::nullopt;
  }
  tile::TuneDecl t;
  bool ok = true;
  for (const ast::KeywordArg &kw : d.call->kwargs) {
    auto *s = std::get_if<ast::StringLit>(&kw.value->node);
    if (kw.name != "space" && kw.name != "shapes") {
      diags_.error(kw.loc, fmt::format("unknown @tune argument '{}' (it takes space= and shapes=)",
                                       kw.name));
      ok = false;
    } else if (!s || s->value.empty()) {
      diags_.error(kw.value->loc(), fmt::format("@tune({}=...) takes a non-empty string", kw.name));
      ok = false;
    } else if (kw.name == "space") {
      t.space = s->value;
      t.spaceLoc = kw.value->loc();
    } else {
      t.shapes = s->value;
      t.shapesLoc = kw.value->loc();
    }
  }
  if (!ok)
    return std::nullopt;
  return t;
}

std::optional<tile::Kernel> Sema::analyzeKernel(const ast::FuncDef &def,
                                                const ModuleScope &module) {
  tile::Kernel k;
  k.defName = def.name;
  k.name = def.name;
  k.loc = def.nameLoc;
  kernel_ = &k;
  nextBufferId_ = 0;
  unsigned errorsBefore = diags_.numErrors();
  LocalScope scope;
  scope.module = &module;

  for (const ast::Decorator &d : def.decorators) {
    if (d.name == "tune") {
      k.tune = tuneDecl(d);
      continue;
    }
    if (d.name != "kernel" || !d.call)
      continue;
    if (!d.call->args.empty())
      diags_.error(d.call->args.front()->loc(),
                   "@kernel takes only keyword arguments: @kernel(name=\"...\")");
    for (const ast::KeywordArg &kw : d.call->kwargs) {
      auto *s = std::get_if<ast::StringLit>(&kw.value->node);
      if (kw.name != "name") {
        diags_.error(kw.loc, fmt::format("unknown @kernel argument '{}'", kw.name));
      } else if (!s || s->value.empty()) {
        diags_.error(kw.value->loc(), "@kernel(name=...) takes a non-empty string");
      } else {
        if (!isIdentifier(s->value))
          diags_.error(kw.value->loc(),
                       fmt::format("'{}' is not a valid symbol name for a kernel", s->value));
        else
          k.name = s->value;
      }
    }
  }

  // A parameter that fails (perhaps through a constant whose error was already reported) stops
  // the kernel here: its body would only report the parameter's uses.
  bool paramsOk = true;
  for (const ast::Param &p : def.params)
    paramsOk = analyzeParam(p, k, scope) && paramsOk;
  if (!paramsOk || diags_.numErrors() != errorsBefore) {
    kernel_ = nullptr;
    return std::nullopt;
  }
  warnComputedOnlyDims(k, scope);

  const ast::With *with = nullptr;
  const ast::Stmt *withStmt = nullptr;
  for (const ast::StmtPtr &s : def.body) {
    if (std::holds_alternative<ast::Pass>(s->node))
      continue;
    auto *w = std::get_if<ast::With>(&s->node);
    if (!w || with) {
      diags_.error(s->loc(), with
                                 ? "a kernel has exactly one 'with Kernel(...)' block"
                                 : "statements of a kernel go inside its 'with Kernel(...)' block");
      continue;
    }
    with = w;
    withStmt = s.get();
  }
  if (!with) {
    if (diags_.numErrors() == errorsBefore)
      diags_.error(def.nameLoc,
                   fmt::format("kernel '{}' has no 'with Kernel(...)' block", def.name));
    kernel_ = nullptr;
    return std::nullopt;
  }
  k.kernelLoc = withStmt->loc();
  auto *kcall = std::get_if<ast::Call>(&with->expr->node);
  auto callee = kcall ? eval(*kcall->callee, scope) : std::nullopt;
  auto *bv = callee ? std::get_if<BuiltinVal>(&*callee) : nullptr;
  if (!bv || bv->name != "Kernel") {
    diags_.error(with->expr->loc(), "expected 'with Kernel(grid..., threads=N) as ...'");
    kernel_ = nullptr;
    return std::nullopt;
  }
  if (kcall->args.empty() || kcall->args.size() > 3)
    diags_.error(with->expr->loc(), "Kernel takes 1 to 3 grid extents");
  for (const ast::ExprPtr &g : kcall->args) {
    tile::Expr e = evalInt(*g, scope, "a grid extent");
    if (!e)
      continue;
    // CUDA's limits per launch axis (the launch checks symbolic extents against them too).
    size_t axis = k.grid.size();
    if (auto c = tile::asConstInt(e); c && *c <= 0)
      diags_.error(g->loc(), fmt::format("grid extent must be positive, got {}", *c));
    else if (c && axis < 3 && *c > target::kMaxGridExtent[axis])
      diags_.error(g->loc(), fmt::format("grid extent {} is too large for the {} axis (the limit "
                                         "is {})",
                                         *c, "xyz"[axis], target::kMaxGridExtent[axis]));
    k.grid.push_back(e);
  }
  for (const ast::KeywordArg &kw : kcall->kwargs) {
    if (kw.name == "threads") {
      if (auto t = evalConstInt(*kw.value, scope, "the thread count")) {
        if (*t < 1 || *t > target::kMaxThreadsPerBlock)
          diags_.error(kw.value->loc(), fmt::format("threads must be between 1 and {}, got {}",
                                                    target::kMaxThreadsPerBlock, *t));
        else if (*t % target::kWarpSize != 0)
          diags_.error(kw.value->loc(),
                       fmt::format("threads must be a multiple of 32 (a whole number of warps), "
                                   "got {}",
                                   *t));
        else
          k.threads = *t;
      }
    } else if (kw.name == "prelude" || kw.name == "cluster_dims") {
      diags_.error(kw.loc, fmt::format("not supported yet: Kernel({}=...)", kw.name));
    } else {
      diags_.error(kw.loc, fmt::format("unknown Kernel argument '{}'", kw.name));
    }
  }
  if (!with->vars.empty() && with->vars.size() != kcall->args.size())
    diags_.error(with->vars.front().loc,
                 fmt::format("Kernel has {} grid extent(s) but {} name(s) after 'as'",
                             kcall->args.size(), with->vars.size()));
  for (size_t i = 0; i < with->vars.size() && i < 3; ++i) {
    const ast::LoopVar &v = with->vars[i];
    tile::VarPtr idx =
        newVar(v.name, DType::Int32, tile::VarKind::BlockIndex, v.loc, static_cast<int>(i));
    k.blockIndices.push_back(idx);
    scope.names[v.name] = ExprVal{tile::varRef(idx, v.loc)};
  }
  if (diags_.numErrors() == errorsBefore)
    analyzeBlock(with->body, scope, k.body);
  kernel_ = nullptr;
  if (diags_.numErrors() != errorsBefore)
    return std::nullopt;
  return k;
}

} // namespace tilec::sema
