#include "threadir/ThreadIRVerifier.h"

#include "threadir/ThreadIRText.h"

#include "threadir/ThreadIRNames.h"

#include <fmt/format.h>

#include <cctype>
#include <map>
#include <optional>
#include <set>
#include <unordered_set>

namespace tilec::thir {

namespace {

bool isComparison(BinOp op) { return op >= BinOp::Eq && op <= BinOp::Ge; }
bool isMathOp(UnOp op) { return op >= UnOp::Exp && op <= UnOp::Ceil; }
bool isPowerOfTwo(int64_t v) { return v > 0 && (v & (v - 1)) == 0; }

const Type kInt32{DType::Int32, 1};
const Type kInt64{DType::Int64, 1};
const Type kBool{DType::Bool, 1};

std::string ts(Type t) { return typeString(t); }

class Verifier {
public:
  Verifier(DiagnosticEngine &diags, const Locator &locate) : diags_(diags), locate_(locate) {}

  bool module(const Module &m) {
    std::set<std::string> names;
    for (const Kernel &k : m.kernels) {
      k_ = &k;
      if (!names.insert(k.name).second)
        error(&k, fmt::format("two kernels named '{}'", k.name));
      kernel(k);
    }
    return ok_;
  }

private:
  void error(const void *where, std::string message) {
    ok_ = false;
    ++errors_;
    SourceLoc loc = locate_ ? locate_(where) : SourceLoc{};
    if (!loc.valid() && k_)
      message = fmt::format("in kernel '{}': {}", k_->name, message);
    diags_.error(loc, std::move(message));
  }

  const Param *param(const void *where, int index) {
    if (index >= 0 && static_cast<size_t>(index) < k_->params.size())
      return &k_->params[index];
    error(where, fmt::format("parameter index {} out of range", index));
    return nullptr;
  }
  const Param *tensor(const void *where, int index) {
    const Param *p = param(where, index);
    if (p && p->kind != ParamKind::Tensor) {
      error(where, fmt::format("'{}' is not a tensor parameter", p->name));
      return nullptr;
    }
    return p;
  }
  // An operand already reported is not reported again through the nodes and statements using it.
  bool good(const Expr &e) const { return e && !bad_.count(e.get()); }

  void requireType(const void *where, const Expr &e, Type t, std::string_view what) {
    if (good(e) && !(e->type == t))
      error(where, fmt::format("{} must be {}, not {}", what, ts(t), ts(e->type)));
  }
  void requireSharedMemory(const void *where) {
    if (k_->dynamicSharedBytes <= 0)
      error(where, "shared memory access in a kernel without dynamic shared memory");
  }
  // A region lies in the kernel's shared memory, and a constant offset (with the access's
  // width) in its region.
  void requireRegion(const void *where, const std::optional<SmemRegion> &r, const Expr &offset,
                     int64_t width) {
    if (!r)
      return;
    if (r->begin < 0 || r->end <= r->begin || r->end > k_->dynamicSharedBytes)
      error(where, fmt::format("shared region [{}, {}) outside the kernel's {} bytes", r->begin,
                               r->end, k_->dynamicSharedBytes));
    else if (auto *c = offset ? std::get_if<ConstInt>(&offset->op) : nullptr;
             c && (c->value < r->begin || c->value + width > r->end))
      error(where, fmt::format("shared access at byte {} outside its region [{}, {})", c->value,
                               r->begin, r->end));
  }
  // Shared accesses are naturally aligned, up to 16 bytes.
  void requireSharedWidth(const void *where, Type t) {
    if (!isPowerOfTwo(std::min(16, dtypeBytes(t.elem) * t.lanes)))
      error(where, fmt::format("shared memory access of {} is not a power-of-two width", ts(t)));
  }
  void declare(const void *where, int id, Type t) {
    if (id < 0)
      error(where, fmt::format("negative variable id {}", id));
    checkType(where, t);
    auto [it, inserted] = vars_.emplace(id, t);
    if (!inserted && !(it->second == t))
      error(where,
            fmt::format("v{} redeclared as {} (declared {} before)", id, ts(t), ts(it->second)));
  }
  void checkType(const void *where, Type t) {
    if (t.lanes < 1 || t.lanes > kMaxLanes)
      error(where, fmt::format("{} lanes (1 to {} allowed)", t.lanes, kMaxLanes));
  }

