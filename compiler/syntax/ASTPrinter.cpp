#include "syntax/ASTPrinter.h"

#include <fmt/format.h>

#include <string_view>

namespace tilec {
namespace {

using namespace ast;

class Printer {
public:
  std::string out;

  void module(const Module &m) {
    for (const TopLevel &item : m.items) {
      std::visit([&](const auto &node) { top(node); }, item);
      out += '\n';
    }
  }

  void expr(const Expr *e) {
    if (!e) {
      out += '_';
      return;
    }
    std::visit([&](const auto &node) { exprNode(node); }, e->node);
  }

private:
  void top(const Import &imp) {
    out += "(import " + dotted(imp.module);
    if (!imp.alias.empty())
      out += " as " + imp.alias;
    out += ')';
  }
  void top(const FromImport &fi) {
    out += "(from " + dotted(fi.module) + " import";
    for (const ImportedName &n : fi.names)
      out += n.alias.empty() ? " " + n.name : fmt::format(" ({} as {})", n.name, n.alias);
    out += ')';
  }
  void top(const ConstDecl &c) {
    out += "(const " + c.name + ' ';
    expr(c.value.get());
    out += ')';
  }
  void top(const FuncDef &f) {
    out += "(def " + f.name;
    for (const Decorator &d : f.decorators) {
      if (!d.call) {
        out += " @" + d.name;
        continue;
      }
      out += " @(" + d.name;
      callArgs(*d.call);
      out += ')';
    }
    out += " (params";
    for (const Param &p : f.params) {
      out += ' ' + p.name;
      if (p.annotation) {
        out += ':';
        expr(p.annotation.get());
      }
    }
    out += ')';
    block(f.body, 1);
    out += ')';
  }

  static std::string dotted(const std::vector<std::string> &parts) {
    std::string s;
    for (const std::string &p : parts)
      s += (s.empty() ? "" : ".") + p;
    return s;
  }

  void block(const Block &b, int indent) {
    for (const StmtPtr &s : b) {
      out += '\n';
      out.append(2 * indent, ' ');
      stmt(*s, indent);
    }
  }

  void stmt(const Stmt &s, int indent) {
    std::visit([&](const auto &node) { stmtNode(node, indent); }, s.node);
  }

  void stmtNode(const ExprStmt &s, int) {
    out += "(expr ";
    expr(s.expr.get());
    out += ')';
  }
  void stmtNode(const Assign &s, int) {
    out += "(assign ";
    expr(s.target.get());
    out += ' ';
    expr(s.value.get());
    out += ')';
  }
  void stmtNode(const AugAssign &s, int) {
    out += fmt::format("(augassign {}= ", binaryOpSpelling(s.op));
    expr(s.target.get());
    out += ' ';
    expr(s.value.get());
    out += ')';
  }
  void vars(const std::vector<LoopVar> &vs) {
    out += '(';
    for (size_t i = 0; i < vs.size(); ++i)
      out += (i ? " " : "") + vs[i].name;
    out += ')';
  }
  void stmtNode(const For &s, int indent) {
    out += "(for ";
    vars(s.vars);
    out += ' ';
    expr(s.iter.get());
    block(s.body, indent + 1);
    out += ')';
  }
  void stmtNode(const With &s, int indent) {
    out += "(with ";
    expr(s.expr.get());
    if (!s.vars.empty()) {
      out += " as ";
      vars(s.vars);
    }
    block(s.body, indent + 1);
    out += ')';
  }
  void stmtNode(const If &s, int indent) {
    out += "(if ";
    expr(s.cond.get());
    block(s.then, indent + 1);
    if (!s.orelse.empty()) {
      out += '\n';
      out.append(2 * indent, ' ');
      out += "else";
      block(s.orelse, indent + 1);
    }
    out += ')';
  }
  void stmtNode(const Pass &, int) { out += "(pass)"; }
  void stmtNode(const Return &s, int) {
    out += "(return";
    if (s.value) {
      out += ' ';
      expr(s.value.get());
    }
    out += ')';
  }

