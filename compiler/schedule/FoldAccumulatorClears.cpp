// fold-accumulator-clears (Schedule.h). Attention clears its score accumulators before every
// Q@K^T (`acc_s[i, j] = 0 if keep else -inf`, which unswitching turns into all zeros wherever
// no key is masked), and a gemm with clear_accum clears its own. As lowered, the threads write
// the zeros (32 CS2R a thread in attention at head dimension 128, each waiting for the
// registers' last readers) and the tensor cores then add the product to them. wgmma's scale-d
// operand does the clear itself: D = A*B, the old accumulators unread.
//
// Why this is safe: the zero assignments removed are the last writes of the accumulator
// variables before the wgmma, which reads them where the clear does not hold only; nothing
// between them and the wgmma reads those variables, and after it every one is overwritten (from
// the wgmma's result) before anything reads it, so no other reader ever saw the zeros. Where
// the zeros are one branch of an if (the unswitched loop's), the clear holds exactly on that
// branch: its condition, computed once into a variable before the if, is the wgmma's.
#include "schedule/Schedule.h"

#include <algorithm>
#include <cmath>
#include <map>
#include <optional>
#include <set>
#include <unordered_set>

namespace tilec::schedule {

namespace {

using thir::Body;
using thir::Expr;
using thir::Node;
using thir::Stmt;

void collectVars(const Expr &e, std::set<int> &out, std::unordered_set<const Node *> &seen) {
  if (!e || !seen.insert(e.get()).second)
    return;
  if (auto *v = std::get_if<thir::VarRef>(&e->op))
    out.insert(v->id);
  thir::forEachOperand(*e, [&](const Expr &x) { collectVars(x, out, seen); });
}

bool reads(const Expr &e, const std::set<int> &vars) {
  std::set<int> used;
  std::unordered_set<const Node *> seen;
  collectVars(e, used, seen);
  for (int v : used)
    if (vars.count(v))
      return true;
  return false;
}

/// Variables declared with a constant (`var v3: bool = 1:bool`, as an unswitched mask reads).
using Constants = std::map<int, Expr>;

std::optional<bool> constantBool(const Expr &e, const Constants &consts) {
  if (auto *c = std::get_if<thir::ConstInt>(&e->op); c && e->type == thir::Type{DType::Bool, 1})
    return c->value != 0;
  if (auto *v = std::get_if<thir::VarRef>(&e->op))
    if (auto it = consts.find(v->id); it != consts.end())
      return constantBool(it->second, consts);
  return std::nullopt;
}

/// Whether `e` is float32 +0.0 (not -0.0: a clear gives +0.0, and -0.0 + x is not always x's
/// sum's sign), through constant selects.
bool isPositiveZero(const Expr &e, const Constants &consts) {
  if (auto *c = std::get_if<thir::ConstFloat>(&e->op))
    return e->type == thir::Type{DType::Float32, 1} && c->value == 0.0 && !std::signbit(c->value);
  if (auto *v = std::get_if<thir::VarRef>(&e->op))
    if (auto it = consts.find(v->id); it != consts.end())
      return isPositiveZero(it->second, consts);
  if (auto *s = std::get_if<thir::Select>(&e->op))
    if (auto c = constantBool(s->cond, consts))
      return isPositiveZero(*c ? s->a : s->b, consts);
  return false;
}

/// The accumulator variables of a wgmma whose accumulator is a vector of distinct variables
/// and whose instructions write every lane.
std::optional<std::set<int>> accumulatorVars(const thir::Wgmma &w) {
  auto *v = std::get_if<thir::MakeVector>(&w.acc->op);
  if (!v || !thir::writesEveryLane(w.instrs, w.n, w.acc->type.lanes))
    return std::nullopt;
  std::set<int> vars;
  for (const Expr &e : v->elems) {
    auto *r = std::get_if<thir::VarRef>(&e->op);
    if (!r || !vars.insert(r->id).second)
      return std::nullopt;
  }
  for (const thir::WgmmaInstr &i : w.instrs)
    if (reads(i.a, vars) || reads(i.bDesc, vars))
      return std::nullopt;
  return vars;
}

/// Whether every variable of `acc` is assigned after b[i] before anything reads it, by the
/// straight-line statements that follow in the same body.
bool overwrittenAfter(const Body &b, size_t i, std::set<int> acc) {
  for (size_t k = i + 1; k < b.size() && !acc.empty(); ++k) {
    if (auto *a = std::get_if<thir::AssignVar>(&b[k].op)) {
      if (reads(a->value, acc))
        return false;
      acc.erase(a->id);
    } else if (auto *d = std::get_if<thir::DeclVar>(&b[k].op)) {
      if (reads(d->init, acc))
        return false;
    } else {
      return false;
    }
  }
  return acc.empty();
}

/// A statement between the clear and the wgmma that neither reads nor writes the accumulators:
/// a declaration, or a barrier or fence (the registers are the thread's own; the first
/// iteration's Q@K^T waits at one for Q).
bool transparent(const Stmt &s, const std::set<int> &acc) {
  if (auto *d = std::get_if<thir::DeclVar>(&s.op))
    return !acc.count(d->id) && !reads(d->init, acc);
  if (auto *w = std::get_if<thir::MbarrierWait>(&s.op))
    return !reads(w->byteOffset, acc) && !reads(w->parity, acc);
  return std::holds_alternative<thir::Barrier>(s.op) ||
         std::holds_alternative<thir::FenceProxyAsync>(s.op) ||
         std::holds_alternative<thir::FenceCta>(s.op);
}

/// Which statements of b[0, to) assign +0.0 to one of `acc`, folding the constants declared
/// before them.
std::vector<bool> zeroAssignments(const Body &b, size_t to, const std::set<int> &acc) {
  Constants consts;
  std::vector<bool> zero(to);
  for (size_t k = 0; k < to; ++k) {
    if (auto *a = std::get_if<thir::AssignVar>(&b[k].op)) {
      zero[k] = acc.count(a->id) && isPositiveZero(a->value, consts);
      consts.erase(a->id);
    } else if (auto *d = std::get_if<thir::DeclVar>(&b[k].op)) {
      if (std::holds_alternative<thir::ConstInt>(d->init->op) ||
          std::holds_alternative<thir::ConstFloat>(d->init->op))
        consts[d->id] = d->init;
    }
  }
  return zero;
}

/// The indices of b[from, to)'s assignments when each of its statements is transparent or a
/// zero (`zero`) and every variable of `acc` is assigned; none otherwise.
std::optional<std::vector<size_t>> clearsAll(const Body &b, size_t from, size_t to,
                                             const std::vector<bool> &zero,
                                             const std::set<int> &acc) {
  std::vector<size_t> zeros;
  std::set<int> assigned;
  for (size_t k = from; k < to; ++k) {
    if (zero[k]) {
      zeros.push_back(k);
      assigned.insert(std::get<thir::AssignVar>(b[k].op).id);
    } else if (!transparent(b[k], acc)) {
      return std::nullopt;
    }
  }
  if (assigned != acc)
    return std::nullopt;
  return zeros;
}

void erase(Body &b, const std::vector<size_t> &indices) {
  for (auto it = indices.rbegin(); it != indices.rend(); ++it)
    b.erase(b.begin() + static_cast<long>(*it));
}

Expr withClear(const thir::Wgmma &w, Expr clear) {
  return thir::wgmma(w.acc, w.instrs, w.n, w.inputType, w.aInRegisters, w.aMnMajor, w.bMnMajor,
                     w.pending, w.bInputType, w.turn, w.reads, std::move(clear));
}

class Folder {
public:
  explicit Folder(thir::Kernel &k) : nextVar_(maxVar(k.body) + 1) {}

