// fold-accumulator-clears (Schedule.h). Attention clears its score accumulators before every
// Q@K^T (`acc_s[i, j] = 0 if keep else -inf`, which unswitching turns into all zeros wherever
// no key is masked), and a gemm with clear_accum clears its own. As lowered, the threads write
// the zeros (32 CS2R a thread in attention at head dimension 128, each waiting for the
// registers' last readers) and the tensor cores then add the product to them. wgmma's scale-d
// operand does the clear itself: D = A*B, the old accumulators unread.
//
// Why this is safe: the zeros replaced (by undef, or dropped) are the last writes of the
// accumulator variables before the wgmma, which no longer reads them; nothing between them and
// the wgmma reads those variables, and after it every one is overwritten (from the wgmma's
// result) before anything reads it, so no other reader ever saw the zeros. Where the zeros are
// the then-branch of an if that computes registers only (the unswitched mask), the wgmma and
// its lane assignments move into both branches, the then-branch's copy clearing; the
// statements between the if and the wgmma (declarations, barriers, fences) then run before the
// if, which is sound because they read nothing the if writes and the if touches no memory.
#include "schedule/Schedule.h"
#include "threadir/ThreadIRWalk.h"

#include <algorithm>
#include <cmath>
#include <map>
#include <optional>
#include <set>