  // ---- Kernel ----------------------------------------------------------------------------
  void kernel(const Kernel &k) {
    vars_.clear();
    checked_.clear();
    bad_.clear();
    if (!text::isIdentifier(k.name))
      error(&k, fmt::format("kernel name '{}' is not an identifier", k.name));
    else if (k.name == "vprintf" || k.name.rfind("tilec_", 0) == 0)
      error(&k, fmt::format("kernel name '{}' is reserved", k.name));
    std::set<std::string> params;
    for (const Param &p : k.params) {
      if (!text::isIdentifier(p.name))
        error(&p, fmt::format("parameter name '{}' is not an identifier", p.name));
      if (!params.insert(p.name).second)
        error(&p, fmt::format("two parameters named '{}'", p.name));
      if (p.kind == ParamKind::Tensor && !isPowerOfTwo(p.alignBytes))
        error(&p, fmt::format("alignment {} is not a power of two", p.alignBytes));
      if (p.kind == ParamKind::Dim && p.dtype != DType::Int64)
        error(&p, fmt::format("a dimension parameter is int64, not {}", dtypeName(p.dtype)));
      if (p.kind == ParamKind::TmaEnabled && p.dtype != DType::Int32)
        error(&p, fmt::format("a tma_enabled parameter is int32, not {}", dtypeName(p.dtype)));
      if (p.kind == ParamKind::TensorMap)
        tensorMap(p);
    }
    if (k.threads < 1 || k.threads > 1024)
      error(&k, fmt::format("block size {} outside 1..1024", k.threads));
    if (k.minBlocksPerSM < 0 || k.minBlocksPerSM > 32 ||
        static_cast<int64_t>(k.minBlocksPerSM) * k.threads > 2048)
      error(&k, fmt::format("{} blocks of {} threads per SM (at most 2048 threads, 32 blocks)",
                            k.minBlocksPerSM, k.threads));
    if (k.persistentBlocksPerSM < 0 || k.persistentBlocksPerSM > 32)
      error(&k, fmt::format("{} persistent blocks per SM (at most 32)", k.persistentBlocksPerSM));
    if (k.persistentBalanceX && k.persistentBlocksPerSM == 0)
      error(&k, "balance_x on a kernel that is not persistent");
    if (k.dynamicSharedBytes < 0)
      error(&k, fmt::format("negative dynamic shared memory size {}", k.dynamicSharedBytes));
    for (const Expr &g : k.grid)
      if (g && hostExpr(g)) {
        node(g);
        requireType(g.get(), g, kInt64, "a grid expression");
      }
    for (const DimCheck &c : k.dimChecks)
      if (c.value && hostExpr(c.value)) {
        node(c.value);
        requireType(c.value.get(), c.value, kInt64, "a checked dimension");
      }
    body(k.body);
    for (const Stmt *b : barriersInHeldTurns(k))
      error(b, "a barrier where a warpgroup holds its ping-pong turn (the other warpgroup waits "
               "for the turn and never reaches it)");
  }

  void tensorMap(const Param &p) {
    const TensorMapInfo &m = p.map;
    const Param *t = tensor(&p, m.tensor);
    if (t && t->dtype != p.dtype)
      error(&p, fmt::format("tensor map of {} over a {} tensor", dtypeName(p.dtype),
                            dtypeName(t->dtype)));
    size_t rank = m.box.size();
    if (rank < 1 || rank > 5 || m.dims.size() != rank || m.strides.size() + 1 != rank)
      error(&p, fmt::format("tensor map '{}' needs 1 to 5 dimensions, as many extents and box "
                            "sizes, and one stride fewer",
                            p.name));
    for (int b : m.box)
      if (b < 1 || b > 256)
        error(&p, fmt::format("box extent {} outside 1..256", b));
    if (m.swizzleBytes != 0 && m.swizzleBytes != 32 && m.swizzleBytes != 64 &&
        m.swizzleBytes != 128)
      error(&p, fmt::format("swizzle {} (0, 32, 64 or 128 bytes)", m.swizzleBytes));
    for (const std::vector<Expr> *list : {&m.dims, &m.strides})
      for (const Expr &e : *list)
        if (!e)
          error(&p, "missing tensor map extent or stride");
        else if (hostExpr(e)) {
          node(e);
          requireType(&p, e, kInt64, "a tensor map extent or stride");
        }
  }

