// interleave-wgmma (Schedule.h). A register-A wgmma of k instructions reads registers that the
// straight-line assignments before it compute, k-step by k-step. As lowered, every assignment
// runs first and the tensor cores wait for all of them, then the threads wait for the tensor
// cores: the two never overlap. Split into steps of two instructions, each assignment moved
// down to the step of the first instruction that reads it, the threads compute step s + 1
// while step s multiplies.
//
// Why this is safe: the moved statements are pure register assignments (loads of shared memory
// and global memory included; no statement of the run writes memory), each moved only past
// statements that neither read what it writes nor write what it reads or writes; the wgmma
// instructions keep their order and accumulate into the same registers, which the hardware
// chains; every operand register is written once, before the step that reads it, and the
// last step still waits for all groups, so nothing after the split wgmma sees a difference.
#include "schedule/Schedule.h"
#include "threadir/ThreadIRWalk.h"

#include <algorithm>
#include <optional>
#include <set>

namespace tilec::schedule {

namespace {

using thir::Body;
using thir::Expr;
using thir::Stmt;

// wgmma.wait_group takes at most 7 pending groups (as CUTLASS's K_WAIT_MAX).
constexpr int kMaxPendingGroups = 7;
// Each step starts with a warpgroup-wide fence (WARPGROUP.ARRIVE, the four warps in step): a
// narrow instruction multiplies too briefly to pay for it. On the H200 the W4A16 decode kernel
// (m64n16k16 steps) ran 20% slower split (docs/results.md, 2026-12-04).
constexpr int kMinSplitN = 64;
// Instructions per step: two halve the fences, and on the H200 the W4A16 large-M sample ran
// 2.9% faster with two than with one (attention level; docs/results.md, 2026-12-04).
constexpr size_t kInstrsPerStep = 2;

std::set<int> varsOf(const Expr &e) { return thir::varsRead(e); }

/// A register assignment the pass may move: what it writes and what it reads.
struct Assignment {
  int def;
  std::set<int> uses;
};

std::optional<Assignment> asMovable(const Stmt &s) {
  auto a = thir::registerAssignment(s);
  if (!a)
    return std::nullopt;
  return Assignment{a->def, varsOf(*a->value)};
}

bool independent(const Assignment &p, const Assignment &q) {
  return p.def != q.def && !q.uses.count(p.def) && !p.uses.count(q.def);
}

class Interleaver {
public:
  explicit Interleaver(thir::Kernel &k) : nextVar_(thir::maxVarId(k.body) + 1) {}

