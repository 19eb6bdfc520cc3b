// The thread-IR parser's expressions and operations.
#include "threadir/ThreadIRParserImpl.h"

#include "threadir/ThreadIRNames.h"
#include "threadir/ThreadIRText.h"

#include <bit>
#include <charconv>
#include <climits>
#include <cmath>
#include <limits>

namespace tilec::thir::detail {

Expr Parser::make(SourceLoc loc, Type t, decltype(Node::op) op) {
  auto e = std::make_shared<const Node>(Node{t, std::move(op)});
  int depth = 0;
  forEachOperand(*e, [&](const Expr &c) { depth = std::max(depth, depths_[c.get()]); });
  if (depth + 1 > kMaxParseDepth)
    error(loc, fmt::format("expression deeper than {} levels", kMaxParseDepth));
  depths_[e.get()] = depth + 1;
  locs_[e.get()] = loc;
  return e;
}

Expr Parser::expr() {
  DepthGuard guard(*this, cur_.loc);
  Expr e = primary();
  while (cur_.isPunct("[")) {
    SourceLoc loc = cur_.loc;
    advance();
    expectIdent("lane");
    int lane = smallInt("a lane number");
    expectPunct("]");
    e = make(loc, {e->type.elem, 1}, ExtractLane{e, lane});
  }
  return e;
}

Expr Parser::primary() {
  SourceLoc loc = cur_.loc;
  switch (cur_.kind) {
  case TokKind::Int:
  case TokKind::Float:
    return literal(loc, false);
  case TokKind::Punct:
    if (accept("-"))
      return literal(loc, true);
    if (cur_.isPunct("("))
      return parenthesized(loc);
    break;
  case TokKind::Param: {
    int index = paramIndex();
    const Param &p = (*params_)[index];
    return make(loc, {p.kind == ParamKind::Dim ? DType::Int64 : p.dtype, 1}, ParamRef{index});
  }
  case TokKind::Temp: {
    auto id = unsignedValue(cur_.text);
    auto it = id ? lets_.find(*id) : lets_.end();
    if (it == lets_.end())
      error(loc, fmt::format("${} is not bound (a 'let' is visible only in the statement "
                             "that follows it)",
                             cur_.text));
    advance();
    return it->second;
  }
  case TokKind::Ident:
    return named(loc);
  default:
    break;
  }
  error(loc, fmt::format("expected an expression but found {}", describe(cur_)));
}

Expr Parser::literal(SourceLoc loc, bool negative) {
  Expr e;
  if (cur_.kind == TokKind::Int) {
    constexpr uint64_t kMaxMagnitude = uint64_t{1} << 63;
    auto magnitude = unsignedValue(cur_.text);
    if (!magnitude || *magnitude > kMaxMagnitude - (negative ? 0 : 1))
      error(loc, "integer literal out of range");
    advance();
    int64_t v = negative ? static_cast<int64_t>(0 - *magnitude) : static_cast<int64_t>(*magnitude);
    Type t = accept(":") ? type() : Type{DType::Int64, 1};
    return make(loc, t, ConstInt{v});
  }
  double v = 0;
  if (cur_.kind == TokKind::Float) {
    const std::string &s = cur_.text;
    auto [end, ec] = std::from_chars(s.data(), s.data() + s.size(), v);
    if (ec != std::errc() || end != s.data() + s.size())
      error(cur_.loc, "float literal out of range");
    advance();
  } else if (cur_.isIdent("inf")) {
    v = std::numeric_limits<double>::infinity();
    advance();
  } else if (cur_.isIdent("nan")) {
    v = nan();
  } else {
    error(cur_.loc, fmt::format("expected a number but found {}", describe(cur_)));
  }
  if (negative)
    v = -v;
  Type t = accept(":") ? type() : Type{DType::Float32, 1};
  return make(loc, t, ConstFloat{v});
}

double Parser::nan() {
  advance();
  if (!accept("("))
    return text::kCanonicalNaN;
  SourceLoc loc = cur_.loc;
  auto bits = cur_.kind == TokKind::Int ? unsignedValue(cur_.text) : std::nullopt;
  double v = bits ? std::bit_cast<double>(*bits) : 0.0;
  if (!bits || !std::isnan(v))
    error(loc, "expected the bits of a NaN (nan(0x7ff8000000000001))");
  advance();
  expectPunct(")");
  return v;
}

Expr Parser::parenthesized(SourceLoc loc) {
  advance();
  Expr a = expr();
  if (accept(")"))
    return a;
  SourceLoc opLoc = cur_.loc;
  std::optional<BinOp> op;
  if (cur_.kind == TokKind::Punct || cur_.kind == TokKind::Ident)
    op = names::lookup<BinOp>(names::kBinOpInfix, cur_.text);
  if (!op)
    error(opLoc, fmt::format("expected a binary operator or ')' but found {}", describe(cur_)));
  advance();
  Expr b = expr();
  expectPunct(")");
  return binary(loc, *op, a, b);
}

Expr Parser::binary(SourceLoc loc, BinOp op, Expr a, Expr b) {
  bool comparison = op >= BinOp::Eq && op <= BinOp::Ge;
  Type t = comparison ? Type{DType::Bool, a->type.lanes} : a->type;
  return make(loc, t, Binary{op, std::move(a), std::move(b)});
}

std::vector<Expr> Parser::arguments(size_t n) {
  expectPunct("(");
  std::vector<Expr> args;
  for (size_t i = 0; i < n; ++i) {
    if (i)
      expectPunct(",");
    args.push_back(expr());
  }
  expectPunct(")");
  return args;
}

Expr Parser::named(SourceLoc loc) {
  const std::string word = cur_.text;
  if (auto id = varId(word)) {
    auto it = vars_.find(*id);
    if (it == vars_.end())
      error(loc, fmt::format("v{} used before its declaration", *id));
    advance();
    return make(loc, it->second, VarRef{*id});
  }
  if (auto s = names::lookup<Special>(names::kSpecials, word)) {
    advance();
    return make(loc, {DType::Int32, 1}, SpecialReg{*s});
  }
  if (word == "inf" || word == "nan")
    return literal(loc, false);
  if (auto op = names::lookup<UnOp>(names::kUnOps, word)) {
    advance();
    Expr a = arguments(1)[0];
    Type t = a->type;
    return make(loc, t, Unary{*op, std::move(a)});
  }
  if (auto op = names::lookup<BinOp>(names::kBinOpCalls, word)) {
    advance();
    auto args = arguments(2);
    return binary(loc, *op, args[0], args[1]);
  }
  if (word.find('.') != std::string::npos)
    return dotted(loc, word);
  advance();
  if (word == "select") {
    auto args = arguments(3);
    Type t = args[1]->type;
    return make(loc, t, Select{args[0], args[1], args[2]});
  }
  if (word == "undef")
    return make(loc, typeArgument(), Undef{});
  if (word == "cast" || word == "broadcast" || word == "bitcast") {
    Type t = typeArgument();
    Expr a = arguments(1)[0];
    if (word == "cast")
      return make(loc, t, Cast{a});
    if (word == "broadcast")
      return make(loc, t, Broadcast{a});
    return make(loc, t, Bitcast{a});
  }
  if (word == "vector") {
    Type t = typeArgument();
    expectPunct("(");
    MakeVector v;
    do
      v.elems.push_back(expr());
    while (accept(","));
    expectPunct(")");
    return make(loc, t, std::move(v));
  }
  if (word == "load") {
    Type t = typeArgument();
    expectPunct("(");
    auto [param, index] = element();
    expectPunct(",");
    expectIdent("align");
    int align = smallInt("an alignment");
    expectPunct(")");
    return make(loc, t, GlobalLoad{param, index, align});
  }
  if (word == "shfl_xor") {
    expectPunct("(");
    Expr value = expr();
    expectPunct(",");
    int mask = smallInt("a lane mask");
    expectPunct(")");
    Type t = value->type;
    return make(loc, t, ShflXor{value, mask});
  }
  if (word == "smem") {
    Type t = typeArgument();
    std::optional<SmemRegion> region;
    Expr offset = sharedOffset(false, &region);
    return make(loc, t, SharedLoad{offset, region});
  }
  if (word == "smem_address")
    return make(loc, {DType::Int32, 1}, SharedAddress{arguments(1)[0]});
  error(loc, fmt::format("unknown operation '{}'", word));
}

Expr Parser::dotted(SourceLoc loc, const std::string &word) {
  std::vector<std::string_view> parts;
  std::string_view rest = word;
  for (size_t dot; (dot = rest.find('.')) != std::string_view::npos; rest.remove_prefix(dot + 1))
    parts.push_back(rest.substr(0, dot));
  parts.push_back(rest);
  auto badForm = [&](std::string_view form) -> Expr {
    error(loc, fmt::format("malformed '{}' (expected {})", word, form));
  };
  advance();
  if (parts[0] == "ldmatrix") {
    auto num = parts.size() >= 2 && parts[1].size() == 2 && parts[1][0] == 'x'
                   ? unsignedValue(parts[1].substr(1))
                   : std::nullopt;
    if (!num || parts.size() > 3 || (parts.size() == 3 && parts[2] != "trans"))
      return badForm("ldmatrix.x1, .x2 or .x4, optionally .trans");
    expectPunct("(");
    std::optional<SmemRegion> region;
    Expr offset = sharedOffset(true, &region);
    expectPunct(")");
    int n = static_cast<int>(*num);
    return make(loc, {DType::Int32, n}, LdMatrix{offset, n, parts.size() == 3, region});
  }
  if (parts[0] == "mma") {
    auto input = parts.size() == 3 ? parseDType(parts[2]) : std::nullopt;
    if (!input || parts[1] != "m16n8k16")
      return badForm("mma.m16n8k16.float16 or mma.m16n8k16.bfloat16");
    auto args = arguments(3);
    return make(loc, {DType::Float32, 4}, MmaSync{args[0], args[1], args[2], *input});
  }
  if (parts[0] == "mfma") {
    int m = 0, n = 0, k = 0;
    auto input = parts.size() == 3 ? parseDType(parts[2]) : std::nullopt;
    bool shape = parts.size() == 3 && (parts[1] == "m32n32k8" || parts[1] == "m16n16k16");
    if (!input || !shape)
      return badForm("mfma.m32n32k8 or mfma.m16n16k16, then .float16 or .bfloat16");
    std::tie(m, n, k) = parts[1] == "m32n32k8" ? std::tuple{32, 32, 8} : std::tuple{16, 16, 16};
    auto args = arguments(3);
    return make(loc, {DType::Float32, m * n / 64},
                Mfma{args[0], args[1], args[2], m, n, k, *input});
  }
  if (parts[0] == "wgmma")
    return wgmma(loc, parts, badForm);
  if (parts[0] == "shfl") {
    for (ShflMode m : {ShflMode::Xor, ShflMode::Down, ShflMode::Up, ShflMode::Idx})
      if (parts.size() == 2 && parts[1] == shflModeName(m)) {
        auto args = arguments(2);
        Type t = args[0]->type;
        return make(loc, t, Shfl{m, args[0], args[1]});
      }
    return badForm("shfl.xor, shfl.down, shfl.up or shfl.idx");
  }
  error(loc, fmt::format("unknown operation '{}'", word));
}

template <class BadForm>
Expr Parser::wgmma(SourceLoc loc, const std::vector<std::string_view> &parts, BadForm &badForm) {
  constexpr std::string_view kForm =
      "wgmma.m64nNk16.DTYPE or wgmma.m64nNk32.FLOAT8[.FLOAT8] with .rs, .a_mn_major, "
      ".b_mn_major, .pendingN, .turn[wait|pass]N";
  std::string_view shape = parts.size() >= 3 ? parts[1] : "";
  auto input = parts.size() >= 3 ? parseDType(parts[2]) : std::nullopt;
  // k follows from the input type: 32 for float8, 16 otherwise.
  std::string_view k = input && dtypeBits(*input) == 8 ? "k32" : "k16";
  if (!input || !shape.starts_with("m64n") || !shape.ends_with(k) || shape.size() <= 7)
    return badForm(kForm);
  auto n = unsignedValue(shape.substr(4, shape.size() - 7));
  if (!n || *n > 256)
    return badForm(kForm);
  Wgmma w;
  w.n = static_cast<int>(*n);
  w.inputType = *input;
  size_t flagsFrom = 3;
  // B's type, written only where it differs from A's (float8 e4m3 x e5m2).
  if (auto b = parts.size() >= 4 ? parseDType(parts[3]) : std::nullopt) {
    if (*b == *input)
      return badForm(kForm);
    w.bInputType = *b;
    flagsFrom = 4;
  }
  std::map<std::string_view, bool *> flags = {
      {"rs", &w.aInRegisters}, {"a_mn_major", &w.aMnMajor}, {"b_mn_major", &w.bMnMajor}};
  for (size_t i = flagsFrom; i < parts.size(); ++i) {
    if (parts[i].starts_with("pending") && !w.pending) {
      auto n = unsignedValue(parts[i].substr(7));
      if (!n || *n < 1 || *n > INT_MAX)
        return badForm(kForm);
      w.pending = static_cast<int>(*n);
      continue;
    }
    if (parts[i].starts_with("turn") && w.turn.barrier < 0) {
      std::string_view rest = parts[i].substr(4);
      w.turn.wait = !rest.starts_with("pass");
      w.turn.pass = !rest.starts_with("wait");
      if (!w.turn.wait || !w.turn.pass)
        rest.remove_prefix(4);
      auto n = unsignedValue(rest);
      if (!n || *n > INT_MAX)
        return badForm(kForm);
      w.turn.barrier = static_cast<int>(*n);
      continue;
    }
    auto it = flags.find(parts[i]);
    if (it == flags.end() || *it->second)
      return badForm(kForm);
    *it->second = true;
  }
  expectPunct("(");
  w.acc = expr();
  while (accept(",")) {
    expectPunct("[");
    // `[clear if COND]` and `[issue if COND]`, each once, before the instructions.
    auto condition = [&](std::string_view word, Expr &slot) {
      if (!cur_.isIdent(word) || slot || !w.instrs.empty())
        return false;
      advance();
      expectIdent("if");
      slot = expr();
      expectPunct("]");
      return true;
    };
    if (condition("clear", w.clearAcc) || condition("issue", w.active))
      continue;
    expectIdent("acc");
    WgmmaInstr in;
    in.accFirst = smallInt("the first accumulator lane");
    expectPunct(":");
    in.a = expr();
    expectPunct(",");
    in.bDesc = expr();
    expectPunct("]");
    w.instrs.push_back(std::move(in));
  }
  // The shared bytes it reads: `; begin, end` each.
  while (accept(";"))
    w.reads.push_back(regionBounds());
  expectPunct(")");
  Type t = w.acc->type;
  return make(loc, t, std::move(w));
}

} // namespace tilec::thir::detail
