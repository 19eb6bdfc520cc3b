#include "analysis/FragmentLayout.h"

#include "analysis/LayoutAlgebra.h"
#include "analysis/SharedLayout.h"
#include "target/TargetInfo.h"
#include "tileir/OpInterface.h"

#include <fmt/format.h>

#include <functional>
#include <numeric>

namespace tilec::analysis {

int64_t FragmentLayout::total() const {
  return std::accumulate(shape.begin(), shape.end(), int64_t{1}, std::multiplies<>());
}

int64_t FragmentLayout::slots() const {
  switch (kind) {
  case Kind::Flat:
    return steps() * vector;
  case Kind::RowGroups:
    return rowsPerGroup() * stepsPerRow() * vector;
  case Kind::Replicated:
    return total();
  case Kind::GroupReplicated:
    return rowsPerGroup();
  case Kind::MmaAccumulator:
    return (warpTileM() / 16) * (warpTileN() / 8) * 4;
  case Kind::MmaRows:
    return (warpTileM() / 16) * 2;
  case Kind::MmaOperandB:
    return (operandK() / 16) * (operandWarpN() / 8) * 4;
  case Kind::MfmaAccumulator:
    return (warpTileM() / 16) * (warpTileN() / 16) * 4;
  case Kind::MfmaRows:
    return (warpTileM() / 16) * 4;
  }
  return total();
}

int64_t FragmentLayout::copiesPerElement() const {
  switch (kind) {
  case Kind::Replicated:
    return threads;
  case Kind::GroupReplicated:
    return groupThreads();
  case Kind::MmaRows:
    return 4 * warpsN;
  case Kind::MfmaRows:
    return 16 * warpsN;
  case Kind::MmaOperandB:
    return warpsM;
  default:
    return 1;
  }
}

bool FragmentLayout::rowsOf(const FragmentLayout &p) const {
  if (shape.front() != p.shape.front())
    return false;
  // A wgmma accumulator of one warpgroup (plan-score-warpgroup's scores) and the row values of
  // a wider one warpgroup row high: warp w of the warpgroup holds rows 16 (w % 4) .. + 15 of
  // both, in the same slots.
  if (kind == Kind::MmaRows && p.kind == Kind::MmaAccumulator && warpgroup && p.warpgroup &&
      p.threads == 128 && threads > 128 && warpsM == 4 && p.warpsM == 4 && p.warpsN == 1)
    return true;
  if (threads != p.threads)
    return false;
  if (kind == Kind::GroupReplicated)
    return (p.kind == Kind::RowGroups || p.kind == Kind::GroupReplicated) && p.groups == groups;
  if (kind == Kind::MmaRows)
    return (p.kind == Kind::MmaAccumulator || p.kind == Kind::MmaRows) && p.warpsM == warpsM &&
           p.warpsN == warpsN && p.warpgroup == warpgroup;
  if (kind == Kind::MfmaRows)
    return (p.kind == Kind::MfmaAccumulator || p.kind == Kind::MfmaRows) && p.warpsM == warpsM &&
           p.warpsN == warpsN;
  return false;
}

std::optional<int64_t> FragmentLayout::elementAt(int64_t t, int64_t slot) const {
  if (t < 0 || t >= threads || slot < 0 || slot >= slots())
    return std::nullopt;
  switch (kind) {
  case Kind::Flat: {
    int64_t chunk = (slot / vector) * threads + t;
    if (chunk >= chunks())
      return std::nullopt;
    return chunk * vector + slot % vector;
  }
  case Kind::RowGroups: {
    int64_t P = groupThreads(), perRow = stepsPerRow() * vector;
    int64_t ri = slot / perRow, sq = (slot % perRow) / vector, lane = slot % vector;
    int64_t row = ri * groups + t / P, q = sq * P + t % P;
    if (row >= rows() || q >= chunksPerRow())
      return std::nullopt;
    return row * shape.back() + q * vector + lane;
  }
  case Kind::Replicated:
    return slot;
  case Kind::GroupReplicated: {
    int64_t row = slot * groups + t / groupThreads();
    if (row >= rows())
      return std::nullopt;
    return row;
  }
  case Kind::MmaRows: {
    int64_t warp = t / target::kWarpSize, g = (t % target::kWarpSize) / 4;
    return tileRow(warpRow(warp), slot / 2) + g + 8 * (slot % 2);
  }
  case Kind::MmaAccumulator: {
    int64_t warp = t / target::kWarpSize, lane = t % target::kWarpSize, g = lane / 4, t4 = lane % 4;
    int64_t ni = warpTileN() / 8, block = slot / 4, i = slot % 4;
    int64_t row = tileRow(warpRow(warp), block / ni) + g + 8 * (i >> 1);
    int64_t col = warpCol(warp) * warpTileN() + (block % ni) * 8 + 2 * t4 + (i & 1);
    return row * shape[1] + col;
  }
  case Kind::MmaOperandB: {
    int64_t warp = t / target::kWarpSize, lane = t % target::kWarpSize, g = lane / 4, t4 = lane % 4;
    int64_t ni = operandWarpN() / 8, block = slot / 4, i = slot % 4;
    int64_t n = (warp % warpsN) * operandWarpN() + (block % ni) * 8 + g;
    int64_t k = (block / ni) * 16 + 2 * t4 + (i & 1) + 8 * (i >> 1);
    return nByK ? n * shape[1] + k : k * shape[1] + n;
  }
  case Kind::MfmaRows: {
    int64_t wave = t / 64, group = (t % 64) / 16;
    return tileRow(warpRow(wave), slot / 4) + 4 * group + slot % 4;
  }
  case Kind::MfmaAccumulator: {
    int64_t wave = t / 64, lane = t % 64;
    int64_t ni = warpTileN() / 16, block = slot / 4, i = slot % 4;
    int64_t row = tileRow(warpRow(wave), block / ni) + 4 * (lane / 16) + i;
    int64_t col = warpCol(wave) * warpTileN() + (block % ni) * 16 + lane % 16;
    return row * shape[1] + col;
  }
  }
  return std::nullopt;
}

std::optional<std::string> verifyOwnership(const FragmentLayout &l) {
  return verifyCoverage(FragmentMap::of(l), l.copiesPerElement());
}

std::string FragmentLayout::describe() const {
  switch (kind) {
  case Kind::Flat:
    return fmt::format("flat: chunks of {} consecutive elements dealt round-robin to {} threads",
                       vector, threads);
  case Kind::RowGroups:
    return fmt::format("row groups: {} groups of {} threads, group g owns rows g, g+{}, ...; a "
                       "row's chunks of {} dealt round-robin within its group",
                       groups, groupThreads(), groups, vector);
  case Kind::Replicated:
    return "replicated: every thread holds every element";
  case Kind::GroupReplicated:
    return fmt::format("group-replicated: element i held by the {} threads of group i % {}",
                       groupThreads(), groups);
  case Kind::MmaAccumulator:
    if (warpgroup)
      return fmt::format("wgmma m64nNk16 accumulator: {} x {} warpgroups, {} x {} per warpgroup",
                         warpsM / 4, warpsN, 4 * warpTileM(), warpTileN());
    return fmt::format("mma.sync m16n8k16 accumulator: {} x {} warps, {} x {} per warp", warpsM,
                       warpsN, warpTileM(), warpTileN());
  case Kind::MmaRows:
    return fmt::format("rows of {} accumulator ({} x {} warps): row i held by the 4 lanes of "
                       "its quad in each of the {} warps of its warp row",
                       warpgroup ? "a wgmma" : "an mma.sync", warpsM, warpsN, warpsN);
  case Kind::MmaOperandB:
    return fmt::format("mma.sync m16n8k16 B operand ({}): {} x {} warps, {} columns per warp "
                       "column, held alike by its {} warps",
                       nByK ? "N x K" : "K x N", warpsM, warpsN, operandWarpN(), warpsM);
  case Kind::MfmaAccumulator:
    return fmt::format("MFMA 16x16x16 accumulator: {} x {} wavefronts, {} x {} per wavefront",
                       warpsM, warpsN, warpTileM(), warpTileN());
  case Kind::MfmaRows:
    return fmt::format("rows of an MFMA accumulator ({} x {} wavefronts): row i held by the 16 "
                       "lanes that share it in each of the {} wavefronts of its row",
                       warpsM, warpsN, warpsN);
  }
  return "";
}

std::variant<WarpGrid, std::string> gemmWarpGrid(int64_t M, int64_t N, int64_t threads,
                                                 tile::GemmPolicy policy, GemmAtom atom) {
  int64_t W = threads / atom.warpLanes;
  if (W == 0)
    return fmt::format("gemm needs whole {}s of {} threads, and the block has {}",
                       atom.warpLanes == 64 ? "wavefront" : "warp", atom.warpLanes, threads);
  auto fits = [&](int64_t wm, int64_t wn) {
    return M % (atom.atomM * wm) == 0 && N % (atom.atomN * wn) == 0;
  };
  std::optional<WarpGrid> best;
  for (int64_t wm = 1; wm <= W; ++wm) {
    if (W % wm != 0)
      continue;
    int64_t wn = W / wm;
    if (policy == tile::GemmPolicy::FullRow && wn != 1)
      continue;
    if (policy == tile::GemmPolicy::FullCol && wm != 1)
      continue;
    if (!fits(wm, wn))
      continue;
    auto score = [&](WarpGrid g) { return std::llabs(M / g.warpsM - N / g.warpsN); };
    WarpGrid cand{wm, wn};
    if (!best || score(cand) < score(*best) ||
        (score(cand) == score(*best) && cand.warpsM > best->warpsM))
      best = cand;
  }
  if (best)
    return *best;
  static constexpr const char *names[] = {"Square", "FullRow", "FullCol"};
  const char *warps = atom.warpLanes == 64 ? "wavefront" : "warp";
  return fmt::format("the {} x {} accumulator cannot be split over {} {}{} with "
                     "GemmWarpPolicy.{} (each {} needs a multiple of {} rows and {} columns)",
                     M, N, W, warps, W == 1 ? "" : "s", names[static_cast<int>(policy)], warps,
                     atom.atomM, atom.atomN);
}

std::optional<WgmmaPlan> planWgmma(const tile::Gemm &g, int64_t threads) {
  const tile::BufferPtr &A = g.a.buffer, &B = g.b.buffer, &C = g.c.buffer;
  bool aShared = A->scope == tile::Scope::Shared;
  bool sixteen =
      A->dtype == B->dtype && (A->dtype == DType::Float16 || A->dtype == DType::BFloat16);
  // float8 (e4m3 and e5m2 in any combination) reads both operands K-major from shared memory:
  // A stored M x K, B stored N x K; it has no transpose bit and no MN-major layouts.
  bool fp8 = isFloat8(A->dtype) && isFloat8(B->dtype);
  if (threads % 128 != 0 || C->dtype != DType::Float32 || !(sixteen || fp8) ||
      B->scope != tile::Scope::Shared || (!aShared && g.transA) || !g.a.whole() || !g.b.whole() ||
      !g.c.whole() || A->shape.size() != 2 || B->shape.size() != 2 || C->shape.size() != 2 ||
      (fp8 && (!aShared || g.transA || !g.transB)))
    return std::nullopt;
  auto dim = [](const tile::BufferPtr &b, int d) { return *tile::asConstInt(b->shape[d]); };
  int64_t M = dim(C, 0), N = dim(C, 1), K = dim(A, g.transA ? 0 : 1);
  int64_t kStep = wgmmaK(A->dtype);
  if (K % kStep != 0)
    return std::nullopt;
  SharedLayout la = chooseSharedLayout({dim(A, 0), dim(A, 1)}, dtypeBytes(A->dtype));
  SharedLayout lb = chooseSharedLayout({dim(B, 0), dim(B, 1)}, dtypeBytes(B->dtype));
  int64_t G = threads / 128;
  auto works = [&](int64_t gm, int64_t gn, int64_t &instrN) {
    if (M % (64 * gm) != 0 || N % gn != 0)
      return false;
    int64_t WN = N / gn, pieces = (WN + 255) / 256;
    while (pieces <= WN / 8 && (WN % pieces != 0 || (WN / pieces) % 8 != 0))
      ++pieces;
    if (pieces > WN / 8)
      return false;
    instrN = WN / pieces;
    for (int64_t m0 = 0; aShared && m0 < M; m0 += 64)
      for (int64_t k0 = 0; k0 < K; k0 += kStep)
        if (!wgmmaDescriptor(la, !g.transA, m0, k0, 64))
          return false;
    for (int64_t n0 = 0; n0 < N; n0 += instrN)
      for (int64_t k0 = 0; k0 < K; k0 += kStep)
        if (!wgmmaDescriptor(lb, g.transB, n0, k0, instrN))
          return false;
    return true;
  };
  std::optional<WgmmaPlan> best;
  for (int64_t gm = 1; gm <= G; ++gm) {
    if (G % gm != 0)
      continue;
    int64_t gn = G / gm, instrN = 0;
    if ((g.policy == tile::GemmPolicy::FullRow && gn != 1) ||
        (g.policy == tile::GemmPolicy::FullCol && gm != 1) || !works(gm, gn, instrN))
      continue;
    auto score = [&](const WgmmaPlan &p) { return std::llabs(M / p.groupsM - N / p.groupsN); };
    WgmmaPlan cand{gm, gn, instrN};
    if (!best || score(cand) < score(*best) ||
        (score(cand) == score(*best) && cand.groupsM > best->groupsM))
      best = cand;
  }
  return best;
}

namespace {

/// The row-group split of a 2-D (R, C) fragment: P threads a row group, preferring rows that fit
/// in part of a warp (reductions by shuffles only) and the least idle lanes.
int64_t chooseGroupThreads(int64_t R, int64_t chunksPerRow, int64_t T) {
  int64_t best = -1, bestWaste = 0;
  for (int64_t P = 1; P <= T; P *= 2) {
    if (T % P != 0)
      continue;
    int64_t G = T / P;
    if (G > R || R % G != 0)
      continue;
    int64_t waste = ((chunksPerRow + P - 1) / P) * P - chunksPerRow;
    bool inWarp = P <= target::kWarpSize;
    bool bestInWarp = best > 0 && best <= target::kWarpSize;
    if (best < 0 || (inWarp && !bestInWarp) ||
        (inWarp == bestInWarp &&
         (waste < bestWaste || (waste == bestWaste && inWarp == (P > best)))))
      best = P, bestWaste = waste;
  }
  return best > 0 ? best : T;
}

} // namespace

namespace {

bool onChip(const tile::BufferPtr &b) {
  return b->scope == tile::Scope::Fragment || b->scope == tile::Scope::Local;
}

/// Union-find over buffer ids, with what each group has learnt.
class Groups {
public:
  int find(int id) {
    auto it = parent_.find(id);
    if (it == parent_.end()) {
      parent_[id] = id;
      return id;
    }
    if (it->second == id)
      return id;
    int root = find(it->second);
    parent_[id] = root;
    return root;
  }
  void unite(int a, int b) {
    int ra = find(a), rb = find(b);
    if (ra != rb)
      parent_[std::max(ra, rb)] = std::min(ra, rb);
  }

private:
  std::map<int, int> parent_;
};

struct GroupFacts {
  bool replicated = false;
  std::string replicatedBy;
  SourceLoc replicatedAt;
  int vector = 16;
  std::string vectorReason = "no global access bounds it";
};

std::vector<int64_t> constShape(const std::vector<tile::Expr> &shape) {
  std::vector<int64_t> s;
  for (const tile::Expr &e : shape)
    s.push_back(tile::asConstInt(e).value_or(1));
  return s;
}

class Inference {
public:
  Inference(const tile::Kernel &k, DiagnosticEngine &diags, const InferenceOptions &opts)
      : k_(k), diags_(diags), opts_(opts), threads_(opts.threads.value_or(k.threads)) {}