  void body(Body &top) {
    thir::forEachBodyInnermostFirst(top, [&](Body &b) {
      for (size_t i = 0; i < b.size(); ++i)
        if (auto replaced = split(b, i))
          i = *replaced;
    });
  }

private:
  /// Splits the wgmma declared by b[i] if it qualifies; returns the index of the last statement
  /// that replaced it.
  std::optional<size_t> split(Body &b, size_t i) {
    auto *decl = std::get_if<thir::DeclVar>(&b[i].op);
    if (!decl)
      return std::nullopt;
    auto *w = std::get_if<thir::Wgmma>(&decl->init->op);
    if (!w || !w->aInRegisters || w->instrs.size() <= kInstrsPerStep || w->pending != 0 ||
        w->turn.barrier >= 0 || w->n < kMinSplitN)
      return std::nullopt;

    // The run of movable assignments right before the wgmma.
    size_t first = i;
    std::vector<Assignment> run;
    while (first > 0) {
      auto a = asMovable(b[first - 1]);
      if (!a)
        break;
      run.insert(run.begin(), std::move(*a));
      --first;
    }
    // The step (kInstrsPerStep instructions) each assignment is first needed by, when that is
    // not the first (none: it stays where it is, above the wgmma).
    const size_t steps = w->instrs.size();
    std::vector<std::set<int>> instrUses(steps);
    for (size_t s = 0; s < steps; ++s) {
      instrUses[s] = varsOf(w->instrs[s].a);
      auto d = varsOf(w->instrs[s].bDesc);
      instrUses[s].insert(d.begin(), d.end());
    }
    auto accUses = varsOf(w->acc);
    instrUses[0].insert(accUses.begin(), accUses.end());
    std::vector<std::optional<size_t>> target(run.size());
    bool late = false;
    // Only a variable's last assignment of the run moves: the earlier ones (its declaration)
    // stay put.
    std::set<int> assignedLater;
    std::vector<bool> lastOfVar(run.size());
    for (size_t r = run.size(); r-- > 0;)
      lastOfVar[r] = assignedLater.insert(run[r].def).second;
    for (size_t r = 0; r < run.size(); ++r) {
      for (size_t s = 0; lastOfVar[r] && s < steps; ++s)
        if (instrUses[s].count(run[r].def)) {
          if (s / kInstrsPerStep > 0)
            target[r] = s / kInstrsPerStep;
          break;
        }
      late = late || target[r];
    }
    if (!late)
      return std::nullopt;
    // The new position of an assignment: stays keep theirs above everything; moved ones go to
    // their step, in their original order within it. Two assignments that swap must be
    // independent.
    auto rank = [&](size_t r) { return target[r] ? *target[r] + 1 : 0; };
    for (size_t p = 0; p < run.size(); ++p)
      for (size_t q = p + 1; q < run.size(); ++q)
        if (rank(q) < rank(p) && !independent(run[p], run[q]))
          return std::nullopt;
    // A moved assignment must not write what an earlier step's instructions read (its step
    // holds the first instruction that reads it, so only the accumulator and the descriptors
    // could).
    for (size_t r = 0; r < run.size(); ++r)
      for (size_t s = 0; target[r] && s < *target[r] * kInstrsPerStep; ++s)
        if (instrUses[s].count(run[r].def))
          return std::nullopt;

    std::vector<Stmt> runStmts(std::make_move_iterator(b.begin() + long(first)),
                               std::make_move_iterator(b.begin() + long(i)));
    Body out;
    for (size_t r = 0; r < run.size(); ++r)
      if (!target[r])
        out.push_back(std::move(runStmts[r]));
    const size_t groups = (steps + kInstrsPerStep - 1) / kInstrsPerStep;
    const int pending = std::min<int>(int(groups) - 1, kMaxPendingGroups);
    const thir::Type accType = w->acc->type;
    Expr acc = w->acc;
    for (size_t s = 0; s * kInstrsPerStep < steps; ++s) {
      for (size_t r = 0; r < run.size(); ++r)
        if (target[r] == s)
          out.push_back(std::move(runStmts[r]));
      const size_t from = s * kInstrsPerStep, to = std::min(steps, from + kInstrsPerStep);
      const bool last = to == steps;
      Expr step = thir::wgmma(acc, {w->instrs.begin() + long(from), w->instrs.begin() + long(to)},
                              w->n, w->inputType, w->aInRegisters, w->aMnMajor, w->bMnMajor,
                              last ? 0 : pending, w->bInputType, w->turn, w->reads,
                              /*clearAcc=*/nullptr, w->active);
      const int id = last ? decl->id : nextVar_++;
      out.push_back(Stmt{thir::DeclVar{id, accType, step}});
      acc = thir::var(id, accType);
    }
    const size_t replacedEnd = first + out.size() - 1;
    b.erase(b.begin() + long(first), b.begin() + long(i) + 1);
    b.insert(b.begin() + long(first), std::make_move_iterator(out.begin()),
             std::make_move_iterator(out.end()));
    return replacedEnd;
  }

  int nextVar_;
};

} // namespace

void interleaveWgmma(thir::Module &m) {
  for (thir::Kernel &k : m.kernels)
    Interleaver(k).body(k.body);
}

} // namespace tilec::schedule
