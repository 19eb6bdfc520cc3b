// plan-score-warpgroup: in MLA's loop, both gemms are split over the two consumer warpgroups by
// columns (GemmWarpPolicy.FullCol). For the scores that reads Q from shared memory twice and
// makes their row maxima an exchange through shared memory, with the warpgroups in step. A
// gemm chain into a fragment of one warpgroup's 64 rows can instead run on warpgroup 0 alone
// (one m64n64 wgmma a k-step), with the statements that follow from its result (the softmax's
// Parallel loops and reductions), as long as what the rest of the loop reads of them are row
// values (published through shared memory) and the operand of a gemm of both warpgroups (P,
// handed over). A policy only splits work, so the result is the same. Measured as a thread-IR
// prototype in session 49: MLA decode +10%, MLA split +4-5% (docs/results.md); the design of
// the lowering is in docs/architecture.md. This pass only decides; nothing lowers it yet.
#include "lower/Plan.h"
#include "lower/Refs.h"

#include <algorithm>

namespace tilec::lower {

namespace {

using analysis::FragmentLayout;

/// The accumulator of a wgmma over two warpgroups split by columns, of one warpgroup's rows.
bool columnSplitOfOneWarpgroup(const FragmentLayout &l) {
  return l.kind == FragmentLayout::Kind::MmaAccumulator && l.warpgroup && l.shape.size() == 2 &&
         l.shape[0] == 64 && l.warpsM == 4 && l.warpsN == 2;
}

const tile::Gemm *gemmInto(const tile::Stmt &s, int c) {
  auto *g = std::get_if<tile::Gemm>(&s.op);
  return g && g->c.buffer->id == c ? g : nullptr;
}

bool sharedOperands(const tile::Gemm &g) {
  return g.a.buffer->scope == tile::Scope::Shared && g.b.buffer->scope == tile::Scope::Shared;
}

std::optional<ScoreWarpgroup> scoreWarpgroupOf(const tile::Kernel &k, const KernelPlan &kp,
                                               size_t top) {
  const tile::Stmt &loopStmt = k.body[top];
  auto &loop = std::get<tile::For>(loopStmt.op);
  auto pipeline = kp.pipelines.find(&loop);
  if (pipeline == kp.pipelines.end() || !pipeline->second.warpSpecialized || k.threads != 256 ||
      kp.tileThreads != 0)
    return std::nullopt;
  const tile::Body &body = loop.body;
  // The chain: a clearing gemm into such an accumulator from shared operands, and the gemms
  // right after it that add into the same accumulator.
  size_t first = 0;
  for (; first < body.size(); ++first) {
    auto *g = std::get_if<tile::Gemm>(&body[first].op);
    if (g && g->clearAccum && g->policy == tile::GemmPolicy::FullCol && sharedOperands(*g) &&
        g->c.whole() && kp.fragments.count(g->c.buffer->id) &&
        columnSplitOfOneWarpgroup(kp.fragments.at(g->c.buffer->id)))
      break;
  }
  if (first == body.size())
    return std::nullopt;
  ScoreWarpgroup sw;
  sw.loop = &loopStmt;
  sw.scores = std::get<tile::Gemm>(body[first].op).c.buffer;
  const int c = sw.scores->id;
  const FragmentLayout &lc = kp.fragments.at(c);
  size_t end = first;
  for (; end < body.size(); ++end) {
    auto *g = gemmInto(body[end], c);
    if (!g || (end > first && g->clearAccum) || !sharedOperands(*g))
      break;
    sw.chain.push_back(&body[end]);
  }
  sw.owned = sw.chain;
  for (size_t i = 0; i < first; ++i) {
    Refs r;
    r.stmt(body[i]);
    if (r.buffers.count(c))
      return std::nullopt;
  }
  // What follows from the scores: statements that read what warpgroup 0 computes and write only
  // fragments of the scores' shape, row values of its rows, or shared buffers.
  std::set<int> owned{c};
  std::set<int> published, handedOver;
  auto rowValues = [&](int b) {
    auto it = kp.fragments.find(b);
    return it != kp.fragments.end() && it->second.rowValues() && it->second.rowsOf(lc);
  };
  auto ownable = [&](const tile::BufferPtr &b) {
    if (b->scope == tile::Scope::Shared)
      return true;
    if (b->scope != tile::Scope::Fragment || !kp.fragments.count(b->id))
      return false;
    return rowValues(b->id) || kp.fragments.at(b->id).shape == lc.shape;
  };
  auto bufferOf = [&](int id) -> tile::BufferPtr {
    for (const tile::BufferPtr &b : k.buffers)
      if (b->id == id)
        return b;
    return nullptr;
  };
  // Warpgroup 0's statements read what it computes (in this iteration or, through the loop's
  // back edge, in the last: `copy(m, m_prev)` before `reduce_max(acc_s, m)`) and write only
  // what it may own: grown to a fixpoint over the body.
  auto mine = [&](const Refs &r) {
    return !r.writtenBuffers.empty() && std::any_of(r.buffers.begin(), r.buffers.end(), [&](int b) {
      return owned.count(b) > 0;
    }) && std::all_of(r.writtenBuffers.begin(), r.writtenBuffers.end(), [&](int b) {
      tile::BufferPtr buf = bufferOf(b);
      return buf && ownable(buf);
    });
  };
  for (size_t before = 0; before != owned.size();) {
    before = owned.size();
    for (size_t i = end; i < body.size(); ++i) {
      Refs r;
      r.stmt(body[i]);
      if (mine(r))
        owned.insert(r.writtenBuffers.begin(), r.writtenBuffers.end());
    }
  }
  for (size_t i = end; i < body.size(); ++i) {
    Refs r;
    r.stmt(body[i]);
    if (mine(r)) {
      sw.owned.push_back(&body[i]);
      continue;
    }
    // A statement of both warpgroups: what it reads of warpgroup 0's must be row values, or the
    // A operand of a gemm (P, staged through shared memory for the other warpgroup).
    auto *g = std::get_if<tile::Gemm>(&body[i].op);
    for (int b : r.buffers) {
      if (!owned.count(b))
        continue;
      if (r.writtenBuffers.count(b))
        return std::nullopt; // both warpgroups would write what warpgroup 0 owns
      if (rowValues(b))
        published.insert(b);
      else if (g && g->a.buffer->id == b)
        handedOver.insert(b);
      else
        return std::nullopt;
    }
  }
  // After the loop, only row values of warpgroup 0's may be read (the running max, the sum).
  for (size_t t = top + 1; t < k.body.size(); ++t) {
    Refs r;
    r.stmt(k.body[t]);
    for (int b : r.buffers)
      if (owned.count(b)) {
        if (!rowValues(b))
          return std::nullopt;
        sw.publishedAfter.push_back(bufferOf(b));
      }
  }
  for (int b : published)
    sw.published.push_back(bufferOf(b));
  for (int b : handedOver)
    sw.handedOver.push_back(bufferOf(b));
  std::sort(sw.publishedAfter.begin(), sw.publishedAfter.end());
  sw.publishedAfter.erase(std::unique(sw.publishedAfter.begin(), sw.publishedAfter.end()),
                          sw.publishedAfter.end());
  return sw;
}

} // namespace

void planScoreWarpgroups(const tile::Program &p, ProgramPlan &plan) {
  for (size_t ki = 0; ki < p.kernels.size(); ++ki) {
    const tile::Kernel &k = p.kernels[ki];
    KernelPlan &kp = plan.kernels[ki];
    kp.scoreWarpgroups.clear();
    for (size_t top = 0; top < k.body.size(); ++top) {
      auto *loop = std::get_if<tile::For>(&k.body[top].op);
      if (!loop || loop->kind == tile::LoopKind::Parallel)
        continue;
      if (auto sw = scoreWarpgroupOf(k, kp, top))
        kp.scoreWarpgroups.push_back(std::move(*sw));
    }
  }
}

} // namespace tilec::lower