  bool run(std::map<int, FragmentLayout> &out) {
    for (const tile::BufferPtr &b : k_.buffers)
      if (onChip(b)) {
        groups_.find(b->id);
        byId_[b->id] = b;
      }
    walk(k_.body);
    for (const auto &[loc, message] : gemmErrors_) {
      diags_.error(loc, message);
      return false;
    }
    // Strict layouts (gemm accumulators) first, then free distributed groups; replicated groups
    // derive their layout from a reduction source.
    std::map<int, FragmentLayout> byGroup;
    for (const auto &[buf, l] : strict_) {
      int root = groups_.find(buf->id);
      auto [it, inserted] = byGroup.emplace(root, l);
      if (!inserted && !it->second.sameAs(l)) {
        diags_.error(l.fixedAt,
                     fmt::format("layout conflict: this gemm needs '{}' as {}, but the {} fixed it "
                                 "as {}{}",
                                 buf->name, l.describe(), it->second.fixedBy, it->second.describe(),
                                 it->second.fixedBy.find("'" + buf->name + "'") == std::string::npos
                                     ? " (the two fragments share one layout because they meet in "
                                       "a Parallel loop or a fragment copy)"
                                     : ""));
        diags_.note(it->second.fixedAt, "the other layout is fixed here");
        return false;
      }
      if (facts_[root].replicated) {
        diags_.error(
            l.fixedAt,
            fmt::format("layout conflict: '{}' is the {} of this gemm ({}) "
                        "and also holds the result of the {}",
                        buf->name,
                        l.kind == FragmentLayout::Kind::MmaOperandB ? "B operand" : "accumulator",
                        l.describe(), facts_[root].replicatedBy));
        diags_.note(facts_[root].replicatedAt, "the reduction is here");
        return false;
      }
    }
    // A fragment A of a wgmma gemm that nothing else fixes takes the layout wgmma reads A
    // from registers in, so whatever writes it (a dequantizing Parallel loop) writes the
    // instruction's registers; it is a preference: a fragment another constraint fixed goes
    // through shared memory instead, as before.
    for (const auto &[buf, l] : wgmmaOperandsA_) {
      int root = groups_.find(buf->id);
      if (!facts_[root].replicated && !byGroup.count(root))
        byGroup.emplace(root, l);
    }
    for (const auto &[id, buf] : byId_) {
      int root = groups_.find(id);
      GroupFacts &f = facts_[root];
      if (buf->scope == tile::Scope::Local || f.replicated || byGroup.count(root))
        continue;
      FragmentLayout l;
      l.shape = constShape(buf->shape);
      l.threads = threads_;
      int v = f.vector;
      std::string reason = f.vectorReason;
      int64_t inner = l.shape.back();
      while (v > 1 && inner % v != 0) {
        v /= 2;
        reason = fmt::format("the last dimension {} is a multiple of {} only", inner, v);
      }
      l.vector = v;
      l.vectorReason = reason;
      l.fixedBy = "free: coalesced, vectorized global access";
      l.fixedAt = buf->loc;
      if (l.shape.size() == 2) {
        l.kind = FragmentLayout::Kind::RowGroups;
        l.groups = l.threads / chooseGroupThreads(l.shape[0], l.chunksPerRow(), l.threads);
      } else {
        l.kind = FragmentLayout::Kind::Flat;
      }
      byGroup[root] = l;
    }
    for (const ReduceInfo &r : reduces_) {
      int root = groups_.find(r.dst->id);
      FragmentLayout l;
      l.shape = constShape(r.dst->shape);
      l.threads = threads_;
      l.fixedBy = fmt::format("reduction at line {}", r.loc.line);
      l.fixedAt = r.loc;
      auto src = byGroup.find(groups_.find(r.src->id));
      if (src != byGroup.end() && src->second.kind == FragmentLayout::Kind::RowGroups &&
          r.dim == 1 && l.shape.size() == 1) {
        l.kind = FragmentLayout::Kind::GroupReplicated;
        l.groups = src->second.groups;
      } else if (src != byGroup.end() && src->second.kind == FragmentLayout::Kind::MmaAccumulator &&
                 r.dim == 1 && l.shape.size() == 1) {
        l.kind = FragmentLayout::Kind::MmaRows;
        l.warpsM = src->second.warpsM;
        l.warpsN = src->second.warpsN;
        l.warpgroup = src->second.warpgroup;
      } else if (src != byGroup.end() &&
                 src->second.kind == FragmentLayout::Kind::MfmaAccumulator && r.dim == 1 &&
                 l.shape.size() == 1) {
        l.kind = FragmentLayout::Kind::MfmaRows;
        l.warpsM = src->second.warpsM;
        l.warpsN = src->second.warpsN;
      } else {
        l.kind = FragmentLayout::Kind::Replicated;
      }
      auto [it, inserted] = byGroup.emplace(root, l);
      if (!inserted && !it->second.sameAs(l)) {
        diags_.error(r.loc, fmt::format("layout conflict: the result of this reduction, '{}', "
                                        "would be {}, but '{}' already is {} (fixed by the {})",
                                        r.dst->name, l.describe(), r.dst->name,
                                        it->second.describe(), it->second.fixedBy));
        diags_.note(it->second.fixedAt, "the other layout is fixed here");
        return false;
      }
    }
    for (const auto &[id, buf] : byId_) {
      int root = groups_.find(id);
      FragmentLayout l;
      if (buf->scope == tile::Scope::Local || !byGroup.count(root)) {
        l.kind = FragmentLayout::Kind::Replicated;
        l.shape = constShape(buf->shape);
        l.threads = threads_;
        l.fixedBy =
            buf->scope == tile::Scope::Local ? "alloc_local (per-thread array)" : "replicated";
        l.fixedAt = buf->loc;
      } else {
        l = byGroup.at(root);
      }
      if (l.slots() > 512) {
        diags_.error(buf->loc, fmt::format("not supported yet: fragment '{}' needs {} registers "
                                           "per thread (the limit is 512); use more threads or "
                                           "a smaller tile",
                                           buf->name, l.slots()));
        return false;
      }
      out[id] = l;
    }
    return true;
  }

private:
  void limitVector(int group, DType globalType, const std::string &what) {
    GroupFacts &f = facts_[groups_.find(group)];
    int v = std::max(1, 16 / dtypeBytes(globalType));
    if (v < f.vector) {
      f.vector = v;
      f.vectorReason = fmt::format("16-byte accesses of {} {}", dtypeName(globalType), what);
    }
  }

