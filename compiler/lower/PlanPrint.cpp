// printPlan: what the planning passes recorded, for --dump-after and lit tests; recordPipelines:
// the pipelined loops for the layout report. Everything is in program order (buffer ids, source
// positions), never in pointer order.
#include "lower/Lower.h"
#include "lower/Plan.h"

#include <fmt/format.h>
#include <fmt/ranges.h>

#include <algorithm>

namespace tilec::lower {

namespace {

std::string bufferName(const tile::Kernel &k, int id) {
  for (const tile::BufferPtr &b : k.buffers)
    if (b->id == id)
      return b->name;
  return fmt::format("#{}", id);
}

std::string at(const tile::Stmt &s) { return fmt::format("{}:{}", s.loc.line, s.loc.col); }

} // namespace

std::string describePipeline(const tile::Kernel &k, const KernelPlan &kp, const PipelinePlan &p) {
  std::string out = fmt::format("{} stages, copies issued ahead at", p.stages);
  for (const tile::Stmt *c : p.copies)
    out += " " + at(*c);
  if (!p.lets.empty()) {
    out += ", re-running the lets at";
    for (const tile::Stmt *l : p.lets)
      out += " " + at(*l);
  }
  if (p.warpSpecialized)
    out += fmt::format(", warp-specialized (TMA producer warpgroup, mbarriers at byte {}){}{}{}",
                       p.barrierOffset, p.gemmInFlight ? ", gemm in flight" : "",
                       p.turns      ? ", consumer warpgroups in ping-pong"
                       : p.pingPong ? ", consumer warpgroups fit for ping-pong (--ping-pong)"
                                    : "",
                       p.itersPerSlot > 1 ? fmt::format(", {} iterations per slot", p.itersPerSlot)
                                          : "");
  if (p.tileGroups > 1)
    out += fmt::format(", {} consumer groups of {} threads on alternate tiles (--ping-pong-tiles)",
                       p.tileGroups, kp.tileThreads);
  if (p.overlap) {
    out += ", the previous iteration's";
    for (const tile::Stmt *r : p.overlap->rotated)
      out += " " + at(*r);
    out += fmt::format(" issued after gemm {}, waited for {}", at(*p.overlap->issueAfter),
                       p.overlap->waitBefore ? "before " + at(*p.overlap->waitBefore)
                                             : std::string("at the end"));
    if (!p.overlap->lateCopies.empty()) {
      out += ", a ring of its own for";
      for (const tile::Stmt *c : p.overlap->lateCopies)
        out += " " + at(*c);
    }
  }
  if (!p.producedOperands.empty()) {
    out += ", operands computed in the loop in two versions:";
    for (int id : p.producedOperands)
      out += " " + bufferName(k, id);
  }
  if (!p.consumerPrologue.empty()) {
    out += p.producerLoadsPrologue() ? ", the producer first loads" : ", consumers first run";
    for (const tile::Stmt *c : p.consumerPrologue)
      out += " " + at(*c);
    if (p.prologuePerTile)
      out += fmt::format(" for each tile, during the epilogue of the one before (mbarriers at {} "
                         "and {})",
                         p.prologueBarrier(), p.prologueFreeBarrier());
    else if (p.producerLoadsPrologue())
      out += fmt::format(" (mbarrier at {})", p.prologueBarrier());
  }
  return out;
}

namespace {

void printKernel(const tile::Kernel &k, const KernelPlan &kp, std::string &out) {
  out += fmt::format("plan {}:\n", k.name);
  for (const auto &[id, l] : kp.fragments)
    out += fmt::format("  layout {}: {}\n", bufferName(k, id), l.describe());
  std::vector<const PipelinePlan *> loops;
  for (const auto &[loop, p] : kp.pipelines)
    loops.push_back(&p);
  std::sort(loops.begin(), loops.end(), [](const PipelinePlan *a, const PipelinePlan *b) {
    return sourcePosition(*a) < sourcePosition(*b);
  });
  for (const PipelinePlan *p : loops)
    out += "  pipeline: " + describePipeline(k, kp, *p) + "\n";
  for (const auto &[id, sp] : kp.shared)
    out += fmt::format("  shared {}: offset {}, {} bytes x {} version{}, {}\n", bufferName(k, id),
                       sp.offset, sp.layout.bytes(), sp.versions, sp.versions == 1 ? "" : "s",
                       sp.layout.name());
  if (!kp.shared.empty())
    out += fmt::format("  scratch from byte {}\n", kp.scratchBase);
  for (const DeferredSum &d : kp.deferredSums)
    out += fmt::format("  deferred sum: '{}' of {}:{} accumulated per thread into '{}', summed "
                       "across threads after the loop at {}:{}\n",
                       d.sum->name, d.reduce->loc.line, d.reduce->loc.col, d.accumulator->name,
                       d.loop->loc.line, d.loop->loc.col);
  auto names = [](const std::vector<ScoreWarpgroup::Handover> &hs) {
    std::vector<std::string> quoted;
    for (const ScoreWarpgroup::Handover &h : hs)
      quoted.push_back(fmt::format("'{}'", h.value->name));
    return quoted.empty() ? std::string("none") : fmt::format("{}", fmt::join(quoted, ", "));
  };
  for (const ScoreWarpgroup &sw : kp.scoreWarpgroups) {
    std::vector<std::string> copies;
    for (const auto &[id, sp] : sw.placements)
      copies.push_back(fmt::format("{}", sp.offset));
    out += fmt::format(
        "  score warpgroup: the loop at {}:{} computes '{}' ({} gemm{} from "
        "{}:{}) on warpgroup 0 alone with {} statement{} after them; published: "
        "{}; after the loop: {}; handed over: {}; shared copies at byte {}, "
        "mbarriers at byte {}\n",
        sw.loop->loc.line, sw.loop->loc.col, sw.scores->name, sw.chain.size(),
        sw.chain.size() == 1 ? "" : "s", sw.chain.front()->loc.line, sw.chain.front()->loc.col,
        sw.owned.size() - sw.chain.size(), sw.owned.size() - sw.chain.size() == 1 ? "" : "s",
        names(sw.published), names(sw.publishedAfter), names(sw.handedOver),
        copies.empty() ? std::string("none") : fmt::format("{}", fmt::join(copies, ", ")),
        sw.readyBarrier);
  }
}

} // namespace

std::string printPlan(const tile::Program &p, const ProgramPlan &plan) {
  std::string out;
  for (size_t i = 0; i < p.kernels.size() && i < plan.kernels.size(); ++i)
    printKernel(p.kernels[i], plan.kernels[i], out);
  return out;
}

void recordPipelines(const tile::Kernel &k, const KernelPlan &kp, const Options &opts,
                     std::vector<PipelineRecord> &out) {
  auto notAhead = [](const std::vector<std::pair<const tile::Stmt *, std::string>> &copies) {
    std::vector<PipelineRecord::Copy> r;
    for (const auto &[c, why] : copies)
      r.push_back({c->loc, std::get<tile::Copy>(c->op).dst.buffer->name, why});
    return r;
  };
  std::vector<PipelineRecord> records;
  for (const auto &[loop, p] : kp.pipelines) {
    PipelineRecord r;
    r.kernel = k.name;
    r.loc = p.loop->loc;
    r.requestedStages = std::get<tile::For>(p.loop->op).numStages;
    r.stages = p.stages;
    r.schedule = p.warpSpecialized ? PipelineRecord::Schedule::WarpSpecialized
                                   : PipelineRecord::Schedule::CpAsync;
    r.reason = p.notSpecialized;
    r.gemmInFlight = p.gemmInFlight;
    r.turns = p.turns;
    r.persistent = walksTiles(p, opts.persistence);
    for (const tile::Stmt *c : p.copies)
      r.copies.push_back({c->loc, std::get<tile::Copy>(c->op).dst.buffer->name, ""});
    r.copiesNotAhead = notAhead(p.copiesNotAhead);
    if (p.overlap) {
      PipelineRecord::Overlap o;
      for (const tile::Stmt *s : p.overlap->rotated)
        o.rotated.push_back(s->loc);
      o.issuedAfter = p.overlap->issueAfter->loc;
      if (p.overlap->waitBefore)
        o.waitedBefore = p.overlap->waitBefore->loc;
      r.overlap = std::move(o);
    }
    r.summary = describePipeline(k, kp, p);
    records.push_back(std::move(r));
  }
  for (const KernelPlan::Unpipelined &u : kp.unpipelined) {
    PipelineRecord r;
    r.kernel = k.name;
    r.loc = u.loop->loc;
    r.requestedStages = std::get<tile::For>(u.loop->op).numStages;
    r.reason = u.reason;
    r.copiesNotAhead = notAhead(u.copiesNotAhead);
    r.summary = "runs without a pipeline: " + u.reason;
    records.push_back(std::move(r));
  }
  std::sort(records.begin(), records.end(), [](const PipelineRecord &a, const PipelineRecord &b) {
    return std::pair(a.loc.line, a.loc.col) < std::pair(b.loc.line, b.loc.col);
  });
  out.insert(out.end(), std::make_move_iterator(records.begin()),
             std::make_move_iterator(records.end()));
}

} // namespace tilec::lower