namespace tilec::schedule {

namespace {

using thir::Body;
using thir::Expr;
using thir::Stmt;

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
/// and whose instructions can clear it (thir::clearsWholeLanes).
std::optional<std::set<int>> accumulatorVars(const thir::Wgmma &w) {
  auto *v = std::get_if<thir::MakeVector>(&w.acc->op);
  if (!v || !thir::clearsWholeLanes(w.instrs, w.n, w.acc->type.lanes))
    return std::nullopt;
  std::set<int> vars;
  for (const Expr &e : v->elems) {
    auto *r = std::get_if<thir::VarRef>(&e->op);
    if (!r || !vars.insert(r->id).second)
      return std::nullopt;
  }
  for (const thir::WgmmaInstr &i : w.instrs)
    if (thir::readsAny(i.a, vars) || thir::readsAny(i.bDesc, vars))
      return std::nullopt;
  return vars;
}

/// Whether every variable of `acc` is assigned after b[i] before anything reads it, by the
/// straight-line statements that follow in the same body.
bool overwrittenAfter(const Body &b, size_t i, std::set<int> acc) {
  for (size_t k = i + 1; k < b.size() && !acc.empty(); ++k) {
    if (auto *a = std::get_if<thir::AssignVar>(&b[k].op)) {
      if (thir::readsAny(a->value, acc))
        return false;
      acc.erase(a->id);
    } else if (auto *d = std::get_if<thir::DeclVar>(&b[k].op)) {
      if (thir::readsAny(d->init, acc))
        return false;
    } else {
      return false;
    }
  }
  return acc.empty();
}

/// Whether b[i + 1 ..] begins with an assignment of each lane of wgmma result `result` to its
/// accumulator variable (`lanes`, in lane order), in lane order, as lowering writes them.
bool assignsLanes(const Body &b, size_t i, int result, const std::vector<Expr> &lanes) {
  if (i + lanes.size() >= b.size())
    return false;
  for (size_t l = 0; l < lanes.size(); ++l) {
    auto *a = std::get_if<thir::AssignVar>(&b[i + 1 + l].op);
    auto *x = a ? std::get_if<thir::ExtractLane>(&a->value->op) : nullptr;
    auto *v = x ? std::get_if<thir::VarRef>(&x->vec->op) : nullptr;
    if (!v || v->id != result || x->lane != static_cast<int>(l) ||
        a->id != std::get<thir::VarRef>(lanes[l]->op).id)
      return false;
  }
  return true;
}

/// Whether `b` holds only declarations and assignments (registers, no memory, no nesting).
bool registersOnly(const Body &b) {
  return std::all_of(b.begin(), b.end(), [](const Stmt &s) {
    return std::holds_alternative<thir::DeclVar>(s.op) ||
           std::holds_alternative<thir::AssignVar>(s.op);
  });
}

/// Whether a statement of b[from, to) reads a variable that `c`'s branches assign.
bool readsWhatIfAssigns(const Body &b, size_t from, size_t to, const thir::IfStmt &c) {
  std::set<int> assigned;
  for (const Body *branch : {&c.then, &c.otherwise})
    for (const Stmt &s : *branch)
      if (auto *a = std::get_if<thir::AssignVar>(&s.op))
        assigned.insert(a->id);
  for (size_t k = from; k < to; ++k)
    for (int v : thir::varsRead(b[k]))
      if (assigned.count(v))
        return true;
  return false;
}

/// Whether a statement of b[from ..] reads variable `id`.
bool readsAfter(const Body &b, size_t from, int id) {
  for (size_t k = from; k < b.size(); ++k)
    if (thir::varsRead(b[k]).count(id))
      return true;
  return false;
}

/// A statement between the clear and the wgmma that neither reads nor writes the accumulators:
/// a declaration, or a barrier or fence (the registers are the thread's own; the first
/// iteration's Q@K^T waits at one for Q).
bool transparent(const Stmt &s, const std::set<int> &acc) {
  if (auto *d = std::get_if<thir::DeclVar>(&s.op))
    return !acc.count(d->id) && !thir::readsAny(d->init, acc);
  if (auto *w = std::get_if<thir::MbarrierWait>(&s.op))
    return !thir::readsAny(w->byteOffset, acc) && !thir::readsAny(w->parity, acc);
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

Expr withClear(const thir::Wgmma &w, Expr clear) {
  return thir::wgmma(w.acc, w.instrs, w.n, w.inputType, w.aInRegisters, w.aMnMajor, w.bMnMajor,
                     w.pending, w.bInputType, w.turn, w.reads, std::move(clear), w.active);
}

class Folder {
public:
  explicit Folder(thir::Kernel &k) : nextVar_(thir::maxVarId(k.body) + 1) {}

  void body(Body &top) {
    thir::forEachBodyInnermostFirst(top, [&](Body &b) {
      for (size_t i = 0; i < b.size(); ++i)
        i = fold(b, i);
    });
  }

private:
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
    // An if whose then-branch only clears (the unswitched mask's unmasked side): the wgmma
    // and the lanes' assignments from it move into both branches, the then-branch's copy
    // clearing. One asm that clears only at run time would read the registers on both paths,
    // and ptxas would keep their old values live across the loop's back edge for it (208 bytes
    // of spills in persistent attention).
    if (auto *c = j > 0 ? std::get_if<thir::IfStmt>(&b[j - 1].op) : nullptr) {
      auto zeros = clearsAll(c->then, 0, c->then.size(),
                             zeroAssignments(c->then, c->then.size(), *acc), *acc);
      const auto &lanes = std::get<thir::MakeVector>(w->acc->op).elems;
      const size_t tailEnd = i + 1 + lanes.size();
      // Branches of threads that synchronize by groups (warp specialization's roles) are not
      // the unswitched mask's: the wgmma stays where it is.
      if (!zeros || c->thenGroup || c->elseGroup || !registersOnly(c->then) ||
          !registersOnly(c->otherwise) || readsWhatIfAssigns(b, j, i, *c) ||
          !assignsLanes(b, i, decl->id, lanes) || readsAfter(b, tailEnd, decl->id))
        return i;
      for (auto z = zeros->rbegin(); z != zeros->rend(); ++z)
        c->then.erase(c->then.begin() + static_cast<long>(*z));
      auto branchTail = [&](Expr wgmma, Body &into) {
        int id = nextVar_++;
        into.push_back({thir::DeclVar{id, decl->type, std::move(wgmma)}});
        for (size_t l = 0; l < lanes.size(); ++l)
          into.push_back(
              {thir::AssignVar{std::get<thir::VarRef>(lanes[l]->op).id,
                               thir::extractLane(thir::var(id, decl->type), static_cast<int>(l))}});
      };
      branchTail(withClear(*w, thir::constInt(1, DType::Bool)), c->then);
      branchTail(decl->init, c->otherwise);
      // The if moves down to the wgmma's place, below the statements between them.
      Stmt moved = std::move(b[j - 1]);
      b.erase(b.begin() + static_cast<long>(i), b.begin() + static_cast<long>(tailEnd));
      b.insert(b.begin() + static_cast<long>(i), std::move(moved));
      b.erase(b.begin() + static_cast<long>(j - 1));
      return i - 1;
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
    for (size_t z : *zeros) {
      auto &a = std::get<thir::AssignVar>(b[z].op);
      a.value = thir::undef(a.value->type);
    }
    return i;
  }

  int nextVar_;
};

} // namespace

void foldAccumulatorClears(thir::Module &m) {
  for (thir::Kernel &k : m.kernels)
    Folder(k).body(k.body);
}

} // namespace tilec::schedule