  void replicate(int id, const std::string &by, SourceLoc at) {
    GroupFacts &f = facts_[groups_.find(id)];
    if (!f.replicated) {
      f.replicated = true;
      f.replicatedBy = by;
      f.replicatedAt = at;
    }
  }

  void merge(int a, int b) {
    int ra = groups_.find(a), rb = groups_.find(b);
    if (ra == rb)
      return;
    GroupFacts fa = facts_[ra], fb = facts_[rb];
    groups_.unite(a, b);
    GroupFacts &m = facts_[groups_.find(a)];
    m = fa.vector <= fb.vector ? fa : fb;
    if (!m.replicated && (fa.replicated || fb.replicated)) {
      const GroupFacts &r = fa.replicated ? fa : fb;
      m.replicated = true;
      m.replicatedBy = r.replicatedBy;
      m.replicatedAt = r.replicatedAt;
    }
  }

  /// The constraints each statement kind contributes; one case per kind, so that a new kind
  /// states its constraints (or that it has none) or does not compile.
  void walk(const tile::Body &body) {
    for (const tile::Stmt &s : body)
      std::visit(
          tile::Overloaded{
              [&](const tile::For &f) {
                if (f.kind == tile::LoopKind::Parallel)
                  parallel(f);
                else
                  walk(f.body);
              },
              [&](const tile::If &i) {
                walk(i.then);
                walk(i.otherwise);
              },
              [&](const tile::Copy &c) {
                const tile::BufferPtr &src = c.src.buffer, &dst = c.dst.buffer;
                if (onChip(src) && onChip(dst) && constShape(src->shape) == constShape(dst->shape))
                  merge(src->id, dst->id);
                if (onChip(src) && dst->scope == tile::Scope::Global)
                  limitVector(src->id, dst->dtype, fmt::format("stores to '{}'", dst->name));
                if (onChip(dst) && src->scope == tile::Scope::Global)
                  limitVector(dst->id, src->dtype, fmt::format("loads from '{}'", src->name));
              },
              [&](const tile::Gemm &g) { gemm(g, s.loc); },
              [&](const tile::Reduce &r) {
                if (onChip(r.dst.buffer)) {
                  replicate(r.dst.buffer->id, fmt::format("reduction at line {}", s.loc.line),
                            s.loc);
                  if (onChip(r.src.buffer))
                    reduces_.push_back({r.src.buffer, r.dst.buffer, r.dim, s.loc});
                }
              },
              // No constraints: these work on whatever layout their fragments get (cumsum and
              // print go element by element or through shared memory, fill and atomic_add walk
              // the fragment's own slots, element reads and writes outside Parallel loops name
              // their element).
              [](const tile::Let &) {},
              [](const tile::Store &) {},
              [](const tile::Fill &) {},
              [](const tile::Cumsum &) {},
              [](const tile::Atomic &) {},
              [](const tile::Print &) {},
              [](const tile::SyncThreads &) {},
              [](const tile::UseSwizzle &) {},
              [](const tile::AnnotateLayout &) {},
          },
          s.op);
  }

