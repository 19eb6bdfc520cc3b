// split-wgmma-chains (Schedule.h). A wgmma whose k-steps all accumulate into the same lanes is
// one dependent chain: each instruction reads the accumulators the one before it writes. At
// n = 16 an m64n16k16 multiplies for about 8 cycles of an SM's tensor cores, so if the chain's
// latency per instruction is longer than that, it and not the tensor cores' throughput sets the
// time (the hypothesis for W4A16 at decode shapes, whose K = 8192 is one chain of 512 such
// instructions a block: docs/results.md, session 51). The instructions are dealt round-robin to
// `chains` chains: the first keeps the accumulators, the others start from zero in lanes of
// their own, all in one wgmma (one fence, one commit), and the lanes are summed after its wait.
//
// Why this is safe: the result lanes the statements after the wgmma read are the same sums of
// the same products; only the order in which float32 additions round changes, as it does
// between any two wgmma shapes (the tensor cores' own order within an instruction is not
// specified). The wgmma's result is complete when produced (pending 0), so the sums may follow
// it directly; a wgmma left in flight, one taking a ping-pong turn, or one whose instructions
// write different lanes (several pieces of N) is left as it is.
#include "schedule/Schedule.h"
#include "threadir/ThreadIRWalk.h"

namespace tilec::schedule {

namespace {

using thir::Body;
using thir::Expr;

// Wider instructions multiply long enough that the chain is not the bound.
constexpr int kMaxChainN = 32;

class Splitter {
public:
  Splitter(thir::Kernel &k, int chains) : chains_(chains), nextVar_(thir::maxVarId(k.body) + 1) {}

  void body(Body &top) {
    thir::forEachBodyInnermostFirst(top, [&](Body &b) {
      for (size_t i = 0; i < b.size(); ++i)
        if (split(b, i))
          ++i; // past the sums that follow it
    });
  }

private:
  bool split(Body &b, size_t i) {
    auto *decl = std::get_if<thir::DeclVar>(&b[i].op);
    if (!decl)
      return false;
    auto *w = std::get_if<thir::Wgmma>(&decl->init->op);
    // One piece of N: every instruction writes all the lanes (the verifier keeps accFirst +
    // n / 2 within them), so each reads what the one before wrote.
    const int lanes = w ? w->n / 2 : 0;
    if (!w || w->pending != 0 || w->turn.barrier >= 0 || w->n > kMaxChainN ||
        w->instrs.size() < static_cast<size_t>(2 * chains_) || w->acc->type.lanes != lanes)
      return false;

    // Chain c owns lanes [c * lanes, (c + 1) * lanes); the others' start at zero (or are
    // cleared with the first chain's where the wgmma clears).
    std::vector<Expr> acc;
    for (int l = 0; l < lanes; ++l)
      acc.push_back(thir::extractLane(w->acc, l));
    for (int l = lanes; l < lanes * chains_; ++l)
      acc.push_back(thir::constFloat(0.0));
    std::vector<thir::WgmmaInstr> instrs = w->instrs;
    for (size_t s = 0; s < instrs.size(); ++s)
      instrs[s].accFirst = static_cast<int>(s % static_cast<size_t>(chains_)) * lanes;
    const thir::Type wide{DType::Float32, lanes * chains_};
    Expr all = thir::wgmma(thir::makeVector(std::move(acc)), std::move(instrs), w->n, w->inputType,
                           w->aInRegisters, w->aMnMajor, w->bMnMajor, 0, w->bInputType, w->turn,
                           w->reads, w->clearAcc, w->active);
    const int allVar = nextVar_++;
    std::vector<Expr> sums;
    for (int l = 0; l < lanes; ++l) {
      Expr sum = thir::extractLane(thir::var(allVar, wide), l);
      for (int c = 1; c < chains_; ++c)
        sum = thir::binary(thir::BinOp::Add, sum,
                           thir::extractLane(thir::var(allVar, wide), c * lanes + l));
      sums.push_back(std::move(sum));
    }
    const thir::DeclVar result{decl->id, decl->type, thir::makeVector(std::move(sums))};
    b[i] = thir::Stmt{thir::DeclVar{allVar, wide, std::move(all)}};
    b.insert(b.begin() + long(i) + 1, thir::Stmt{result});
    return true;
  }

  int chains_;
  int nextVar_;
};

} // namespace

void splitWgmmaChains(thir::Module &m, int chains) {
  if (chains < 2)
    return;
  for (thir::Kernel &k : m.kernels)
    Splitter(k, chains).body(k.body);
}

} // namespace tilec::schedule
