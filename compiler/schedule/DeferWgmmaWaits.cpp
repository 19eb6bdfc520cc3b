// defer-wgmma-waits (Schedule.h). As lowered, every gemm waits for its own wgmma group right
// after committing it (wait_group 0), so a run of gemms, each after the register code that
// computes its A operand (W4A16 dequantized group by group), alternates: the threads compute,
// then the tensor cores multiply while the threads wait, never both at once. Here each gemm of
// such a run but the last leaves its group in flight (wait_group 1: the groups before it have
// completed, its own may still run), so that it multiplies while the threads compute the next
// gemm's operand; the last gemm's wait_group 0 then covers them all, and a WgmmaWait right
// after it ties the accumulator variables of the independent ones, so that no read of them
// moves above it.
//
// The gemms of a run either have accumulators of their own (the scales applied after the
// tensor cores, one accumulator a group) or chain: a gemm accumulates into exactly the lanes
// the gemm before it produced (one accumulator for the stage's groups). PTX orders the
// accumulator accesses of consecutive wgmma of one shape on the same registers by itself (§
// 9.7.15.7.1: no fence or wait is needed between them), so the chained gemm may issue while
// the one before is in flight.
//
// Why this is safe: between a deferred wgmma and the last one of its run the pass allows only
// register assignments (shared and global loads included, no stores, barriers or control flow)
// that read none of the deferred accumulators, apart from the lane copies that name them as
// variables (which read nothing in the machine code: the copies are the asm's own output
// registers), and a chained gemm's read of the lanes it accumulates into, which the lane
// copies after it then redefine (so nothing else reads the in-flight values, and the asm's
// tied operands stay in the same registers); the wgmma instructions keep their order, and
// every statement after the run sees every group complete, as before. An operand register a
// group still reads is not written while it runs: the thread IR's variables become fresh PTX
// registers at every assignment, and ptxas keeps a register a wgmma in flight reads.
#include "schedule/Schedule.h"
#include "threadir/ThreadIRWalk.h"

#include <algorithm>
#include <map>
#include <optional>
#include <set>

namespace tilec::schedule {

namespace {

using thir::Body;
using thir::Expr;
using thir::Stmt;

const thir::Wgmma *declaredWgmma(const Stmt &s) {
  auto *d = std::get_if<thir::DeclVar>(&s.op);
  return d ? std::get_if<thir::Wgmma>(&d->init->op) : nullptr;
}

/// A float32 variable copied out of one lane of a wgmma's result.
struct LaneCopy {
  int result;
  int lane;
};

/// The wgmma result among `results` that `v = X[lane l]` (a float32 lane) copies, if it is one.
std::optional<LaneCopy> laneCopySource(const thir::RegisterAssignment &a,
                                       const std::set<int> &results) {
  auto *lane = std::get_if<thir::ExtractLane>(&(*a.value)->op);
  if (!lane || (*a.value)->type != thir::Type{DType::Float32, 1})
    return std::nullopt;
  auto *ref = std::get_if<thir::VarRef>(&lane->vec->op);
  if (!ref || !results.count(ref->id))
    return std::nullopt;
  return LaneCopy{ref->id, lane->lane};
}

/// The variables `next` accumulates into if it chains onto `prev` (whose result is `result`):
/// its accumulator is that result (no variables: an empty list), or the copies of its lanes in
/// order, and the two are instructions of one shape that read their accumulators (none
/// cleared, none skipped). Nullopt when it does not chain.
std::optional<std::vector<int>> chainedLanes(const thir::Wgmma &next, const thir::Wgmma &prev,
                                             int result,
                                             const std::map<int, LaneCopy> &laneSource) {
  if (next.n != prev.n || next.inputType != prev.inputType || next.bType() != prev.bType() ||
      next.aInRegisters != prev.aInRegisters || next.clearAcc || prev.clearAcc || next.active ||
      prev.active || next.instrs.empty() || prev.instrs.empty() || next.acc->type != prev.acc->type)
    return std::nullopt;
  if (auto *ref = std::get_if<thir::VarRef>(&next.acc->op))
    return ref->id == result ? std::optional<std::vector<int>>(std::vector<int>{}) : std::nullopt;
  auto *v = std::get_if<thir::MakeVector>(&next.acc->op);
  if (!v)
    return std::nullopt;
  std::vector<int> vars;
  for (size_t l = 0; l < v->elems.size(); ++l) {
    auto *ref = std::get_if<thir::VarRef>(&v->elems[l]->op);
    if (!ref)
      return std::nullopt;
    auto it = laneSource.find(ref->id);
    if (it == laneSource.end() || it->second.result != result || it->second.lane != int(l))
      return std::nullopt;
    vars.push_back(ref->id);
  }
  return vars;
}

/// Whether nothing after the wgmma at b[j] reads the accumulator it chained onto (`vars`, or
/// with none `result` itself): the statements right after it copy its lanes back into `vars`,
/// lane l into vars[l], before anything else, or no later statement reads `result`. Otherwise
/// the in-flight values would have to be kept apart from the registers the chained wgmma
/// writes.
bool accumulatorDeadAfter(const Body &b, size_t j, const std::vector<int> &vars, int chainedOnto) {
  if (vars.empty())
    return std::none_of(b.begin() + long(j) + 1, b.end(),
                        [&](const Stmt &s) { return thir::varsRead(s).count(chainedOnto) != 0; });
  int result = std::get<thir::DeclVar>(b[j].op).id;
  for (size_t l = 0; l < vars.size(); ++l) {
    if (j + 1 + l >= b.size())
      return false;
    auto a = thir::registerAssignment(b[j + 1 + l]);
    auto copy = a ? laneCopySource(*a, {result}) : std::nullopt;
    if (!copy || a->def != vars[l] || copy->lane != int(l))
      return false;
  }
  return true;
}

class Deferrer {
public:
  void body(Body &top) {
    thir::forEachBodyInnermostFirst(top, [&](Body &b) {
      for (size_t i = 0; i < b.size(); ++i)
        i = run(b, i);
    });
  }

private:
  static bool candidate(const thir::Wgmma *w) {
    return w && w->pending == 0 && w->turn.barrier < 0;
  }

