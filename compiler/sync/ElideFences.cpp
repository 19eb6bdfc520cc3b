// elide-fences (Sync.h): a forward analysis (has a generic write happened since the last fence?)
// and a backward one (can an async-proxy reader follow before the next fence?); a fence stays
// only where both say yes.
#include "sync/Effects.h"
#include "sync/Sync.h"

#include <set>

namespace tilec::sync {

namespace {

class Elider {
public:
  explicit Elider(thir::Kernel &k) : k_(k) {}

  void run() {
    forward(k_.body, false, true);
    backward(k_.body, false, true);
    erase(k_.body);
  }

private:
  /// Returns whether a generic write may be unfenced after `body`, entered with `dirty`;
  /// with `record`, notes the fences that have something to fence.
  bool forward(const thir::Body &body, bool dirty, bool record) {
    for (const thir::Stmt &st : body) {
      if (std::holds_alternative<thir::FenceProxyAsync>(st.op)) {
        if (record && dirty)
          fencesWrites_.insert(&st);
        dirty = false;
        continue;
      }
      Effects own = fx_.ofStmt(st);
      dirty |= !own.write.empty() || !own.atomic.empty() || own.landed || own.aheadWrite;
      if (auto *f = std::get_if<thir::ForStmt>(&st.op)) {
        bool top = loopFixpoint(dirty, [&](bool in) { return forward(f->body, in, false); });
        // The body is walked even when a write is pending already: its fences are recorded
        // there (`dirty || forward(...)` skipped them and so erased a nested loop's fences).
        const bool out = forward(f->body, top, record);
        dirty = dirty || out;
      } else if (auto *c = std::get_if<thir::IfStmt>(&st.op)) {
        bool t = forward(c->then, dirty, record);
        bool e = forward(c->otherwise, dirty, record);
        dirty = t || e;
      }
    }
    return dirty;
  }

  /// Returns whether an async-proxy reader may follow the start of `body` before a fence, when
  /// one may follow its end (`need`); with `record`, notes the fences someone needs.
  bool backward(const thir::Body &body, bool need, bool record) {
    for (auto it = body.rbegin(); it != body.rend(); ++it) {
      const thir::Stmt &st = *it;
      if (std::holds_alternative<thir::FenceProxyAsync>(st.op)) {
        if (!fencesWrites_.count(&st))
          continue; // going away: it stops nothing
        if (record && need)
          served_.insert(&st);
        need = false;
        continue;
      }
      if (auto *f = std::get_if<thir::ForStmt>(&st.op)) {
        // Backwards the loop's exit is its entry: the end of the body sees what follows the
        // loop and what the next iteration's start needs.
        bool end = loopFixpoint(need, [&](bool out) { return backward(f->body, out, false); });
        const bool in = backward(f->body, end, record);
        need = need || in;
      } else if (auto *c = std::get_if<thir::IfStmt>(&st.op)) {
        bool t = backward(c->then, need, record);
        bool e = backward(c->otherwise, need, record);
        need = t || e;
      }
      Effects own = fx_.ofStmt(st);
      need |= own.asyncRead || own.publish;
    }
    return need;
  }

  /// Nested bodies first: the recorded addresses of this body's statements stay valid until
  /// this body itself changes.
  void erase(thir::Body &body) {
    for (thir::Stmt &st : body) {
      if (auto *f = std::get_if<thir::ForStmt>(&st.op)) {
        erase(f->body);
      } else if (auto *c = std::get_if<thir::IfStmt>(&st.op)) {
        erase(c->then);
        erase(c->otherwise);
      }
    }
    std::erase_if(body, [&](const thir::Stmt &st) {
      return std::holds_alternative<thir::FenceProxyAsync>(st.op) &&
             !(fencesWrites_.count(&st) && served_.count(&st));
    });
  }

  thir::Kernel &k_;
  EffectsCache fx_;
  std::set<const thir::Stmt *> fencesWrites_, served_;
};

} // namespace

void elideFences(thir::Module &m) {
  for (thir::Kernel &k : m.kernels)
    Elider(k).run();
}

} // namespace tilec::sync