  // Grid expressions are evaluated by the generated header on the host.
  bool hostExpr(const Expr &e) {
    if (!e)
      return true;
    const Node &n = *e;
    bool ok = std::visit(
        [&](const auto &op) {
          using T = std::decay_t<decltype(op)>;
          if constexpr (std::is_same_v<T, Binary>)
            return op.op != BinOp::Pow && op.op < BinOp::BitAnd;
          else if constexpr (std::is_same_v<T, ParamRef>)
            return op.index < 0 || static_cast<size_t>(op.index) >= k_->params.size() ||
                   ((k_->params[op.index].kind == ParamKind::Dim ||
                     k_->params[op.index].kind == ParamKind::Scalar) &&
                    !isFloat(k_->params[op.index].dtype));
          else
            return std::is_same_v<T, ConstInt> || std::is_same_v<T, Select> ||
                   std::is_same_v<T, Cast>;
        },
        n.op);
    if (!ok || isFloat(n.type.elem) || n.type.lanes != 1) {
      error(&n, "a grid expression may only use integer constants, integer scalar and dimension "
                "parameters, + - * / // % min max comparisons and/or, select and casts");
      return false;
    }
    bool operandsOk = true;
    forEachOperand(n, [&](const Expr &c) { operandsOk = hostExpr(c) && operandsOk; });
    return operandsOk;
  }

  // ---- Statements ------------------------------------------------------------------------
  void body(const Body &b) {
    for (const Stmt &s : b)
      std::visit([&](const auto &op) { stmt(op, &s); }, s.op);
  }