  void exprNode(const IntLit &e) { out += fmt::format("(int {})", e.value); }
  void exprNode(const FloatLit &e) {
    std::string s = fmt::format("{}", e.value);
    // Keep floats distinguishable from ints in the dump: `1.0`, not `1`.
    if (s.find_first_of(".eni") == std::string::npos)
      s += ".0";
    out += "(float " + s + ')';
  }
  void exprNode(const BoolLit &e) { out += e.value ? "(bool True)" : "(bool False)"; }
  void exprNode(const StringLit &e) {
    out += "(str \"";
    for (char c : e.value) {
      auto b = static_cast<unsigned char>(c);
      if (c == '"' || c == '\\')
        out += {'\\', c};
      else if (c == '\n')
        out += "\\n";
      else if (c == '\t')
        out += "\\t";
      else if (b < 0x20 || b == 0x7F)
        out += fmt::format("\\x{:02X}", b);
      else
        out += c;
    }
    out += "\")";
  }
  void exprNode(const Name &e) { out += "(name " + e.id + ')'; }
  void exprNode(const Attribute &e) {
    out += "(attr ";
    expr(e.base.get());
    out += ' ' + e.attr + ')';
  }
  void exprNode(const Slice &e) {
    out += "(slice ";
    expr(e.lo.get());
    out += ' ';
    expr(e.hi.get());
    out += ')';
  }
  void exprNode(const Subscript &e) {
    out += "(subscript ";
    expr(e.base.get());
    for (const ExprPtr &i : e.indices) {
      out += ' ';
      expr(i.get());
    }
    out += ')';
  }
  void callArgs(const Call &c) {
    for (const ExprPtr &a : c.args) {
      out += ' ';
      expr(a.get());
    }
    for (const KeywordArg &kw : c.kwargs) {
      out += " (kw " + kw.name + ' ';
      expr(kw.value.get());
      out += ')';
    }
  }
  void exprNode(const Call &e) {
    out += "(call ";
    expr(e.callee.get());
    callArgs(e);
    out += ')';
  }
  void exprNode(const Unary &e) {
    out += e.op == UnaryOp::Neg      ? "(neg "
           : e.op == UnaryOp::Pos    ? "(pos "
           : e.op == UnaryOp::Invert ? "(invert "
                                     : "(not ";
    expr(e.operand.get());
    out += ')';
  }
  void exprNode(const Binary &e) {
    out += fmt::format("({} ", binaryOpSpelling(e.op));
    expr(e.lhs.get());
    out += ' ';
    expr(e.rhs.get());
    out += ')';
  }
  void exprNode(const Conditional &e) {
    out += "(ifexp ";
    expr(e.cond.get());
    out += ' ';
    expr(e.then.get());
    out += ' ';
    expr(e.otherwise.get());
    out += ')';
  }
  void elements(const char *head, const std::vector<ExprPtr> &elts) {
    out += '(';
    out += head;
    for (const ExprPtr &e : elts) {
      out += ' ';
      expr(e.get());
    }
    out += ')';
  }
  void exprNode(const Tuple &e) { elements("tuple", e.elts); }
  void exprNode(const List &e) { elements("list", e.elts); }
  void exprNode(const Dict &e) {
    out += "(dict";
    for (const DictEntry &entry : e.entries) {
      out += " (";
      expr(entry.key.get());
      out += ' ';
      expr(entry.value.get());
      out += ')';
    }
    out += ')';
  }
};

} // namespace

std::string printAST(const ast::Module &module) {
  Printer p;
  p.module(module);
  return std::move(p.out);
}

std::string printExpr(const ast::Expr &expr) {
  Printer p;
  p.expr(&expr);
  return std::move(p.out);
}

} // namespace tilec
