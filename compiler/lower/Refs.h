// What a piece of tile IR refers to, for the planning passes: the buffers it reads or writes
// (naming one in annotate_layout does not count) and the variables it reads and binds.
#pragma once

#include "tileir/OpInterface.h"

#include <set>

namespace tilec::lower {

/// Buffers and variables a piece of tile IR refers to, and the variables and buffers it writes.
struct Refs {
  std::set<int> buffers, vars, assignedVars, writtenBuffers;

  void expr(const tile::Expr &e) {
    tile::forEachNode(e, [&](const tile::Node &n) {
      if (auto *v = std::get_if<tile::VarRef>(&n.op))
        vars.insert(v->var->id);
      else if (auto *l = std::get_if<tile::Load>(&n.op))
        buffers.insert(l->buffer->id);
    });
  }
  void body(const tile::Body &b) {
    for (const tile::Stmt &s : b)
      stmt(s);
  }
  void stmt(const tile::Stmt &s) {
    tile::Operands o = tile::operandsOf(s);
    for (const tile::BufferUse &u : o.uses) {
      if (u.access == tile::Access::Name) // annotate_layout: the contents are not touched
        continue;
      buffers.insert(u.buffer->id);
      if (tile::writes(u.access))
        writtenBuffers.insert(u.buffer->id);
    }
    for (const tile::VarPtr &v : o.defines)
      assignedVars.insert(v->id);
    for (const tile::Expr *e : o.exprs)
      expr(*e);
    for (const tile::Body *b : o.bodies)
      body(*b);
  }
};

} // namespace tilec::lower
