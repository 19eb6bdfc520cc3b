#include "driver/LayoutReport.h"

#include <fmt/format.h>
#include <nlohmann/json.hpp>

namespace tilec::driver {

namespace {

using nlohmann::ordered_json;

ordered_json shapeJson(const std::vector<tile::Expr> &shape) {
  ordered_json s = ordered_json::array();
  for (const tile::Expr &d : shape) {
    if (auto c = tile::asConstInt(d))
      s.push_back(*c);
    else
      s.push_back(tile::print(d));
  }
  return s;
}

ordered_json where(const std::string &op, SourceLoc loc) {
  return {{"op", op}, {"line", loc.line}, {"col", loc.col}};
}

const char *kindName(analysis::FragmentLayout::Kind k) {
  switch (k) {
  case analysis::FragmentLayout::Kind::Flat:
    return "flat";
  case analysis::FragmentLayout::Kind::RowGroups:
    return "row_groups";
  case analysis::FragmentLayout::Kind::Replicated:
    return "replicated";
  case analysis::FragmentLayout::Kind::GroupReplicated:
    return "group_replicated";
  case analysis::FragmentLayout::Kind::MmaAccumulator:
    return "mma_accumulator";
  case analysis::FragmentLayout::Kind::MmaRows:
    return "mma_rows";
  case analysis::FragmentLayout::Kind::MmaOperandB:
    return "mma_operand_b";
  case analysis::FragmentLayout::Kind::MfmaAccumulator:
    return "mfma_accumulator";
  case analysis::FragmentLayout::Kind::MfmaRows:
    return "mfma_rows";
  }
  return "?";
}

ordered_json fragmentLayoutJson(const analysis::FragmentLayout &l, bool full) {
  ordered_json j;
  j["kind"] = kindName(l.kind);
  j["threads"] = l.threads;
  j["vector"] = l.vector;
  j["groups"] = l.groups;
  if (l.kind == analysis::FragmentLayout::Kind::MmaAccumulator ||
      l.kind == analysis::FragmentLayout::Kind::MmaRows ||
      l.kind == analysis::FragmentLayout::Kind::MmaOperandB || l.mfma()) {
    j["instruction"] = l.mfma() ? "mfma" : l.warpgroup ? "wgmma" : "mma.sync";
    j["warps_m"] = l.warpsM;
    j["warps_n"] = l.warpsN;
  }
  j["slots_per_thread"] = l.slots();
  j["description"] = l.describe();
  if (!l.vectorReason.empty())
    j["vector_reason"] = l.vectorReason;
  if (!full)
    return j;
  // Owners of every element, from the layout's own definition.
  std::vector<ordered_json> owners(static_cast<size_t>(l.total()), ordered_json::array());
  for (int64_t t = 0; t < l.threads; ++t)
    for (int64_t s = 0; s < l.slots(); ++s)
      if (auto e = l.elementAt(t, s))
        owners[static_cast<size_t>(*e)].push_back({t, s});
  ordered_json elems = ordered_json::array();
  for (size_t e = 0; e < owners.size(); ++e) {
    ordered_json index = ordered_json::array();
    int64_t rest = static_cast<int64_t>(e);
    std::vector<int64_t> idx(l.shape.size());
    for (size_t d = l.shape.size(); d-- > 0;) {
      idx[d] = rest % l.shape[d];
      rest /= l.shape[d];
    }
    for (int64_t i : idx)
      index.push_back(i);
    elems.push_back({{"index", index}, {"owners", owners[e]}});
  }
  j["elements"] = elems;
  return j;
}

ordered_json position(SourceLoc l) { return {{"line", l.line}, {"col", l.col}}; }

/// A `pipelines` entry (docs/layout-report.md).
ordered_json pipelineJson(const lower::PipelineRecord &r) {
  auto copies = [](const std::vector<lower::PipelineRecord::Copy> &cs, bool withReason) {
    ordered_json out = ordered_json::array();
    for (const lower::PipelineRecord::Copy &c : cs) {
      ordered_json cj = position(c.loc);
      cj["buffer"] = c.buffer;
      if (withReason)
        cj["reason"] = c.reason;
      out.push_back(cj);
    }
    return out;
  };
  ordered_json overlap = nullptr;
  if (r.overlap) {
    ordered_json rotated = ordered_json::array();
    for (SourceLoc l : r.overlap->rotated)
      rotated.push_back(position(l));
    overlap = {{"rotated", rotated},
               {"issued_after", position(r.overlap->issuedAfter)},
               {"waited_before",
                r.overlap->waitedBefore ? position(*r.overlap->waitedBefore) : ordered_json()}};
  }
  using Schedule = lower::PipelineRecord::Schedule;
  ordered_json j = position(r.loc);
  j["requested_stages"] = r.requestedStages;
  j["stages"] = r.stages;
  j["schedule"] = r.schedule == Schedule::WarpSpecialized ? "warp_specialized"
                  : r.schedule == Schedule::CpAsync       ? "cp_async"
                                                          : "none";
  j["reason"] = r.reason.empty() ? ordered_json() : ordered_json(r.reason);
  j["copies"] = copies(r.copies, false);
  j["copies_not_ahead"] = copies(r.copiesNotAhead, true);
  j["gemm_in_flight"] = r.gemmInFlight;
  j["consumer_turns"] = r.turns;
  j["persistent"] = r.persistent;
  j["overlap"] = overlap;
  j["summary"] = r.summary;
  return j;
}

} // namespace

std::string layoutReport(const tile::Program &p, const lower::Lowered &low,
                         const LayoutReportOptions &opts) {
  ordered_json report;
  report["schema"] = "tilec.layout/1";
  report["file"] = opts.fileName;
  report["arch"] = opts.arch;
  report["layout_detail"] = opts.full ? "full" : "summary";
  report["kernels"] = ordered_json::array();
  for (const tile::Kernel &k : p.kernels) {
    ordered_json kj;
    kj["name"] = k.name;
    kj["threads"] = k.threads;
    ordered_json grid = ordered_json::array();
    for (const tile::Expr &g : k.grid)
      grid.push_back(tile::print(g));
    kj["grid"] = grid;
    if (auto it = low.dynamicSharedBytes.find(k.name); it != low.dynamicSharedBytes.end())
      kj["dynamic_shared_bytes"] = it->second;
    ordered_json bufs = ordered_json::array();
    for (const tile::Param &prm : k.params) {
      if (prm.kind != tile::ParamKind::Tensor)
        continue;
      const tile::Buffer &b = *prm.tensor;
      bufs.push_back({{"name", b.name},
                      {"scope", "global"},
                      {"shape", shapeJson(b.shape)},
                      {"dtype", dtypeName(b.dtype)},
                      {"layout", {{"kind", "row_major"}}},
                      {"fixed_by", where("kernel parameter", b.loc)}});
    }
    for (const tile::BufferPtr &b : k.buffers) {
      ordered_json bj = {{"name", b->name},
                         {"scope", tile::scopeName(b->scope)},
                         {"shape", shapeJson(b->shape)},
                         {"dtype", dtypeName(b->dtype)}};
      const lower::FragmentRecord *rec = nullptr;
      for (const lower::FragmentRecord &r : low.fragments)
        if (r.kernel == k.name && r.bufferId == b->id)
          rec = &r;
      const lower::SharedRecord *sh = nullptr;
      for (const lower::SharedRecord &r : low.shared)
        if (r.kernel == k.name && r.bufferId == b->id)
          sh = &r;
      if (rec) {
        bj["layout"] = fragmentLayoutJson(rec->layout, opts.full);
        bj["fixed_by"] = where(rec->layout.fixedBy, rec->layout.fixedAt);
      } else if (sh) {
        const analysis::SharedLayout &sl = sh->placement.layout;
        ordered_json lj = {{"kind", sl.name()},
                           {"offset", sh->placement.offset},
                           {"bytes", sl.bytes()},
                           {"panel_bytes", sl.panelBytes},
                           {"swizzle_bytes", sl.swizzleBytes},
                           {"versions", sh->placement.versions}};
        if (opts.full) {
          // Byte offset of every element, from the same rule lowering uses.
          ordered_json offs = ordered_json::array();
          for (int64_t e = 0; e * sl.elementBytes < sl.bytes(); ++e)
            offs.push_back(sh->placement.offset + sl.elementOffset(e));
          lj["element_offsets"] = offs;
        }
        bj["layout"] = lj;
        bj["fixed_by"] =
            where(sl.swizzleBytes == 0 ? "free: row-major"
                  : sl.wgmmaCanonical()
                      ? "free: swizzled lines (conflict-free ldmatrix, wgmma and TMA layout)"
                      : "free: swizzled within 128-byte lines (conflict-free ldmatrix)",
                  b->loc);
      } else {
        bj["layout"] = {{"kind", "per_thread_register"}};
        bj["fixed_by"] = where(fmt::format("alloc_{}", tile::scopeName(b->scope)), b->loc);
      }
      bufs.push_back(bj);
    }
    kj["buffers"] = bufs;
    ordered_json loops = ordered_json::array();
    for (const lower::ParallelLoopRecord &r : low.parallelLoops) {
      if (r.kernel != k.name)
        continue;
      loops.push_back({{"line", r.loc.line},
                       {"col", r.loc.col},
                       {"iterations", r.layout.total},
                       {"threads", r.layout.threads},
                       {"vector", r.layout.vector},
                       {"mapping", r.layout.mapping},
                       {"vector_reason", r.layout.reason}});
    }
    kj["parallel_loops"] = loops;
    ordered_json pipelines = ordered_json::array();
    for (const lower::PipelineRecord &r : low.pipelines)
      if (r.kernel == k.name)
        pipelines.push_back(pipelineJson(r));
    kj["pipelines"] = pipelines;
    ordered_json sums = ordered_json::array();
    for (const lower::DeferredSumRecord &r : low.deferredSums)
      if (r.kernel == k.name) {
        ordered_json sj = position(r.reduce);
        sj["sum"] = r.sum;
        sj["accumulator"] = r.accumulator;
        sj["loop"] = position(r.loop);
        sums.push_back(sj);
      }
    kj["deferred_sums"] = sums;
    ordered_json scores = ordered_json::array();
    for (const lower::ScoreWarpgroupRecord &r : low.scoreWarpgroups)
      if (r.kernel == k.name) {
        ordered_json sj = position(r.loop);
        sj["scores"] = r.scores;
        ordered_json stmts = ordered_json::array();
        for (const SourceLoc &s : r.statements)
          stmts.push_back(position(s));
        sj["warpgroup0_statements"] = stmts;
        sj["published"] = r.published;
        sj["published_after_loop"] = r.publishedAfter;
        sj["handed_over"] = r.handedOver;
        scores.push_back(sj);
      }
    kj["score_warpgroups"] = scores;
    report["kernels"].push_back(kj);
  }
  return report.dump(2) + "\n";
}

} // namespace tilec::driver