  void body(Body &b) {
    for (Stmt &s : b) {
      if (auto *f = std::get_if<thir::ForStmt>(&s.op)) {
        body(f->body);
      } else if (auto *c = std::get_if<thir::IfStmt>(&s.op)) {
        body(c->then);
        body(c->otherwise);
      }
    }
    for (size_t i = 0; i < b.size(); ++i)
      i = fold(b, i);
  }

private:
  static int maxVar(const Body &b) {
    int m = -1;
    for (const Stmt &s : b) {
      if (auto *d = std::get_if<thir::DeclVar>(&s.op))
        m = std::max(m, d->id);
      else if (auto *f = std::get_if<thir::ForStmt>(&s.op))
        m = std::max({m, f->var, maxVar(f->body)});
      else if (auto *c = std::get_if<thir::IfStmt>(&s.op))
        m = std::max({m, maxVar(c->then), maxVar(c->otherwise)});
    }
    return m;
  }

  /// Folds the clear before the wgmma declared by b[i], if there is one; returns the wgmma's
  /// index afterwards.
  size_t fold(Body &b, size_t i) {
    auto *decl = std::get_if<thir::DeclVar>(&b[i].op);
    auto *w = decl && decl->init ? std::get_if<thir::Wgmma>(&decl->init->op) : nullptr;
    if (!w || w->clearAcc)
      return i;
    auto acc = accumulatorVars(*w);
    if (!acc || !overwrittenAfter(b, i, *acc))
      return i;
    size_t j = i;
    while (j > 0 && transparent(b[j - 1], *acc))
      --j;
    // An if whose then-branch only clears (the unswitched mask's unmasked side).
    if (auto *c = j > 0 ? std::get_if<thir::IfStmt>(&b[j - 1].op) : nullptr) {
      auto zeros = clearsAll(c->then, 0, c->then.size(),
                             zeroAssignments(c->then, c->then.size(), *acc), *acc);
      if (!zeros)
        return i;
      erase(c->then, *zeros);
      int cond = nextVar_++;
      Expr clear = thir::var(cond, {DType::Bool, 1});
      decl->init = withClear(*w, clear);
      b.insert(b.begin() + static_cast<long>(j - 1),
               Stmt{thir::DeclVar{cond, {DType::Bool, 1}, std::move(c->cond)}});
      std::get<thir::IfStmt>(b[j].op).cond = clear;
      return i + 1;
    }
    // A straight run of declarations and zeros right before.
    std::vector<bool> zero = zeroAssignments(b, i, *acc);
    size_t from = i;
    while (from > 0 && (zero[from - 1] || transparent(b[from - 1], *acc)))
      --from;
    auto zeros = clearsAll(b, from, i, zero, *acc);
    if (!zeros)
      return i;
    decl->init = withClear(*w, thir::constInt(1, DType::Bool));
    erase(b, *zeros);
    return i - zeros->size();
  }

  int nextVar_;
};

} // namespace

void foldAccumulatorClears(thir::Module &m) {
  for (thir::Kernel &k : m.kernels)
    Folder(k).body(k.body);
}

} // namespace tilec::schedule
