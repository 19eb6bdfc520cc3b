#include "analysis/FragmentLayout.h"

#include <fmt/format.h>

#include <functional>
#include <numeric>

namespace tilec::analysis {

int64_t FragmentLayout::total() const {
  return std::accumulate(shape.begin(), shape.end(), int64_t{1}, std::multiplies<>());
}

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

void collectLoads(const tile::Expr &e, std::vector<const tile::Load *> &out) {
  std::visit(
      [&](const auto &op) {
        using T = std::decay_t<decltype(op)>;
        if constexpr (std::is_same_v<T, tile::Load>) {
          out.push_back(&op);
          for (const tile::Expr &i : op.indices)
            collectLoads(i, out);
        } else if constexpr (std::is_same_v<T, tile::Unary> || std::is_same_v<T, tile::Cast>) {
          collectLoads(op.a, out);
        } else if constexpr (std::is_same_v<T, tile::Binary>) {
          collectLoads(op.a, out);
          collectLoads(op.b, out);
        } else if constexpr (std::is_same_v<T, tile::Select>) {
          collectLoads(op.cond, out);
          collectLoads(op.a, out);
          collectLoads(op.b, out);
        }
      },
      e->op);
}

/// Every buffer a Parallel body touches, with the global dtypes it accesses.
void collectBody(const tile::Body &b, std::vector<tile::BufferPtr> &bufs) {
  for (const tile::Stmt &s : b) {
    std::vector<const tile::Load *> loads;
    if (auto *l = std::get_if<tile::Let>(&s.op)) {
      collectLoads(l->value, loads);
    } else if (auto *st = std::get_if<tile::Store>(&s.op)) {
      bufs.push_back(st->buffer);
      collectLoads(st->value, loads);
      for (const tile::Expr &i : st->indices)
        collectLoads(i, loads);
    } else if (auto *f = std::get_if<tile::For>(&s.op)) {
      collectBody(f->body, bufs);
    } else if (auto *i = std::get_if<tile::If>(&s.op)) {
      collectLoads(i->cond, loads);
      collectBody(i->then, bufs);
      collectBody(i->otherwise, bufs);
    }
    for (const tile::Load *l : loads)
      bufs.push_back(l->buffer);
  }
}

std::vector<int64_t> constShape(const std::vector<tile::Expr> &shape) {
  std::vector<int64_t> s;
  for (const tile::Expr &e : shape)
    s.push_back(tile::asConstInt(e).value_or(1));
  return s;
}

class Inference {
public:
  Inference(const tile::Kernel &k, DiagnosticEngine &diags) : k_(k), diags_(diags) {}

  bool run(std::map<int, FragmentLayout> &out) {
    for (const tile::BufferPtr &b : k_.buffers)
      if (onChip(b)) {
        groups_.find(b->id);
        byId_[b->id] = b;
      }
    walk(k_.body);
    for (const auto &[id, buf] : byId_) {
      int root = groups_.find(id);
      GroupFacts &f = facts_[root];
      FragmentLayout l;
      l.shape = constShape(buf->shape);
      l.threads = k_.threads;
      if (buf->scope == tile::Scope::Local || f.replicated) {
        l.kind = FragmentLayout::Kind::Replicated;
        l.vector = 1;
        l.fixedBy = buf->scope == tile::Scope::Local ? "alloc_local (per-thread array)"
                                                     : f.replicatedBy;
        l.fixedAt = buf->scope == tile::Scope::Local ? buf->loc : f.replicatedAt;
      } else {
        int v = f.vector;
        std::string reason = f.vectorReason;
        int64_t inner = l.shape.back();
        while (v > 1 && inner % v != 0) {
          v /= 2;
          reason = fmt::format("the last dimension {} is a multiple of {} only", inner, v);
        }
        // A thread holds whole vectors; more than one register chunk per thread is fine.
        l.kind = FragmentLayout::Kind::Distributed;
        l.vector = v;
        l.vectorReason = reason;
        l.fixedBy = "free: coalesced, vectorized global access";
        l.fixedAt = buf->loc;
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

  void walk(const tile::Body &body) {
    for (const tile::Stmt &s : body) {
      if (auto *f = std::get_if<tile::For>(&s.op)) {
        if (f->kind == tile::LoopKind::Parallel)
          parallel(*f);
        else
          walk(f->body);
      } else if (auto *i = std::get_if<tile::If>(&s.op)) {
        walk(i->then);
        walk(i->otherwise);
      } else if (auto *c = std::get_if<tile::Copy>(&s.op)) {
        const tile::BufferPtr &src = c->src.buffer, &dst = c->dst.buffer;
        if (onChip(src) && onChip(dst) && constShape(src->shape) == constShape(dst->shape))
          merge(src->id, dst->id);
        if (onChip(src) && dst->scope == tile::Scope::Global)
          limitVector(src->id, dst->dtype, fmt::format("stores to '{}'", dst->name));
        if (onChip(dst) && src->scope == tile::Scope::Global)
          limitVector(dst->id, src->dtype, fmt::format("loads from '{}'", src->name));
      } else if (auto *r = std::get_if<tile::Reduce>(&s.op)) {
        if (onChip(r->dst.buffer))
          replicate(r->dst.buffer->id,
                    fmt::format("{} at line {}", "reduction result", s.loc.line), s.loc);
      }
    }
  }

  void parallel(const tile::For &f) {
    std::vector<int64_t> loopShape;
    for (const tile::Expr &e : f.extents)
      loopShape.push_back(*tile::asConstInt(e));
    std::vector<tile::BufferPtr> bufs;
    collectBody(f.body, bufs);
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
  Groups groups_;
  std::map<int, GroupFacts> facts_;
  std::map<int, tile::BufferPtr> byId_;
};

} // namespace

bool inferFragmentLayouts(const tile::Kernel &k, DiagnosticEngine &diags,
                          std::map<int, FragmentLayout> &out) {
  return Inference(k, diags).run(out);
}

} // namespace tilec::analysis
