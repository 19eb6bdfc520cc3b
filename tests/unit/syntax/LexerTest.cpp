#include "syntax/Lexer.h"

#include <doctest/doctest.h>
#include <fmt/format.h>

#include <string>
#include <vector>

using namespace tilec;

namespace {

struct Lexed {
  std::vector<Token> tokens;
  std::vector<std::string> errors; // "line:col: message"
};

Lexed lex(std::string text) {
  SourceManager sm;
  uint32_t file = sm.addBuffer("test.tile", std::move(text));
  DiagnosticEngine diags(sm);
  Lexer lexer(sm, file, diags);
  Lexed out;
  for (;;) {
    Token t = lexer.next();
    t.text = {}; // the buffer dies with `sm`
    out.tokens.push_back(t);
    if (t.kind == TokenKind::Eof)
      break;
    REQUIRE(out.tokens.size() < 1'000'000);
  }
  for (const Diagnostic &d : diags.diagnostics())
    out.errors.push_back(fmt::format("{}:{}: {}", d.loc.line, d.loc.col, d.message));
  return out;
}

std::string describe(const Token &t) {
  switch (t.kind) {
  case TokenKind::Newline:
    return "NL";
  case TokenKind::Indent:
    return "IND";
  case TokenKind::Dedent:
    return "DED";
  case TokenKind::Eof:
    return "EOF";
  case TokenKind::IntLiteral:
    return fmt::format("int:{}", t.intValue);
  case TokenKind::FloatLiteral:
    return fmt::format("float:{}", t.floatValue);
  case TokenKind::StringLiteral:
    return fmt::format("str:{}", t.stringValue);
  default:
    return tokenKindName(t.kind);
  }
}

/// The token stream as one string; identifiers print as `id`, other tokens by kind.
std::string kinds(const std::string &text) {
  Lexed l = lex(text);
  std::string s;
  for (const Token &t : l.tokens)
    s += (s.empty() ? "" : " ") + describe(t);
  return s;
}

/// Tokens of an input that must lex without errors.
std::string clean(const std::string &text) {
  Lexed l = lex(text);
  CHECK_MESSAGE(l.errors.empty(), (l.errors.empty() ? "" : l.errors.front()));
  return kinds(text);
}

std::string firstError(const std::string &text) {
  Lexed l = lex(text);
  return l.errors.empty() ? "<no error>" : l.errors.front();
}

} // namespace

TEST_CASE("lexer: simple lines and end of file") {
  CHECK(clean("") == "EOF");
  CHECK(clean("# only a comment\n\n   \n") == "EOF");
  CHECK(clean("x = 1\n") == "identifier '=' int:1 NL EOF");
  // A missing final newline is supplied.
  CHECK(clean("x = 1") == "identifier '=' int:1 NL EOF");
  CHECK(clean("x = 1  # comment") == "identifier '=' int:1 NL EOF");
  CHECK(clean("a\r\nb\r\n") == "identifier NL identifier NL EOF");
}

TEST_CASE("lexer: indentation") {
  CHECK(clean("if a:\n  b\n  c\nd\n") ==
        "'if' identifier ':' NL IND identifier NL identifier NL DED identifier NL EOF");
  CHECK(clean("a:\n    b:\n        c\nd") ==
        "identifier ':' NL IND identifier ':' NL IND identifier NL DED DED identifier NL EOF");
  // Blocks still open at the end of the file are closed.
  CHECK(clean("a:\n  b:\n    c") ==
        "identifier ':' NL IND identifier ':' NL IND identifier NL DED DED EOF");
  // Blank and comment-only lines, whatever their indentation, are not layout.
  CHECK(clean("a:\n\n      # x\n  b\n\n# y\n  c\n") ==
        "identifier ':' NL IND identifier NL identifier NL DED EOF");
  CHECK(clean("a:\r\n  b\r\n") == "identifier ':' NL IND identifier NL DED EOF");
}

TEST_CASE("lexer: indentation errors") {
  CHECK(firstError("a:\n\tb\n") == "2:1: tabs are not allowed in indentation; use spaces");
  CHECK(firstError("a:\n  \tb\n") == "2:3: tabs are not allowed in indentation; use spaces");
  // A tab after the indentation is plain whitespace.
  CHECK(lex("a\t= 1\n").errors.empty());
  // A tab on a blank line is not indentation.
  CHECK(lex("a\n\t\nb\n").errors.empty());
  CHECK(firstError("a:\n    b\n  c\n") ==
        "3:3: unindent does not match any outer indentation level");
  Lexed l = lex("a:\n    b\n  c\n");
  CHECK(l.errors.size() == 1);
}

