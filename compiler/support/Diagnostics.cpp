#include "support/Diagnostics.h"

#include <fmt/format.h>

namespace tilec {

uint32_t SourceManager::addBuffer(std::string name, std::string text) {
  Buffer b{std::move(name), std::move(text), {0}};
  for (size_t i = 0; i < b.text.size(); ++i)
    if (b.text[i] == '\n')
      b.lineStarts.push_back(i + 1);
  buffers_.push_back(std::move(b));
  return static_cast<uint32_t>(buffers_.size() - 1);
}

std::string_view SourceManager::lineText(SourceLoc loc) const {
  if (!loc.valid() || loc.file >= buffers_.size())
    return {};
  const Buffer &b = buffers_[loc.file];
  if (loc.line > b.lineStarts.size())
    return {};
  size_t start = b.lineStarts[loc.line - 1];
  size_t end = b.text.find('\n', start);
  if (end == std::string::npos)
    end = b.text.size();
  std::string_view line(b.text.data() + start, end - start);
  if (!line.empty() && line.back() == '\r')
    line.remove_suffix(1);
  return line;
}

void DiagnosticEngine::error(SourceLoc loc, std::string message) {
  report(Severity::Error, loc, std::move(message));
}
void DiagnosticEngine::warning(SourceLoc loc, std::string message) {
  report(Severity::Warning, loc, std::move(message));
}
void DiagnosticEngine::note(SourceLoc loc, std::string message) {
  report(Severity::Note, loc, std::move(message));
}

void DiagnosticEngine::report(Severity s, SourceLoc loc, std::string message) {
  if (s == Severity::Error) {
    if (numErrors_ >= kMaxErrors) {
      ++numErrors_;
      return;
    }
    ++numErrors_;
  } else if (numErrors_ > kMaxErrors) {
    return;
  }
  diags_.push_back({s, loc, std::move(message)});
}

static const char *severityName(Severity s) {
  switch (s) {
  case Severity::Error:
    return "error";
  case Severity::Warning:
    return "warning";
  case Severity::Note:
    return "note";
  }
  return "error";
}

std::string DiagnosticEngine::render(const Diagnostic &d) const {
  if (!d.loc.valid() || d.loc.file >= sm_.numBuffers())
    return fmt::format("tilec: {}: {}\n", severityName(d.severity), d.message);
  std::string out = fmt::format("{}:{}:{}: {}: {}\n", sm_.name(d.loc.file), d.loc.line, d.loc.col,
                                severityName(d.severity), d.message);
  std::string_view line = sm_.lineText(d.loc);
  // Keep the quote readable (and bounded) for very long lines.
  if (line.size() > 240)
    return out;
  out += fmt::format("{}\n", line);
  std::string caret;
  for (uint32_t i = 1; i < d.loc.col && i <= line.size(); ++i)
    caret += line[i - 1] == '\t' ? '\t' : ' ';
  out += caret + "^\n";
  return out;
}

std::string DiagnosticEngine::renderAll() const {
  std::string out;
  for (const Diagnostic &d : diags_)
    out += render(d);
  if (numErrors_ > kMaxErrors)
    out += fmt::format("tilec: note: {} more errors not shown\n", numErrors_ - kMaxErrors);
  return out;
}

} // namespace tilec
