// defer-wgmma-waits (Schedule.h). As lowered, every gemm waits for its own wgmma group right
// after committing it (wait_group 0), so a run of independent gemms, each after the register
// code that computes its A operand (W4A16 dequantized group by group into accumulators of their
// own), alternates: the threads compute, then the tensor cores multiply while the threads wait,
// never both at once. Here each gemm of such a run but the last leaves its group in flight
// (wait_group 1: the groups before it have completed, its own may still run), so that it
// multiplies while the threads compute the next gemm's operand; the last gemm's wait_group 0
// then covers them all, and a WgmmaWait right after it ties their accumulator variables, so
// that no read of them moves above it.
//
// Why this is safe: between a deferred wgmma and the last one of its run the pass allows only
// register assignments (shared and global loads included, no stores, barriers or control flow)
// that read none of the deferred accumulators, apart from the lane copies that name them as
// variables (which read nothing in the machine code: the copies are the asm's own output
// registers); the wgmma instructions keep their order, and every statement after the run sees
// every group complete, as before. An operand register a group still reads is not written
// while it runs: the thread IR's variables become fresh PTX registers at every assignment, and
// ptxas keeps a register a wgmma in flight reads.
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

/// The wgmma result among `results` that `v = X[lane l]` (a float32 lane) copies, if it is one.
std::optional<int> laneCopySource(const thir::RegisterAssignment &a, const std::set<int> &results) {
  auto *lane = std::get_if<thir::ExtractLane>(&(*a.value)->op);
  if (!lane || (*a.value)->type != thir::Type{DType::Float32, 1})
    return std::nullopt;
  auto *ref = std::get_if<thir::VarRef>(&lane->vec->op);
  if (!ref || !results.count(ref->id))
    return std::nullopt;
  return ref->id;
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
    std::set<int> inFlight;        // results of the wgmma that will leave their group in flight
    std::map<int, int> laneSource; // float32 variable -> the wgmma result it copies a lane of
    std::set<int> lanes;           // laneSource's variables
    std::vector<size_t> deferred;
    size_t last = i;
    for (size_t j = i + 1; j < b.size(); ++j) {
      std::set<int> results = inFlight;
      results.insert(resultOf(last));
      if (const thir::Wgmma *next = declaredWgmma(b[j])) {
        // The next wgmma of the run must not read an earlier one's results (its accumulators
        // are its own; its descriptors read memory, not those registers).
        auto readsEarlier = [&](const Expr &e) {
          return thir::readsAny(e, results) || thir::readsAny(e, lanes);
        };
        if (!candidate(next) || readsEarlier(next->acc) ||
            std::any_of(next->instrs.begin(), next->instrs.end(), [&](const auto &in) {
              return readsEarlier(in.a) || readsEarlier(in.bDesc);
            }))
          break;
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
      if (inFlight.count(src))
        tied.push_back(v);
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