  void stmt(const DeclVar &d, const Stmt *s) {
    node(d.init);
    declare(s, d.id, d.type);
    if (good(d.init) && !(d.init->type == d.type))
      error(s, fmt::format("v{} is declared {} but initialized with {}", d.id, ts(d.type),
                           ts(d.init->type)));
  }
  void stmt(const AssignVar &a, const Stmt *s) {
    node(a.value);
    auto it = vars_.find(a.id);
    if (it == vars_.end())
      error(s, fmt::format("v{} assigned before its declaration", a.id));
    else if (good(a.value) && !(a.value->type == it->second))
      error(s, fmt::format("v{} is {} but assigned {}", a.id, ts(it->second), ts(a.value->type)));
  }
  void stmt(const GlobalStore &g, const Stmt *s) {
    node(g.index);
    node(g.value);
    requireType(s, g.index, kInt64, "a global index");
    if (!isPowerOfTwo(g.alignBytes))
      error(s, fmt::format("alignment {} is not a power of two", g.alignBytes));
    const Param *p = tensor(s, g.param);
    if (p && good(g.value) && p->dtype != g.value->type.elem)
      error(s, fmt::format("store of {} into {} tensor '{}'", ts(g.value->type),
                           dtypeName(p->dtype), p->name));
  }
  void stmt(const GlobalAtomic &a, const Stmt *s) {
    node(a.index);
    node(a.value);
    requireType(s, a.index, kInt64, "a global index");
    const Param *p = tensor(s, a.param);
    if (!p || !good(a.value))
      return;
    if (p->dtype == DType::Bool || isFloat8(p->dtype))
      error(s, fmt::format("atomic {} on a {} tensor", atomicOpName(a.op), dtypeName(p->dtype)));
    else if (!(a.value->type == Type{p->dtype, 1}))
      error(s, fmt::format("atomic {} of {} into {} tensor '{}'", atomicOpName(a.op),
                           ts(a.value->type), dtypeName(p->dtype), p->name));
  }
  void stmt(const SharedAtomic &a, const Stmt *s) {
    node(a.byteOffset);
    node(a.value);
    requireType(s, a.byteOffset, kInt32, "a shared memory offset");
    requireSharedMemory(s);
    if (!good(a.value))
      return;
    const Type t = a.value->type;
    if (t.lanes != 1 || t.elem == DType::Bool || isFloat8(t.elem) || dtypeBytes(t.elem) < 2)
      error(s, fmt::format("atomic {} of {} in shared memory", atomicOpName(a.op), ts(t)));
    else
      requireRegion(s, a.region, a.byteOffset, dtypeBytes(t.elem));
  }
  void stmt(const CpAsync &c, const Stmt *s) {
    node(c.index);
    node(c.byteOffset);
    requireType(s, c.index, kInt64, "a global index");
    requireType(s, c.byteOffset, kInt32, "a shared memory offset");
    if (c.srcBytes) {
      node(c.srcBytes);
      requireType(s, c.srcBytes, kInt32, "the bytes a cp.async reads");
    }
    tensor(s, c.param);
    requireSharedMemory(s);
  }
  void stmt(const CpAsyncCommit &, const Stmt *) {}
  void stmt(const CpAsyncWait &w, const Stmt *s) {
    if (w.pending < 0)
      error(s, fmt::format("negative number of pending groups {}", w.pending));
  }
  void stmt(const Printf &p, const Stmt *) {
    for (const Expr &a : p.args) {
      node(a);
      if (good(a) && (a->type.lanes != 1 || isFloat8(a->type.elem)))
        error(a.get(),
              fmt::format("printf argument of type {} (scalars, not float8)", ts(a->type)));
    }
  }
  void stmt(const IfStmt &i, const Stmt *s) {
    node(i.cond);
    requireType(s, i.cond, kBool, "an if condition");
    branch(i.then, i.thenGroup, s);
    branch(i.otherwise, i.elseGroup, s);
  }
  void branch(const Body &b, const std::optional<SyncGroup> &g, const Stmt *s) {
    if (!g) {
      body(b);
      return;
    }
    if (g->barrier < 1 || g->barrier > 15)
      error(s, fmt::format("sync group barrier id {} outside 1..15", g->barrier));
    if (g->threads <= 0 || g->threads % 32 != 0 || g->threads > k_->threads)
      error(s, fmt::format("sync group of {} threads (a positive multiple of 32, at most the "
                           "block's {})",
                           g->threads, k_->threads));
    std::optional<SyncGroup> outer = group_;
    group_ = g;
    body(b);
    group_ = outer;
  }
  void stmt(const ForStmt &f, const Stmt *s) {
    node(f.begin);
    node(f.end);
    node(f.step);
    if (!(f.varType == kInt32 || f.varType == kInt64))
      error(s, fmt::format("loop variable of type {} (int32 or int64)", ts(f.varType)));
    declare(s, f.var, f.varType);
    requireType(s, f.begin, f.varType, "the loop start");
    requireType(s, f.end, f.varType, "the loop end");
    requireType(s, f.step, f.varType, "the loop step");
    body(f.body);
  }
  void stmt(const Barrier &b, const Stmt *s) {
    if (b.id < 0 || b.id > 15)
      error(s, fmt::format("barrier id {} outside 0..15", b.id));
    if (b.threads < 0 || b.threads % 32 != 0 || b.threads > k_->threads)
      error(s, fmt::format("barrier of {} threads (a multiple of 32, at most the block's {})",
                           b.threads, k_->threads));
    // Only the group's threads reach a barrier inside it: any other would never complete.
    if (group_ && (b.id != group_->barrier || b.threads != group_->threads))
      error(s, fmt::format("barrier {}, {} inside a sync group of barrier {}, {}", b.id, b.threads,
                           group_->barrier, group_->threads));
  }
  void mbarrier(const Stmt *s, const Expr &bar) {
    node(bar);
    requireType(s, bar, kInt32, "an mbarrier offset");
    requireSharedMemory(s);
  }
  void stmt(const MbarrierInit &m, const Stmt *s) {
    mbarrier(s, m.byteOffset);
    node(m.count);
    requireType(s, m.count, kInt32, "an arrival count");
  }
  void stmt(const MbarrierArrive &m, const Stmt *s) {
    mbarrier(s, m.byteOffset);
    if (m.txBytes) {
      node(m.txBytes);
      requireType(s, m.txBytes, kInt32, "a transaction byte count");
    }
  }
  void stmt(const MbarrierWait &m, const Stmt *s) {
    mbarrier(s, m.byteOffset);
    node(m.parity);
    requireType(s, m.parity, kInt32, "a phase parity");
  }
  void stmt(const FenceMbarrierInit &, const Stmt *) {}
  void stmt(const WarpgroupTurn &t, const Stmt *s) { turn(s, t.barrier); }
  // A turn uses barriers `barrier` and `barrier + 1` between the first two warpgroups; neither
  // may be the block's barrier 0 or the sync group's own.
  void turn(const void *where, int barrier) {
    if (barrier < 1 || barrier > 14)
      error(where, fmt::format("turn barrier {} outside 1..14 (it uses {} and {})", barrier,
                               barrier, barrier + 1));
    else if (group_ && (group_->barrier == barrier || group_->barrier == barrier + 1))
      error(where, fmt::format("turn barriers {} and {} inside a sync group of barrier {}", barrier,
                               barrier + 1, group_->barrier));
    if (k_->threads < 256)
      error(where,
            fmt::format("turn between two warpgroups in a kernel of {} threads", k_->threads));
  }
  void stmt(const TmaLoad &t, const Stmt *s) {
    const Param *p = param(s, t.map);
    if (p && p->kind != ParamKind::TensorMap) {
      error(s, fmt::format("'{}' is not a tensor map parameter", p->name));
      p = nullptr;
    }
    if (p && t.coords.size() != p->map.box.size())
      error(s, fmt::format("{} coordinates for the {}-dimensional tensor map '{}'", t.coords.size(),
                           p->map.box.size(), p->name));
    for (const Expr &c : t.coords) {
      node(c);
      requireType(s, c, kInt32, "a tensor map coordinate");
    }
    node(t.byteOffset);
    requireType(s, t.byteOffset, kInt32, "a shared memory offset");
    mbarrier(s, t.barOffset);
  }
  void stmt(const SetMaxNReg &r, const Stmt *s) {
    if (r.regs < 24 || r.regs > 256 || r.regs % 8 != 0)
      error(s, fmt::format("setmaxnreg {} (24 to 256, a multiple of 8)", r.regs));
  }
  void stmt(const WgmmaWait &w, const Stmt *s) {
    if (w.pending < 0 || w.pending > 7)
      error(s, fmt::format("wgmma.wait {} (0 to 7 pending groups)", w.pending));
    for (int v : w.vars) {
      auto it = vars_.find(v);
      if (it == vars_.end())
        error(s, fmt::format("v{} is not declared", v));
      else if (!(it->second == Type{DType::Float32, 1}))
        error(s, fmt::format("wgmma.wait ties v{} of type {} (float32 accumulators)", v,
                             ts(it->second)));
    }
  }
  void stmt(const FenceProxyAsync &, const Stmt *) {}
  void stmt(const FenceCta &, const Stmt *) {}
  void stmt(const SharedStore &st, const Stmt *s) {
    node(st.byteOffset);
    node(st.value);
    requireType(s, st.byteOffset, kInt32, "a shared memory offset");
    requireSharedMemory(s);
    if (good(st.value)) {
      requireSharedWidth(s, st.value->type);
      requireRegion(s, st.region, st.byteOffset,
                    dtypeBytes(st.value->type.elem) * st.value->type.lanes);
    }
  }

