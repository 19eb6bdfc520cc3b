#include "sync/Effects.h"

#include <algorithm>
#include <type_traits>

namespace tilec::sync {

void Regions::add(const std::optional<thir::SmemRegion> &r) {
  if (!r)
    all_ = true;
  else if (!all_)
    insert(r->begin, r->end);
}

void Regions::insert(int64_t begin, int64_t end) {
  // Merge with every interval it touches; the list stays sorted and disjoint.
  auto first = std::lower_bound(intervals_.begin(), intervals_.end(), begin,
                                [](const auto &iv, int64_t b) { return iv.second < b; });
  auto last = first;
  while (last != intervals_.end() && last->first <= end) {
    begin = std::min(begin, last->first);
    end = std::max(end, last->second);
    ++last;
  }
  first = intervals_.erase(first, last);
  intervals_.insert(first, {begin, end});
}

bool Regions::overlaps(const Regions &o) const {
  if (empty() || o.empty())
    return false;
  if (all_ || o.all_)
    return true;
  for (auto a = intervals_.begin(), b = o.intervals_.begin();
       a != intervals_.end() && b != o.intervals_.end();) {
    if (a->first < b->second && b->first < a->second)
      return true;
    (a->second <= b->second ? a : b)++;
  }
  return false;
}

Regions &Regions::operator|=(const Regions &o) {
  if (o.all_) {
    all_ = true;
    intervals_.clear();
  } else if (!all_) {
    for (const auto &[b, e] : o.intervals_)
      insert(b, e);
  }
  return *this;
}

Effects &Effects::operator|=(const Effects &o) {
  read |= o.read;
  write |= o.write;
  atomic |= o.atomic;
  asyncRead |= o.asyncRead;
  landed |= o.landed;
  aheadWrite |= o.aheadWrite;
  publish |= o.publish;
  return *this;
}

Effects EffectsCache::of(const thir::Expr &e) {
  if (!e)
    return {};
  if (auto it = exprs_.find(e.get()); it != exprs_.end())
    return it->second;
  Effects fx;
  if (auto *l = std::get_if<thir::SharedLoad>(&e->op))
    fx.read.add(l->region);
  if (auto *l = std::get_if<thir::LdMatrix>(&e->op))
    fx.read.add(l->region);
  if (auto *w = std::get_if<thir::Wgmma>(&e->op)) {
    fx.asyncRead = true;
    if (w->reads.empty())
      fx.read |= Regions::everything();
    for (const thir::SmemRegion &r : w->reads)
      fx.read.add(r);
  }
  thir::forEachOperand(*e, [&](const thir::Expr &o) { fx |= of(o); });
  exprs_.emplace(e.get(), fx);
  return fx;
}

namespace {
template <class... Fs> struct Overloaded : Fs... { using Fs::operator()...; };
template <class... Fs> Overloaded(Fs...) -> Overloaded<Fs...>;
} // namespace

Effects EffectsCache::ofStmt(const thir::Stmt &s) {
  Effects fx;
  auto use = [&](std::initializer_list<const thir::Expr *> es) {
    for (const thir::Expr *e : es)
      fx |= of(*e);
  };
  // Every statement kind is listed: a new one does not compile until it says what it does.
  std::visit(Overloaded{
                 [&](const thir::DeclVar &d) { use({&d.init}); },
                 [&](const thir::AssignVar &a) { use({&a.value}); },
                 [&](const thir::GlobalStore &g) {
                   use({&g.index, &g.value});
                 },
                 [&](const thir::SharedAtomic &a) {
                   use({&a.byteOffset, &a.value});
                   fx.atomic.add(a.region);
                 },
                 [&](const thir::GlobalAtomic &g) {
                   use({&g.index, &g.value});
                 },
                 [&](const thir::IfStmt &i) { use({&i.cond}); },
                 [&](const thir::ForStmt &f) {
                   use({&f.begin, &f.end, &f.step});
                 },
                 [&](const thir::Barrier &) {},
                 [&](const thir::SharedStore &st) {
                   use({&st.byteOffset, &st.value});
                   if (st.ahead)
                     fx.aheadWrite = true;
                   else
                     fx.write.add(st.region);
                 },
                 [&](const thir::FenceProxyAsync &) {},
                 // Orders one thread's own accesses; no barrier between threads.
                 [&](const thir::FenceCta &) {},
                 [&](const thir::Printf &p) {
                   for (const thir::Expr &a : p.args)
                     fx |= of(a);
                 },
                 [&](const thir::CpAsync &c) {
                   use({&c.index, &c.byteOffset, &c.srcBytes});
                 },
                 [&](const thir::CpAsyncCommit &) {},
                 [&](const thir::CpAsyncWait &) { fx.landed = true; },
                 [&](const thir::MbarrierInit &m) {
                   use({&m.byteOffset, &m.count});
                 },
                 [&](const thir::MbarrierArrive &m) {
                   use({&m.byteOffset, &m.txBytes});
                   fx.publish = true;
                 },
                 [&](const thir::MbarrierWait &m) {
                   use({&m.byteOffset, &m.parity});
                 },
                 [&](const thir::FenceMbarrierInit &) {},
                 // Orders the issue of wgmma between warpgroups, no memory.
                 [&](const thir::WarpgroupTurn &) {},
                 [&](const thir::TmaLoad &t) {
                   for (const thir::Expr &c : t.coords)
                     fx |= of(c);
                   use({&t.byteOffset, &t.barOffset});
                 },
                 [&](const thir::SetMaxNReg &) {},
                 [&](const thir::WgmmaWait &) {},
             },
             s.op);
  return fx;
}

Effects EffectsCache::summarize(const thir::Body &body, bool untilBarrier) {
  Effects fx;
  for (const thir::Stmt &s : body) {
    if (untilBarrier && std::holds_alternative<thir::Barrier>(s.op))
      break;
    fx |= ofStmt(s);
    if (auto *i = std::get_if<thir::IfStmt>(&s.op)) {
      fx |= summarize(i->then);
      fx |= summarize(i->otherwise);
    } else if (auto *f = std::get_if<thir::ForStmt>(&s.op)) {
      fx |= summarize(f->body);
    }
  }
  return fx;
}

} // namespace tilec::sync