  void gemm(const tile::Gemm &g, SourceLoc loc) {
    const tile::BufferPtr &c = g.c.buffer;
    if (!onChip(c))
      return;
    std::vector<int64_t> shape = constShape(c->shape);
    FragmentLayout l;
    l.kind = FragmentLayout::Kind::MmaAccumulator;
    l.shape = shape;
    l.threads = threads_;
    l.vector = 2;
    if (opts_.mfma)
      return mfmaGemm(g, loc, std::move(l));
    std::optional<WgmmaPlan> wg = opts_.wgmma ? planWgmma(g, threads_) : std::nullopt;
    if (wg) {
      l.warpgroup = true;
      l.warpsM = 4 * wg->groupsM;
      l.warpsN = wg->groupsN;
    } else {
      auto grid = gemmWarpGrid(shape[0], shape[1], threads_, g.policy);
      if (auto *err = std::get_if<std::string>(&grid)) {
        gemmErrors_.push_back({loc, *err});
        return;
      }
      l.warpsM = std::get<WarpGrid>(grid).warpsM;
      l.warpsN = std::get<WarpGrid>(grid).warpsN;
    }
    l.fixedBy = fmt::format("gemm at line {} (accumulator '{}', {})", loc.line, c->name,
                            wg ? "wgmma" : "mma.sync");
    l.fixedAt = loc;
    strict_.push_back({c, l});
    // A in registers on wgmma: each warpgroup holds the rows of A it multiplies (a split along
    // M only), laid out as the accumulator of an m64nKk16 wgmma (the cookbook's accumulator ->
    // A operand identity).
    const tile::BufferPtr &a = g.a.buffer;
    if (wg && l.warpsN == 1 && a->scope == tile::Scope::Fragment && a->shape.size() == 2 &&
        !g.transA && dtypeBits(a->dtype) == 16) {
      FragmentLayout la = l;
      la.shape = constShape(a->shape);
      if (la.shape[0] == shape[0] && la.shape[1] % 16 == 0) {
        la.fixedBy = fmt::format("gemm at line {} (A operand '{}', wgmma from registers)", loc.line,
                                 a->name);
        wgmmaOperandsA_.push_back({a, la});
      }
    }
    // B in registers (mma.sync only: wgmma reads B from shared memory, so planWgmma declined):
    // each warp holds the B fragments of its accumulator columns.
    const tile::BufferPtr &b = g.b.buffer;
    if (b->scope == tile::Scope::Fragment && b->shape.size() == 2 && !wg) {
      FragmentLayout lb;
      lb.kind = FragmentLayout::Kind::MmaOperandB;
      lb.shape = constShape(b->shape);
      lb.threads = threads_;
      lb.warpsM = l.warpsM;
      lb.warpsN = l.warpsN;
      lb.nByK = g.transB;
      // Pairs of consecutive k are adjacent elements only when K is the inner dimension.
      lb.vector = g.transB ? 2 : 1;
      // (Sema has checked that B's N is C's.)
      if (lb.operandK() % 16 != 0) {
        gemmErrors_.push_back(
            {loc, fmt::format("not supported yet: gemm with B ('{}') in registers and K = {} "
                              "(mma.sync needs a multiple of 16)",
                              b->name, lb.operandK())});
        return;
      }
      lb.fixedBy = fmt::format("gemm at line {} (B operand '{}', mma.sync)", loc.line, b->name);
      lb.fixedAt = loc;
      strict_.push_back({b, lb});
    }
  }