TEST_CASE("lexer: implicit and explicit line joining") {
  CHECK(clean("f(a,\n      b)\nc\n") ==
        "identifier '(' identifier ',' identifier ')' NL identifier NL EOF");
  CHECK(clean("x = [1,\n# comment\n\n 2]\n") == "identifier '=' '[' int:1 ',' int:2 ']' NL EOF");
  CHECK(clean("d = {a:\n   b}\n") == "identifier '=' '{' identifier ':' identifier '}' NL EOF");
  CHECK(clean("x = 1 + \\\n        2\ny\n") ==
        "identifier '=' int:1 '+' int:2 NL identifier NL EOF");
  CHECK(clean("x = 1 + \\\r\n  2\n") == "identifier '=' int:1 '+' int:2 NL EOF");
  CHECK(firstError("x = 1 \\ 2\n") ==
        "1:7: unexpected character after line continuation character");
  CHECK(firstError("x = 1 \\") == "1:7: unexpected end of file after line continuation character");
}

TEST_CASE("lexer: integer literals") {
  CHECK(clean("128 0x80 0XfF 1_024 0 0x_10 9223372036854775807") ==
        "int:128 int:128 int:255 int:1024 int:0 int:16 int:9223372036854775807 NL EOF");
  CHECK(firstError("9223372036854775808") == "1:1: integer literal is too large");
  CHECK(firstError("x = 99999999999999999999999") == "1:5: integer literal is too large");
  CHECK(firstError("0x8000000000000000") == "1:1: integer literal is too large");
  CHECK(firstError("0x") == "1:1: invalid hexadecimal literal");
  CHECK(firstError("0xg") == "1:1: invalid hexadecimal literal");
  CHECK(firstError("1_") == "1:1: invalid decimal literal");
  CHECK(firstError("1__0") == "1:1: invalid decimal literal");
  CHECK(firstError("12abc") == "1:1: invalid decimal literal");
}

TEST_CASE("lexer: float literals") {
  CHECK(clean("1.0 1e-6 .5 2. 1_0.2_5 3E+2 1.5e3") ==
        "float:1 float:1e-06 float:0.5 float:2 float:10.25 float:300 float:1500 NL EOF");
  CHECK(firstError("1e999") == "1:1: float literal is too large");
  CHECK(lex("1e-999").errors.empty());
  CHECK(firstError("1.5x") == "1:1: invalid decimal literal");
  CHECK(firstError("1._5") == "1:1: invalid decimal literal");
  // `x.5` is not a float after a name: it lexes as a name, '.', and then fails in the parser.
  CHECK(clean("a[1:2]") == "identifier '[' int:1 ':' int:2 ']' NL EOF");
}

TEST_CASE("lexer: strings and booleans") {
  CHECK(clean("\"col\" 'row' \"a\\\"b\" 'it\\'s' \"\\n\\t\\\\\"") ==
        "str:col str:row str:a\"b str:it's str:\n\t\\ NL EOF");
  CHECK(clean("\"unknown \\q escape\"") == "str:unknown \\q escape NL EOF");
  CHECK(clean("'λ is fine in a string'") == "str:λ is fine in a string NL EOF");
  CHECK(clean("True False") == "'True' 'False' NL EOF");
  CHECK(firstError("x = \"abc\ny = 1\n") == "1:5: unterminated string literal");
  CHECK(firstError("x = 'abc") == "1:5: unterminated string literal");
  CHECK(firstError("x = 'abc\\") == "1:5: unterminated string literal");
  // The line after an unterminated string lexes normally.
  CHECK(kinds("x = 'abc\ny\n") == "identifier '=' str:abc NL identifier NL EOF");
}

TEST_CASE("lexer: keywords and identifiers") {
  CHECK(clean("def with as for in if elif else and or not pass import from const return") ==
        "'def' 'with' 'as' 'for' 'in' 'if' 'elif' 'else' 'and' 'or' 'not' 'pass' 'import' "
        "'from' 'const' 'return' NL EOF");
  CHECK(clean("_x x1 T define returns") ==
        "identifier identifier identifier identifier identifier NL EOF");
}

