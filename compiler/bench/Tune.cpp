#include "bench/Tune.h"

#include "bench/Text.h"

#include <fmt/format.h>

#include <algorithm>
#include <cmath>
#include <cstring>
#include <limits>

namespace tilec::bench {

namespace {

double halfToDouble(uint16_t h) {
  int sign = h >> 15, exp = (h >> 10) & 31, man = h & 1023;
  double v = exp == 0    ? std::ldexp(man, -24)
             : exp == 31 ? (man ? std::numeric_limits<double>::quiet_NaN()
                                : std::numeric_limits<double>::infinity())
                         : std::ldexp(man + 1024, exp - 25);
  return sign ? -v : v;
}

/// Every float16 bit pattern's value: a comparison of two 16-bit tensors reads each element
/// once from here instead of decoding it.
const std::vector<float> &halfTable() {
  static const std::vector<float> table = [] {
    std::vector<float> t(65536);
    for (uint32_t h = 0; h < 65536; ++h)
      t[h] = static_cast<float>(halfToDouble(static_cast<uint16_t>(h)));
    return t;
  }();
  return table;
}

double elementValue(DType t, const unsigned char *p) {
  switch (t) {
  case DType::Float16:
    return halfTable()[static_cast<uint32_t>(p[0] | (p[1] << 8))];
  case DType::BFloat16: {
    uint32_t bits = static_cast<uint32_t>(p[0] | (p[1] << 8)) << 16;
    float f;
    std::memcpy(&f, &bits, 4);
    return f;
  }
  case DType::Float32: {
    float f;
    std::memcpy(&f, p, 4);
    return f;
  }
  case DType::Float64: {
    double d;
    std::memcpy(&d, p, 8);
    return d;
  }
  default:
    return float8Value(*p, t);
  }
}

} // namespace

bool parseSpace(std::string_view text, std::vector<Knob> &out, std::string &error) {
  for (std::string_view item : split(text, ';')) {
    if (item.empty())
      continue;
    size_t eq = item.find('=');
    std::string name(trim(item.substr(0, eq)));
    if (eq == std::string_view::npos || name.empty()) {
      error = fmt::format("expected NAME=V1,V2,..., got '{}'", item);
      return false;
    }
    Knob k{name, {}};
    for (std::string_view v : split(item.substr(eq + 1), ','))
      if (!v.empty())
        k.values.emplace_back(v);
    if (k.values.empty()) {
      error = fmt::format("'{}' has no values", name);
      return false;
    }
    for (const Knob &o : out)
      if (o.name == name) {
        error = fmt::format("'{}' is given twice", name);
        return false;
      }
    out.push_back(std::move(k));
  }
  if (out.empty()) {
    error = "the space is empty";
    return false;
  }
  return true;
}

bool parseShapes(std::string_view text, std::vector<Assignments> &out, std::string &error) {
  for (std::string_view item : split(text, ';')) {
    if (item.empty())
      continue;
    Assignments a;
    if (!parseAssignments(item, a, error))
      return false;
    out.push_back(std::move(a));
  }
  return true;
}

std::vector<Variant> enumerate(const std::vector<Knob> &space) {
  std::vector<Variant> out = {{}};
  for (const Knob &k : space) {
    std::vector<Variant> next;
    for (const Variant &v : out)
      for (const std::string &value : k.values) {
        Variant w = v;
        w.emplace_back(k.name, value);
        next.push_back(std::move(w));
      }
    out = std::move(next);
  }
  return out;
}

std::string variantName(const Variant &v) {
  std::string out;
  for (const auto &[name, value] : v)
    out += fmt::format("{}{}={}", out.empty() ? "" : " ", name, value);
  return out.empty() ? "(as written)" : out;
}

std::string shapeName(const Assignments &shape) {
  std::string out;
  for (const auto &[name, value] : shape)
    out += fmt::format("{}{}={}", out.empty() ? "" : ",", name, value);
  return out;
}

double tensorDistance(DType dtype, const std::vector<unsigned char> &a,
                      const std::vector<unsigned char> &b) {
  if (a.size() != b.size())
    return std::numeric_limits<double>::infinity();
  if (a == b) // the usual case for inputs, and cheap to find
    return 0;
  size_t width = static_cast<size_t>(dtypeBytes(dtype));
  size_t n = width ? a.size() / width : 0;
  if (n == 0)
    return 0;
  if (!isFloat(dtype)) {
    size_t differing = 0;
    for (size_t i = 0; i < n; ++i)
      differing += std::memcmp(&a[i * width], &b[i * width], width) != 0;
    return static_cast<double>(differing) / static_cast<double>(n);
  }
  double diff = 0, norm = 0;
  for (size_t i = 0; i < n; ++i) {
    double x = elementValue(dtype, &a[i * width]), y = elementValue(dtype, &b[i * width]);
    if (std::isnan(x) || std::isnan(y)) {
      if (std::isnan(x) != std::isnan(y))
        return std::numeric_limits<double>::infinity();
      continue;
    }
    if (std::isinf(x) || std::isinf(y)) {
      if (x != y)
        return std::numeric_limits<double>::infinity();
      continue;
    }
    diff += (x - y) * (x - y);
    norm += x * x;
  }
  if (norm == 0)
    return diff == 0 ? 0 : std::numeric_limits<double>::infinity();
  return std::sqrt(diff / norm);
}

double defaultTolerance(DType dtype) {
  if (isFloat8(dtype))
    return 0.125;
  if (dtype == DType::Float16 || dtype == DType::BFloat16)
    return 0.02;
  if (isFloat(dtype))
    return 1e-3;
  return 0; // integers and bools: exactly equal
}

nlohmann::json toJson(const Record &r) {
  nlohmann::json list = nlohmann::json::array();
  for (const Measurement &m : r.measurements) {
    nlohmann::json j = {{"variant", m.variant},
                        {"shape", m.shape},
                        {"status", m.status},
                        {"reason", m.reason},
                        {"us",
                         {{"median", m.timing.median},
                          {"min", m.timing.min},
                          {"max", m.timing.max},
                          {"all", m.timing.us}}},
                        {"registers", m.facts.registers},
                        {"local_bytes", m.facts.localBytes},
                        {"blocks_per_sm", m.facts.blocksPerSM}};
    if (m.tflops)
      j["tflops"] = *m.tflops;
    if (m.gbps)
      j["gbps"] = *m.gbps;
    list.push_back(std::move(j));
  }
  return {{"source_hash", r.sourceHash},
          {"arch", r.arch},
          {"device", r.device},
          {"kernel", r.kernel},
          {"measurements", list}};
}

std::optional<Record> recordFromJson(const nlohmann::json &j, std::string &error) {
  try {
    Record r;
    r.sourceHash = j.at("source_hash").get<std::string>();
    r.arch = j.at("arch").get<std::string>();
    r.device = j.at("device").get<std::string>();
    r.kernel = j.at("kernel").get<std::string>();
    for (const nlohmann::json &m : j.at("measurements")) {
      Measurement x;
      x.variant = m.at("variant").get<std::string>();
      x.shape = m.at("shape").get<std::string>();
      x.status = m.at("status").get<std::string>();
      x.reason = m.at("reason").get<std::string>();
      x.timing = summarize(m.at("us").at("all").get<std::vector<double>>());
      x.facts.registers = m.at("registers").get<int>();
      x.facts.localBytes = m.at("local_bytes").get<int>();
      x.facts.blocksPerSM = m.at("blocks_per_sm").get<int>();
      if (m.contains("tflops"))
        x.tflops = m.at("tflops").get<double>();
      if (m.contains("gbps"))
        x.gbps = m.at("gbps").get<double>();
      r.measurements.push_back(std::move(x));
    }
    return r;
  } catch (const nlohmann::json::exception &e) {
    error = fmt::format("not a tune record ({})", e.what());
    return std::nullopt;
  }
}

const Measurement *findMeasurement(const Record &r, const std::string &variant,
                                   const std::string &shape) {
  for (const Measurement &m : r.measurements)
    if (m.variant == variant && m.shape == shape)
      return &m;
  return nullptr;
}

std::vector<std::optional<Measurement>> winners(const std::vector<Measurement> &all,
                                                const std::vector<std::string> &shapes) {
  std::vector<std::optional<Measurement>> out;
  for (const std::string &shape : shapes) {
    std::optional<Measurement> best;
    for (const Measurement &m : all)
      if (m.shape == shape && m.status == "ok" && (!best || m.timing.median < best->timing.median))
        best = m;
    out.push_back(best);
  }
  return out;
}

std::string contentHash(std::string_view text) {
  uint64_t h = 0xcbf29ce484222325ull;
  for (unsigned char c : text) {
    h ^= c;
    h *= 0x100000001b3ull;
  }
  return fmt::format("{:016x}", h);
}

} // namespace tilec::bench