  /// gemm on MFMA 16x16x16: the accumulator of wavefronts; both operands come from shared
  /// memory (lowering stages a fragment A there).
  void mfmaGemm(const tile::Gemm &g, SourceLoc loc, FragmentLayout l) {
    const tile::BufferPtr &c = g.c.buffer, &b = g.b.buffer;
    if (b->scope == tile::Scope::Fragment) {
      gemmErrors_.push_back(
          {loc,
           fmt::format("not supported yet: gemm with B ('{}') in registers on MFMA", b->name)});
      return;
    }
    l.kind = FragmentLayout::Kind::MfmaAccumulator;
    l.vector = 1; // a lane holds four rows of one column
    auto grid = gemmWarpGrid(l.shape[0], l.shape[1], threads_, g.policy, {64, 16, 16});
    if (auto *err = std::get_if<std::string>(&grid)) {
      gemmErrors_.push_back({loc, *err});
      return;
    }
    l.warpsM = std::get<WarpGrid>(grid).warpsM;
    l.warpsN = std::get<WarpGrid>(grid).warpsN;
    l.fixedBy = fmt::format("gemm at line {} (accumulator '{}', MFMA)", loc.line, c->name);
    l.fixedAt = loc;
    strict_.push_back({c, l});
  }

  void parallel(const tile::For &f) {
    std::vector<int64_t> loopShape;
    for (const tile::Expr &e : f.extents)
      loopShape.push_back(*tile::asConstInt(e));
    // An atomic_add's destination (global) bounds no vector width: it is added element by
    // element.
    std::vector<tile::BufferPtr> bufs =
        tile::buffersIn(f.body, [](const tile::Stmt &s, const tile::BufferUse &) {
          return !std::holds_alternative<tile::Atomic>(s.op);
        });
    int anchor = -1;
    std::vector<DType> globals;
    for (const tile::BufferPtr &b : bufs) {
      if (b->scope == tile::Scope::Global)
        globals.push_back(b->dtype);
      if (!onChip(b) || b->scope == tile::Scope::Local || constShape(b->shape) != loopShape)
        continue;
      if (anchor < 0)
        anchor = b->id;
      else
        merge(anchor, b->id);
    }
    if (anchor >= 0)
      for (DType g : globals)
        limitVector(anchor, g, "in a Parallel loop over it");
  }

  const tile::Kernel &k_;
  DiagnosticEngine &diags_;
  InferenceOptions opts_;
  int64_t threads_;
  Groups groups_;
  std::map<int, GroupFacts> facts_;
  std::map<int, tile::BufferPtr> byId_;
  struct ReduceInfo {
    tile::BufferPtr src, dst;
    int dim;
    SourceLoc loc;
  };
  std::vector<ReduceInfo> reduces_;
  std::vector<std::pair<tile::BufferPtr, FragmentLayout>> strict_;
  std::vector<std::pair<tile::BufferPtr, FragmentLayout>> wgmmaOperandsA_;
  std::vector<std::pair<SourceLoc, std::string>> gemmErrors_;
};

} // namespace

bool inferFragmentLayouts(const tile::Kernel &k, DiagnosticEngine &diags,
                          const InferenceOptions &opts, std::map<int, FragmentLayout> &out) {
  return Inference(k, diags, opts).run(out);
}

} // namespace tilec::analysis