  // ---- Expressions -----------------------------------------------------------------------
  void node(const Expr &e) {
    if (!e) {
      error(nullptr, "missing operand");
      return;
    }
    if (!checked_.insert(e.get()).second)
      return;
    bool operandsOk = true;
    forEachOperand(*e, [&](const Expr &c) {
      node(c);
      operandsOk = operandsOk && good(c);
    });
    unsigned before = errors_;
    checkType(e.get(), e->type);
    if (operandsOk)
      std::visit([&](const auto &op) { check(op, *e); }, e->op);
    if (!operandsOk || errors_ != before)
      bad_.insert(e.get());
  }

  void check(const ConstInt &, const Node &n) {
    if (n.type.lanes != 1 || isFloat(n.type.elem))
      error(&n, fmt::format("integer constant of type {}", ts(n.type)));
  }
  void check(const ConstFloat &, const Node &n) {
    if (n.type.lanes != 1 || !isFloat(n.type.elem))
      error(&n, fmt::format("float constant of type {}", ts(n.type)));
  }
  void check(const Undef &, const Node &) {}
  void check(const ParamRef &r, const Node &n) {
    const Param *p = param(&n, r.index);
    if (!p)
      return;
    if (p->kind == ParamKind::Tensor || p->kind == ParamKind::TensorMap) {
      error(&n, fmt::format("tensor parameter '{}' used as a value", p->name));
      return;
    }
    Type t{p->kind == ParamKind::Dim ? DType::Int64 : p->dtype, 1};
    if (!(n.type == t))
      error(&n, fmt::format("parameter '{}' is {} but read as {}", p->name, ts(t), ts(n.type)));
  }
  void check(const SpecialReg &, const Node &n) {
    if (!(n.type == kInt32))
      error(&n, fmt::format("special register read as {}", ts(n.type)));
  }
  void check(const VarRef &v, const Node &n) {
    auto it = vars_.find(v.id);
    if (it == vars_.end())
      error(&n, fmt::format("v{} used before its declaration", v.id));
    else if (!(it->second == n.type))
      error(&n, fmt::format("v{} is {} but read as {}", v.id, ts(it->second), ts(n.type)));
  }
  void check(const Unary &u, const Node &n) {
    DType t = u.a->type.elem;
    std::string_view name = names::unOp(u.op);
    if (u.op == UnOp::Not && isFloat(t))
      error(&n, fmt::format("'not' on {}", dtypeName(t)));
    else if (t == DType::Bool && u.op != UnOp::Not)
      error(&n, fmt::format("'{}' on bool", name));
    else if (isMathOp(u.op) && !isFloat(t))
      error(&n, fmt::format("'{}' on {}", name, dtypeName(t)));
    else if (u.op == UnOp::BitNot && !isInteger(t))
      error(&n, fmt::format("'{}' on {} (integers only)", name, dtypeName(t)));
    else if (!(n.type == u.a->type))
      error(&n, fmt::format("'{}' of {} typed {}", name, ts(u.a->type), ts(n.type)));
  }
  void check(const Binary &b, const Node &n) {
    std::string_view name = names::binOpInfix(b.op);
    if (name.empty())
      name = names::binOpCall(b.op);
    if (!(b.a->type == b.b->type)) {
      error(&n, fmt::format("operands of '{}' differ in type: {} and {}", name, ts(b.a->type),
                            ts(b.b->type)));
      return;
    }
    DType t = b.a->type.elem;
    bool logical = b.op == BinOp::And || b.op == BinOp::Or;
    Type result = isComparison(b.op) ? Type{DType::Bool, b.a->type.lanes} : b.a->type;
    if (logical && t != DType::Bool)
      error(&n, fmt::format("'{}' on {} (bool only)", name, dtypeName(t)));
    else if (!logical && !isComparison(b.op) && t == DType::Bool)
      error(&n, fmt::format("'{}' on bool", name));
    else if (b.op >= BinOp::BitAnd && !isInteger(t))
      error(&n, fmt::format("'{}' on {} (integers only)", name, dtypeName(t)));
    else if (!(n.type == result))
      error(&n, fmt::format("'{}' of {} typed {}", name, ts(b.a->type), ts(n.type)));
  }
  void check(const Select &s, const Node &n) {
    if (s.cond->type.elem != DType::Bool ||
        (s.cond->type.lanes != 1 && s.cond->type.lanes != s.a->type.lanes))
      error(&n, fmt::format("select condition of type {}", ts(s.cond->type)));
    else if (!(s.a->type == s.b->type))
      error(&n, fmt::format("select arms differ in type: {} and {}", ts(s.a->type), ts(s.b->type)));
    else if (!(n.type == s.a->type))
      error(&n, fmt::format("select of {} typed {}", ts(s.a->type), ts(n.type)));
  }
  void check(const Cast &c, const Node &n) {
    if (c.a->type.lanes != n.type.lanes)
      error(&n,
            fmt::format("cast from {} to {} changes the lane count", ts(c.a->type), ts(n.type)));
  }
  void check(const Broadcast &b, const Node &n) {
    if (b.a->type.lanes != 1 || b.a->type.elem != n.type.elem || n.type.lanes < 2)
      error(&n, fmt::format("broadcast of {} to {}", ts(b.a->type), ts(n.type)));
  }
  void check(const GlobalLoad &l, const Node &n) {
    requireType(&n, l.index, kInt64, "a global index");
    if (!isPowerOfTwo(l.alignBytes))
      error(&n, fmt::format("alignment {} is not a power of two", l.alignBytes));
    const Param *p = tensor(&n, l.param);
    if (p && p->dtype != n.type.elem)
      error(&n, fmt::format("load of {} from {} tensor '{}'", ts(n.type), dtypeName(p->dtype),
                            p->name));
  }
  void check(const ExtractLane &e, const Node &n) {
    if (e.lane < 0 || e.lane >= e.vec->type.lanes || e.vec->type.lanes < 2)
      error(&n, fmt::format("lane {} of {}", e.lane, ts(e.vec->type)));
    else if (!(n.type == Type{e.vec->type.elem, 1}))
      error(&n, fmt::format("lane of {} typed {}", ts(e.vec->type), ts(n.type)));
  }
  void check(const MakeVector &m, const Node &n) {
    Type elem{n.type.elem, 1};
    if (m.elems.size() != static_cast<size_t>(n.type.lanes) || n.type.lanes < 2)
      error(&n, fmt::format("vector<{}> of {} elements", ts(n.type), m.elems.size()));
    for (const Expr &e : m.elems)
      if (!(e->type == elem)) {
        error(&n, fmt::format("vector<{}> element of type {}", ts(n.type), ts(e->type)));
        break;
      }
  }
  void check(const Shfl &s, const Node &n) {
    if (s.value->type.lanes != 1 || dtypeBits(s.value->type.elem) != 32)
      error(&n, fmt::format("shfl.{} of {} (32-bit scalars only)", shflModeName(s.mode),
                            ts(s.value->type)));
    else if (!(n.type == s.value->type))
      error(&n, fmt::format("shfl.{} of {} typed {}", shflModeName(s.mode), ts(s.value->type),
                            ts(n.type)));
    requireType(&n, s.arg, kInt32, "a shuffle lane argument");
  }
  void check(const ShflXor &s, const Node &n) {
    const int bits = dtypeBits(s.value->type.elem);
    if (s.value->type.lanes != 1 || (bits != 32 && bits != 64))
      error(&n, fmt::format("shfl_xor of {} (32- or 64-bit scalars only)", ts(s.value->type)));
    else if (s.laneMask < 0 || s.laneMask > 63)
      error(&n, fmt::format("shfl_xor lane mask {} outside 0..63", s.laneMask));
    else if (!(n.type == s.value->type))
      error(&n, fmt::format("shfl_xor of {} typed {}", ts(s.value->type), ts(n.type)));
  }
  void check(const SharedLoad &l, const Node &n) {
    requireType(&n, l.byteOffset, kInt32, "a shared memory offset");
    requireSharedMemory(&n);
    requireSharedWidth(&n, n.type);
    requireRegion(&n, l.region, l.byteOffset, dtypeBytes(n.type.elem) * n.type.lanes);
  }
  void check(const LdMatrix &l, const Node &n) {
    requireType(&n, l.byteOffset, kInt32, "a shared memory offset");
    requireSharedMemory(&n);
    requireRegion(&n, l.region, l.byteOffset, 16);
    if (l.num != 1 && l.num != 2 && l.num != 4)
      error(&n, fmt::format("ldmatrix of {} matrices (1, 2 or 4)", l.num));
    else if (!(n.type == Type{DType::Int32, l.num}))
      error(&n, fmt::format("ldmatrix.x{} typed {}", l.num, ts(n.type)));
  }
  void check(const MmaSync &m, const Node &n) {
    requireType(&n, m.a, {DType::Int32, 4}, "mma operand A");
    requireType(&n, m.b, {DType::Int32, 2}, "mma operand B");
    requireType(&n, m.c, {DType::Float32, 4}, "mma operand C");
    if (!(n.type == Type{DType::Float32, 4}))
      error(&n, fmt::format("mma typed {}", ts(n.type)));
    if (m.inputType != DType::Float16 && m.inputType != DType::BFloat16)
      error(&n, fmt::format("mma on {} (float16 or bfloat16)", dtypeName(m.inputType)));
  }
  void check(const Mfma &m, const Node &n) {
    bool shape = (m.m == 32 && m.n == 32 && m.k == 8) || (m.m == 16 && m.n == 16 && m.k == 16);
    if (!shape) {
      error(&n, fmt::format("mfma m{}n{}k{} (m32n32k8 or m16n16k16)", m.m, m.n, m.k));
      return;
    }
    if (m.inputType != DType::Float16 && m.inputType != DType::BFloat16) {
      error(&n, fmt::format("mfma on {} (float16 or bfloat16)", dtypeName(m.inputType)));
      return;
    }
    requireType(&n, m.a, {m.inputType, 4}, "mfma operand A");
    requireType(&n, m.b, {m.inputType, 4}, "mfma operand B");
    requireType(&n, m.c, {DType::Float32, m.m * m.n / 64}, "mfma operand C");
    if (!(n.type == m.c->type))
      error(&n, fmt::format("mfma typed {}", ts(n.type)));
  }
  void check(const Bitcast &b, const Node &n) {
    if (b.a->type.elem == DType::Bool || n.type.elem == DType::Bool)
      error(&n, "bitcast of or to bool");
    else if (dtypeBits(b.a->type.elem) * b.a->type.lanes != dtypeBits(n.type.elem) * n.type.lanes)
      error(&n, fmt::format("bitcast from {} to {} changes the width", ts(b.a->type), ts(n.type)));
  }
  void check(const SharedAddress &a, const Node &n) {
    requireType(&n, a.byteOffset, kInt32, "a shared memory offset");
    requireSharedMemory(&n);
    if (!(n.type == kInt32))
      error(&n, fmt::format("shared address typed {}", ts(n.type)));
  }
  void check(const Wgmma &w, const Node &n) {
    if (w.acc->type.elem != DType::Float32)
      error(&n, fmt::format("wgmma accumulator of type {} (float32)", ts(w.acc->type)));
    if (w.n < 8 || w.n > 256 || w.n % 8 != 0)
      error(&n, fmt::format("wgmma n = {} (a multiple of 8 in 8..256)", w.n));
    if (!wgmmaTypes(w.inputType, w.bType()))
      error(&n, fmt::format("wgmma on {} x {} (float16 or bfloat16, or float8 e4m3/e5m2 in any "
                            "combination)",
                            dtypeName(w.inputType), dtypeName(w.bType())));
    if (isFloat8(w.inputType) && (w.aMnMajor || w.bMnMajor))
      error(&n, "float8 wgmma with an MN-major operand (float8 operands are K-major only)");
    if (w.aInRegisters && w.aMnMajor)
      error(&n, "wgmma with A in registers cannot be MN-major");
    if (w.pending < 0 || w.pending > 7)
      error(&n, fmt::format("wgmma leaving {} groups pending (0 to 7)", w.pending));
    if (w.instrs.empty())
      error(&n, "wgmma without instructions");
    if (w.turn.barrier >= 0 || w.turn.wait || w.turn.pass)
      turn(&n, w.turn.barrier);
    if (!(n.type == w.acc->type))
      error(&n, fmt::format("wgmma on {} typed {}", ts(w.acc->type), ts(n.type)));
    if (w.clearAcc) {
      requireType(&n, w.clearAcc, Type{DType::Bool, 1}, "a wgmma's clear condition");
      if (!clearsWholeLanes(w.instrs, w.n, w.acc->type.lanes))
        error(&n, "a wgmma that clears its accumulators must write every lane, each instruction "
                  "only lanes no earlier one wrote or only lanes an earlier one wrote");
    }
    if (w.active) {
      requireType(&n, w.active, Type{DType::Bool, 1}, "a wgmma's issue condition");
      if (w.turn.barrier >= 0)
        error(&n, "a wgmma with an issue condition cannot take a ping-pong turn (the warpgroup "
                  "that does not issue would not pass it)");
    }
    for (const SmemRegion &r : w.reads)
      requireRegion(&n, r, nullptr, 0);
    Type aType = w.aInRegisters ? Type{DType::Int32, 4} : kInt64;
    for (const WgmmaInstr &i : w.instrs) {
      requireType(&n, i.a, aType, "wgmma operand A");
      requireType(&n, i.bDesc, kInt64, "a wgmma B descriptor");
      if (i.accFirst < 0 || i.accFirst + w.n / 2 > w.acc->type.lanes)
        error(&n, fmt::format("wgmma accumulators [{}, {}) outside the {} lanes", i.accFirst,
                              i.accFirst + w.n / 2, w.acc->type.lanes));
    }
  }

  DiagnosticEngine &diags_;
  const Locator &locate_;
  const Kernel *k_ = nullptr;
  std::optional<SyncGroup> group_; // the sync group of the branch being verified
  bool ok_ = true;
  unsigned errors_ = 0;
  std::map<int, Type> vars_; // declared so far, in text order
  std::unordered_set<const Node *> checked_;
  std::unordered_set<const Node *> bad_; // reported, directly or through an operand
};

} // namespace

bool verify(const Module &m, DiagnosticEngine &diags, const Locator &locate) {
  return Verifier(diags, locate).module(m);
}

} // namespace tilec::thir
