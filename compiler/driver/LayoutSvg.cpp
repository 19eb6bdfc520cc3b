#include "driver/LayoutSvg.h"

#include <fmt/format.h>
#include <nlohmann/json.hpp>

#include <algorithm>
#include <cstdint>
#include <stdexcept>
#include <vector>

namespace tilec::driver {

namespace {

using nlohmann::json;

constexpr int kCellW = 30, kCellH = 22, kMargin = 20, kTitleH = 40;

std::string escape(std::string_view s) {
  std::string out;
  for (char c : s) {
    switch (c) {
    case '<':
      out += "&lt;";
      break;
    case '>':
      out += "&gt;";
      break;
    case '&':
      out += "&amp;";
      break;
    case '"':
      out += "&quot;";
      break;
    default:
      out += c;
    }
  }
  return out;
}

/// A colour per integer, well spread (golden-ratio hue steps), light enough for black text.
std::string colour(int64_t i) {
  double hue = static_cast<double>(
      (i * 0.618033988749895 - static_cast<int64_t>(i * 0.618033988749895)) * 360.0);
  int lightness = 70 + static_cast<int>(i % 3) * 8;
  return fmt::format("hsl({:.0f},70%,{}%)", hue, lightness);
}

/// Rows and columns of a buffer drawn as a matrix: the last dimension across, all others down.
std::pair<int64_t, int64_t> matrixShape(const json &shape) {
  int64_t rows = 1, cols = 1;
  for (size_t d = 0; d < shape.size(); ++d) {
    if (!shape[d].is_number_integer())
      return {0, 0}; // symbolic: not drawn
    (d + 1 == shape.size() ? cols : rows) *= shape[d].get<int64_t>();
  }
  return {rows, cols};
}

struct Cell {
  std::string fill, label;
};

/// One panel: a title, then the first kMaxCells x kMaxCells cells of a rows x cols matrix.
void drawPanel(std::string &svg, int &y, int &width, const std::string &title, int64_t rows,
               int64_t cols, const std::vector<Cell> &cells) {
  int64_t shownRows = std::min<int64_t>(rows, kMaxCells),
          shownCols = std::min<int64_t>(cols, kMaxCells);
  std::string note =
      rows > shownRows || cols > shownCols
          ? fmt::format(" (first {} x {} of {} x {})", shownRows, shownCols, rows, cols)
          : fmt::format(" ({} x {})", rows, cols);
  svg += fmt::format("<text x=\"{}\" y=\"{}\" font-size=\"16\" font-weight=\"bold\">{}{}</text>\n",
                     kMargin, y + 24, escape(title), escape(note));
  y += kTitleH;
  for (int64_t r = 0; r < shownRows; ++r)
    for (int64_t c = 0; c < shownCols; ++c) {
      const Cell &cell = cells[static_cast<size_t>(r * cols + c)];
      int x = kMargin + static_cast<int>(c) * kCellW, cy = y + static_cast<int>(r) * kCellH;
      svg +=
          fmt::format("<rect x=\"{}\" y=\"{}\" width=\"{}\" height=\"{}\" fill=\"{}\" "
                      "stroke=\"#555\" stroke-width=\"0.5\"/>"
                      "<text x=\"{}\" y=\"{}\" font-size=\"8\" text-anchor=\"middle\">{}</text>\n",
                      x, cy, kCellW, kCellH, cell.fill, x + kCellW / 2, cy + kCellH / 2 + 3,
                      escape(cell.label));
    }
  y += static_cast<int>(shownRows) * kCellH + kMargin;
  width = std::max(width, 2 * kMargin + static_cast<int>(shownCols) * kCellW);
  width = std::max(width, 2 * kMargin + static_cast<int>(title.size() + note.size()) * 9);
}

} // namespace

std::string layoutSvg(std::string_view fullReportJson) {
  json report = json::parse(fullReportJson);
  if (report.value("layout_detail", "") != "full")
    throw std::logic_error("layout pictures need the full layout report");
  std::string body;
  int y = kMargin, width = 400;
  body += fmt::format(
      "<text x=\"{}\" y=\"{}\" font-size=\"20\" font-weight=\"bold\">{} ({})</text>\n", kMargin,
      y + 20, escape(report["file"].get<std::string>()), escape(report["arch"].get<std::string>()));
  y += kTitleH;
  for (const json &k : report["kernels"]) {
    for (const json &b : k["buffers"]) {
      std::string scope = b["scope"], name = b["name"];
      const json &l = b["layout"];
      auto [rows, cols] = matrixShape(b["shape"]);
      if (rows == 0 || rows * cols > (int64_t{1} << 22))
        continue;
      std::vector<Cell> cells(static_cast<size_t>(rows * cols), Cell{"#eee", ""});
      std::string title;
      if (l.contains("elements")) {
        // Fragment: the thread (colour, T) and register slot (r) of each element's first owner;
        // "+n" when n more threads hold a copy.
        for (const json &e : l["elements"]) {
          int64_t flat = 0;
          for (size_t d = 0; d < e["index"].size(); ++d)
            flat = d == 0 ? e["index"][d].get<int64_t>()
                          : flat * b["shape"][d].get<int64_t>() + e["index"][d].get<int64_t>();
          const json &owners = e["owners"];
          if (owners.empty() || flat >= rows * cols)
            continue;
          int64_t t = owners[0][0], slot = owners[0][1];
          cells[static_cast<size_t>(flat)] = {
              colour(t), owners.size() > 1 ? fmt::format("T{}+{}", t, owners.size() - 1)
                                           : fmt::format("T{}:r{}", t, slot)};
        }
        title = fmt::format("{} / {}: fragment {}, {} threads (colour, T) and register slot (r)",
                            k["name"].get<std::string>(), name, l["kind"].get<std::string>(),
                            l["threads"].get<int64_t>());
      } else if (l.contains("element_offsets")) {
        // Shared: the 16-byte chunk of its 128-byte line each element lands in (colour, c);
        // an unswizzled row-major buffer shows stripes, a swizzle shows the XOR pattern.
        const json &offs = l["element_offsets"];
        int64_t base = l["offset"].get<int64_t>();
        for (size_t i = 0; i < offs.size() && static_cast<int64_t>(i) < rows * cols; ++i) {
          int64_t chunk = ((offs[i].get<int64_t>() - base) % 128) / 16;
          cells[i] = {colour(chunk), fmt::format("c{}", chunk)};
        }
        title = fmt::format("{} / {}: shared {}, 16-byte chunk within the 128-byte line (c)",
                            k["name"].get<std::string>(), name, l["kind"].get<std::string>());
      } else {
        continue;
      }
      drawPanel(body, y, width, title, rows, cols, cells);
    }
  }
  return fmt::format(
      "<?xml version=\"1.0\" encoding=\"UTF-8\"?>\n"
      "<svg xmlns=\"http://www.w3.org/2000/svg\" width=\"{0}\" height=\"{1}\" "
      "viewBox=\"0 0 {0} {1}\" font-family=\"monospace\">\n"
      "<rect x=\"0\" y=\"0\" width=\"{0}\" height=\"{1}\" fill=\"white\"/>\n{2}</svg>\n",
      width, y, body);
}

} // namespace tilec::driver