TEST_CASE("lexer: operators") {
  CHECK(clean("+ - * / // % ** == != < <= > >= = += -= *= /= //= %= **=") ==
        "'+' '-' '*' '/' '//' '%' '**' '==' '!=' '<' '<=' '>' '>=' '=' '+=' '-=' '*=' '/=' "
        "'//=' '%=' '**=' NL EOF");
  CHECK(clean("( ) [ ] { } , : . @ ->") == "'(' ')' '[' ']' '{' '}' ',' ':' '.' '@' '->' NL EOF");
  CHECK(clean("a**-b//c") == "identifier '**' '-' identifier '//' identifier NL EOF");
}

TEST_CASE("lexer: unexpected characters") {
  CHECK(firstError("x = $") == "1:5: unexpected character '$'");
  CHECK(firstError("a ? b") == "1:3: unexpected character '?'");
  CHECK(firstError("a ! b") == "1:3: unexpected character '!'");
  CHECK(firstError(std::string("a \x01 b")) == "1:3: unexpected character '\\x01'");
  CHECK(firstError(std::string("a \0 b", 5)) == "1:3: unexpected character '\\x00'");
  CHECK(firstError("x = λ") == "1:5: unexpected character 'λ'");
  CHECK(firstError("x = \xff") == "1:5: unexpected character '\\xFF'");
  CHECK(firstError("x = \xc3") == "1:5: unexpected character '\\xC3'");
  // Non-ASCII in comments is fine; lexing goes on after a bad character.
  CHECK(lex("# λ ünïcode\nx\n").errors.empty());
  Lexed l = lex("a $ b ? c\n");
  CHECK(l.errors.size() == 2);
  CHECK(kinds("a $ b\n") == "identifier identifier NL EOF");
}

TEST_CASE("lexer: brackets") {
  CHECK(firstError("f(a]\n") == "1:4: closing ']' does not match opening '(' at line 1, column 2");
  // The mismatched closer stands in for the right one, so the parser sees balanced brackets.
  CHECK(kinds("f(a]\n") == "identifier '(' identifier ')' NL EOF");
  CHECK(firstError("a)\n") == "1:2: unmatched ')'");
  CHECK(kinds("a)\nb\n") == "identifier NL identifier NL EOF");
  CHECK(firstError("f(a,\n  b\n") == "1:2: '(' was never closed");
  // The outermost unclosed bracket is the one that swallowed the rest of the file.
  CHECK(firstError("x = [1, {2: (3\n") == "1:5: '[' was never closed");
  Lexed l = lex(std::string(1000, '(') + std::string(1000, ')'));
  CHECK(l.errors.empty());
  l = lex(std::string(1000, '['));
  CHECK(l.errors.size() == 1);
}

TEST_CASE("lexer: locations") {
  Lexed l = lex("const x = 1\n\ndef f(a,\n      b):\n    pass\n");
  REQUIRE(l.errors.empty());
  auto at = [&](size_t i) {
    return fmt::format("{}:{}-{}", l.tokens[i].loc.line, l.tokens[i].loc.col,
                       l.tokens[i].endLoc.col);
  };
  CHECK(at(0) == "1:1-6");   // const
  CHECK(at(1) == "1:7-8");   // x
  CHECK(at(3) == "1:11-12"); // 1
  CHECK(at(4) == "1:12-12"); // newline, at the end of the line
  CHECK(at(5) == "3:1-4");   // def
  CHECK(at(10) == "4:7-8");  // b
  CHECK(l.tokens[13].kind == TokenKind::Newline);
  CHECK(l.tokens[14].kind == TokenKind::Indent);
  CHECK(at(14) == "5:5-5");
  CHECK(at(15) == "5:5-9"); // pass
}

TEST_CASE("lexer: very long lines") {
  std::string line = "x = [";
  for (int i = 0; i < 30000; ++i)
    line += "1, ";
  line += "]\n";
  Lexed l = lex(line);
  CHECK(l.errors.empty());
  CHECK(l.tokens.size() > 60000);
  CHECK(lex("# " + std::string(200000, 'a') + "\nx\n").errors.empty());
  CHECK(lex("'" + std::string(200000, 'a') + "'\n").errors.empty());
}
