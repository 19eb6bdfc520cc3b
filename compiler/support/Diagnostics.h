// Source buffers, locations and the diagnostic engine shared by every stage.
#pragma once

#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

namespace tilec {

/// A position in a source buffer. `file` indexes SourceManager's buffers; line and column are
/// 1-based (column counts bytes). A default-constructed location means "no location".
struct SourceLoc {
  uint32_t file = 0;
  uint32_t line = 0;
  uint32_t col = 0;
  bool valid() const { return line != 0; }
};

struct SourceRange {
  SourceLoc begin;
  SourceLoc end;
};

/// Owns the text of every file the compiler reads (main file and imported modules) so that
/// diagnostics can quote the offending line.
class SourceManager {
public:
  uint32_t addBuffer(std::string name, std::string text);
  const std::string &name(uint32_t file) const { return buffers_.at(file).name; }
  const std::string &text(uint32_t file) const { return buffers_.at(file).text; }
  std::string_view lineText(SourceLoc loc) const;
  size_t numBuffers() const { return buffers_.size(); }

private:
  struct Buffer {
    std::string name;
    std::string text;
    std::vector<size_t> lineStarts;
  };
  std::vector<Buffer> buffers_;
};

enum class Severity { Error, Warning, Note };

struct Diagnostic {
  Severity severity;
  SourceLoc loc;
  std::string message;
};

/// Collects diagnostics and renders them as `file:line:col: error: message`, the source line
/// and a caret. Stages report through it instead of throwing so that one run reports many errors.
class DiagnosticEngine {
public:
  explicit DiagnosticEngine(const SourceManager &sm) : sm_(sm) {}

  void error(SourceLoc loc, std::string message);
  void warning(SourceLoc loc, std::string message);
  void note(SourceLoc loc, std::string message);

  bool hasErrors() const { return numErrors_ != 0; }
  unsigned numErrors() const { return numErrors_; }
  const std::vector<Diagnostic> &diagnostics() const { return diags_; }

  /// Renders one diagnostic, with the quoted line and caret when the location is known.
  std::string render(const Diagnostic &d) const;
  /// Renders every diagnostic collected so far, in the order reported.
  std::string renderAll() const;

  /// Errors after this many are dropped so that a pathological input cannot flood the output.
  static constexpr unsigned kMaxErrors = 50;

private:
  void report(Severity s, SourceLoc loc, std::string message);
  const SourceManager &sm_;
  std::vector<Diagnostic> diags_;
  unsigned numErrors_ = 0;
};

} // namespace tilec