  /// Defers the waits of the run of wgmma starting at b[i], if there is one; returns the index
  /// of the run's last statement (i when nothing changed).
  size_t run(Body &b, size_t i) {
    if (!candidate(declaredWgmma(b[i])))
      return i;
    auto resultOf = [&](size_t j) { return std::get<thir::DeclVar>(b[j].op).id; };
    std::set<int> inFlight; // results of the wgmma that will leave their group in flight
    std::map<int, LaneCopy> laneSource; // float32 variable -> the wgmma lane it copies
    std::set<int> lanes;                // laneSource's variables
    std::vector<size_t> deferred;
    size_t last = i;
    for (size_t j = i + 1; j < b.size(); ++j) {
      std::set<int> results = inFlight;
      results.insert(resultOf(last));
      if (const thir::Wgmma *next = declaredWgmma(b[j])) {
        // The next wgmma of the run must not read an earlier one's results (its descriptors
        // read memory, not those registers), except as the accumulator it chains onto.
        auto readsEarlier = [&](const Expr &e) {
          return thir::readsAny(e, results) || thir::readsAny(e, lanes);
        };
        const auto &prev = std::get<thir::Wgmma>(std::get<thir::DeclVar>(b[last].op).init->op);
        auto chained =
            candidate(next) ? chainedLanes(*next, prev, resultOf(last), laneSource) : std::nullopt;
        if (chained && !accumulatorDeadAfter(b, j, *chained, resultOf(last)))
          chained.reset();
        if (!candidate(next) || (!chained && readsEarlier(next->acc)) ||
            std::any_of(next->instrs.begin(), next->instrs.end(), [&](const auto &in) {
              return readsEarlier(in.a) || readsEarlier(in.bDesc);
            }))
          break;
        // The lanes it accumulates into are its own now: the copies after it redefine them.
        for (int v : chained.value_or(std::vector<int>{})) {
          laneSource.erase(v);
          lanes.erase(v);
        }
        deferred.push_back(last);
        inFlight.insert(resultOf(last));
        last = j;
        continue;
      }
      auto a = thir::registerAssignment(b[j]);
      if (!a || results.count(a->def) || lanes.count(a->def))
        break;
      if (auto src = laneCopySource(*a, results)) {
        // The copies right after a wgmma name its lanes; they read nothing until used.
        laneSource[a->def] = *src;
        lanes.insert(a->def);
        continue;
      }
      // Any other read of a result or of a lane copied out of one ends the run.
      if (thir::readsAny(*a->value, results) || thir::readsAny(*a->value, lanes))
        break;
    }
    if (deferred.empty())
      return i;
    for (size_t d : deferred) {
      auto &decl = std::get<thir::DeclVar>(b[d].op);
      const auto &w = std::get<thir::Wgmma>(decl.init->op);
      decl.init =
          thir::wgmma(w.acc, w.instrs, w.n, w.inputType, w.aInRegisters, w.aMnMajor, w.bMnMajor,
                      /*pending=*/1, w.bInputType, w.turn, w.reads, w.clearAcc, w.active);
    }
    // The last wgmma's own lanes are complete when produced; the deferred groups' are tied.
    std::vector<int> tied;
    for (const auto &[v, src] : laneSource)
      if (inFlight.count(src.result))
        tied.push_back(v);
    // A chain alone ties nothing: the last wgmma's wait_group 0 already covers the run.
    if (tied.empty())
      return last;
    b.insert(b.begin() + long(last) + 1, Stmt{thir::WgmmaWait{0, std::move(tied)}});
    return last + 1;
  }
};

} // namespace

void deferWgmmaWaits(thir::Module &m) {
  for (thir::Kernel &k : m.kernels)
    Deferrer().body(k.body);
}

} // namespace tilec::schedule
