#include "driver/HeaderGen.h"
#include "driver/HeaderGenImpl.h"

#include "target/TargetInfo.h"

#include <fmt/format.h>

#include <algorithm>
#include <array>
#include <cctype>
#include <climits>
#include <iterator>
#include <set>
#include <stdexcept>

namespace tilec::driver {

namespace detail {
std::string_view runtimeHeaderBytes();     // generated from runtime.h at build time
std::string_view runtimeHipHeaderBytes();  // generated from runtime_hip.h at build time
std::string_view runtimeCoreHeaderBytes(); // generated from runtime_core.h at build time
} // namespace detail

std::string_view runtimeHeaderText() { return detail::runtimeHeaderBytes(); }

namespace detail {

extern const LaunchApi kCuda = {"::CUresult",      "::CUDA_SUCCESS", "::CUstream",
                                "::CUdeviceptr",   "::tilec::rt",    "<cuda.h>",
                                "TILEC_RUNTIME_H", "CUDA",           detail::runtimeHeaderBytes};
extern const LaunchApi kHip = {"::hipError_t",
                               "::hipSuccess",
                               "::hipStream_t",
                               "::hipDeviceptr_t",
                               "::tilec::hiprt",
                               "<hip/hip_runtime_api.h>",
                               "TILEC_RUNTIME_HIP_H",
                               "HIP",
                               detail::runtimeHipHeaderBytes};

/// HIP for AMD targets, the CUDA Driver API for NVIDIA's.
const LaunchApi &launchApiOf(std::string_view arch) {
  std::optional<target::TargetInfo> t = target::targetInfo(arch);
  return t && t->isAmd() ? kHip : kCuda;
}

using thir::Expr;

[[noreturn]] void bug(std::string what) {
  throw std::logic_error(fmt::format("header generation: {}", what));
}

constexpr std::string_view kCxxKeywords[] = {
    "alignas",       "alignof",     "and",
    "and_eq",        "asm",         "auto",
    "bitand",        "bitor",       "bool",
    "break",         "case",        "catch",
    "char",          "char8_t",     "char16_t",
    "char32_t",      "class",       "compl",
    "concept",       "const",       "consteval",
    "constexpr",     "constinit",   "const_cast",
    "continue",      "co_await",    "co_return",
    "co_yield",      "decltype",    "default",
    "delete",        "do",          "double",
    "dynamic_cast",  "else",        "enum",
    "explicit",      "export",      "extern",
    "false",         "float",       "for",
    "friend",        "goto",        "if",
    "inline",        "int",         "long",
    "mutable",       "namespace",   "new",
    "noexcept",      "not",         "not_eq",
    "nullptr",       "operator",    "or",
    "or_eq",         "private",     "protected",
    "public",        "register",    "reinterpret_cast",
    "requires",      "return",      "short",
    "signed",        "sizeof",      "static",
    "static_assert", "static_cast", "struct",
    "switch",        "template",    "this",
    "thread_local",  "throw",       "true",
    "try",           "typedef",     "typeid",
    "typename",      "union",       "unsigned",
    "using",         "virtual",     "void",
    "volatile",      "wchar_t",     "while",
    "xor",           "xor_eq",      "final",
    "override",      "import",      "module",
    "main",
};

bool isKeyword(std::string_view s) {
  return std::find(std::begin(kCxxKeywords), std::end(kCxxKeywords), s) != std::end(kCxxKeywords);
}

bool isIdentifier(std::string_view s) {
  if (s.empty() || std::isdigit(static_cast<unsigned char>(s[0])))
    return false;
  return std::all_of(s.begin(), s.end(), [](char c) {
    return std::isalnum(static_cast<unsigned char>(c)) || c == '_';
  });
}

/// Names the header may use for the launch parameters. `stream` and the `tilec_` prefix belong
/// to the header itself, and C++ keywords cannot be names; those get renamed, then duplicates
/// (which the renaming could create) get more underscores.
std::vector<std::string> launchParamNames(const thir::Kernel &k) {
  std::set<std::string> used = {"stream"};
  std::vector<std::string> names;
  for (const thir::Param &p : k.params) {
    if (!isIdentifier(p.name))
      bug(fmt::format("parameter name '{}' is not an identifier", p.name));
    std::string n = p.name;
    if (n.rfind("tilec_", 0) == 0)
      n = "arg_" + n;
    if (isKeyword(n))
      n += '_';
    while (!used.insert(n).second)
      n += '_';
    names.push_back(std::move(n));
  }
  return names;
}

/// The names a header defines next to the kernels' launch functions.
bool isHeaderName(std::string_view s) {
  for (std::string_view n : {"load", "unload", "loaded_image", "last_error", "constants"})
    if (s == n)
      return true;
  return false;
}

std::string functionName(const thir::Kernel &k) {
  if (!isIdentifier(k.name))
    bug(fmt::format("kernel name '{}' is not an identifier", k.name));
  if (k.name.rfind("tilec_", 0) == 0)
    return "kernel_" + k.name;
  return isKeyword(k.name) || isHeaderName(k.name) ? k.name + "_" : k.name;
}

} // namespace detail

using namespace detail;

namespace {

/// Translates a grid expression into host C++ over `int64_t`, with the language's integer
/// semantics (floored // and %) from the runtime `rt` (::tilec::rt or ::tilec::hiprt).
class HostExpr {
public:
  HostExpr(const thir::Kernel &k, const std::vector<std::string> &names,
           std::string_view rt = "::tilec::rt")
      : k_(k), names_(names), rt_(rt) {}

  std::string operator()(const Expr &e) {
    if (!e)
      bug("null grid expression");
    if (isFloat(e->type.elem) || e->type.lanes != 1)
      bug(fmt::format("grid expression of type {}", thir::typeString(e->type)));
    return std::visit([&](const auto &op) { return emit(op, *e); }, e->op);
  }

private:
  std::string emit(const thir::ConstInt &c, const thir::Node &n) {
    if (n.type.elem == DType::Bool)
      return c.value ? "true" : "false";
    if (c.value == INT64_MIN)
      return "(-9223372036854775807 - 1)";
    return fmt::format("::std::int64_t{{{}}}", c.value);
  }
  std::string emit(const thir::ParamRef &r, const thir::Node &) {
    if (r.index < 0 || static_cast<size_t>(r.index) >= k_.params.size())
      bug("grid refers to a parameter out of range");
    const thir::Param &p = k_.params[r.index];
    if (p.kind == thir::ParamKind::Tensor || isFloat(p.dtype))
      bug(fmt::format("grid refers to non-integer parameter '{}'", p.name));
    if (p.kind == thir::ParamKind::Dim || p.dtype == DType::Int64)
      return names_[r.index];
    return fmt::format("static_cast<::std::int64_t>({})", names_[r.index]);
  }
  std::string emit(const thir::Binary &b, const thir::Node &) {
    std::string x = (*this)(b.a), y = (*this)(b.b);
    using thir::BinOp;
    switch (b.op) {
    case BinOp::Add:
      return fmt::format("({} + {})", x, y);
    case BinOp::Sub:
      return fmt::format("({} - {})", x, y);
    case BinOp::Mul:
      return fmt::format("({} * {})", x, y);
    case BinOp::Div:
      return fmt::format("{}::truncDiv({}, {})", rt_, x, y);
    case BinOp::FloorDiv:
      return fmt::format("{}::floorDiv({}, {})", rt_, x, y);
    case BinOp::Mod:
      return fmt::format("{}::floorMod({}, {})", rt_, x, y);
    case BinOp::Min:
      return fmt::format("{}::min({}, {})", rt_, x, y);
    case BinOp::Max:
      return fmt::format("{}::max({}, {})", rt_, x, y);
    case BinOp::Eq:
      return fmt::format("({} == {})", x, y);
    case BinOp::Ne:
      return fmt::format("({} != {})", x, y);
    case BinOp::Lt:
      return fmt::format("({} < {})", x, y);
    case BinOp::Le:
      return fmt::format("({} <= {})", x, y);
    case BinOp::Gt:
      return fmt::format("({} > {})", x, y);
    case BinOp::Ge:
      return fmt::format("({} >= {})", x, y);
    case BinOp::And:
      return fmt::format("({} && {})", x, y);
    case BinOp::Or:
      return fmt::format("({} || {})", x, y);
    case BinOp::Pow:
    case BinOp::BitAnd:
    case BinOp::BitXor:
    case BinOp::Shl:
    case BinOp::Shr:
    case BinOp::BitOr:
      break;
    }
    bug("pow in a grid expression");
  }
  std::string emit(const thir::Select &s, const thir::Node &) {
    return fmt::format("({} ? {} : {})", (*this)(s.cond), (*this)(s.a), (*this)(s.b));
  }
  std::string emit(const thir::Cast &c, const thir::Node &n) {
    std::string x = (*this)(c.a);
    if (n.type.elem == DType::Bool)
      return fmt::format("({} != 0)", x);
    if (n.type.elem == DType::Int64)
      return fmt::format("static_cast<::std::int64_t>({})", x);
    // Narrowing wraps as on the device, then widens back for the arithmetic around it.
    return fmt::format("static_cast<::std::int64_t>(static_cast<::{}>({}))",
                       dtypeCxxName(n.type.elem), x);
  }
  template <class Op> std::string emit(const Op &, const thir::Node &) {
    bug("grid expression uses a device-only operation");
  }

  const thir::Kernel &k_;
  const std::vector<std::string> &names_;
  std::string_view rt_;
};

} // namespace

namespace detail {

/// Whether the caller passes the parameter; the launch function derives the others (tensor
/// maps and the TMA flag) from what the caller passes.
bool isLaunchArgument(const thir::Param &p) {
  return p.kind != thir::ParamKind::TensorMap && p.kind != thir::ParamKind::TmaEnabled;
}

/// Whether the grid function takes the parameter: the dimensions and scalars the caller passes.
bool isGridArgument(const thir::Param &p) {
  return isLaunchArgument(p) && p.kind != thir::ParamKind::Tensor;
}

} // namespace detail

namespace {

std::string_view tensorMapDataType(DType t) {
  switch (t) {
  case DType::Float16:
    return "CU_TENSOR_MAP_DATA_TYPE_FLOAT16";
  case DType::BFloat16:
    return "CU_TENSOR_MAP_DATA_TYPE_BFLOAT16";
  case DType::Float32:
    return "CU_TENSOR_MAP_DATA_TYPE_FLOAT32";
  case DType::Float64:
    return "CU_TENSOR_MAP_DATA_TYPE_FLOAT64";
  case DType::Int32:
    return "CU_TENSOR_MAP_DATA_TYPE_INT32";
  case DType::UInt32:
    return "CU_TENSOR_MAP_DATA_TYPE_UINT32";
  case DType::Int64:
    return "CU_TENSOR_MAP_DATA_TYPE_INT64";
  case DType::Int16:
    return "CU_TENSOR_MAP_DATA_TYPE_UINT16";
  case DType::Int8:
  case DType::UInt8:
  case DType::Float8E4M3:
  case DType::Float8E5M2:
    return "CU_TENSOR_MAP_DATA_TYPE_UINT8";
  case DType::Bool:
    break;
  }
  bug(fmt::format("tensor map of {}", dtypeName(t)));
}

std::string_view tensorMapSwizzle(int bytes) {
  switch (bytes) {
  case 0:
    return "CU_TENSOR_MAP_SWIZZLE_NONE";
  case 32:
    return "CU_TENSOR_MAP_SWIZZLE_32B";
  case 64:
    return "CU_TENSOR_MAP_SWIZZLE_64B";
  case 128:
    return "CU_TENSOR_MAP_SWIZZLE_128B";
  }
  bug(fmt::format("tensor map swizzle of {} bytes", bytes));
}

/// Statements of the launch function that encode tensor map parameter `i` (cached per launch
/// site) and clear `tilec_tma` when TMA cannot address the tensor.
std::string tensorMapSetup(const thir::Kernel &k, size_t index, size_t i,
                           const std::vector<std::string> &names, HostExpr &host) {
  const thir::Param &p = k.params[i];
  const thir::TensorMapInfo &m = p.map;
  if (m.tensor < 0 || static_cast<size_t>(m.tensor) >= k.params.size())
    bug(fmt::format("tensor map '{}' of a parameter out of range", p.name));
  std::string dims, strides, box;
  for (const Expr &d : m.dims)
    dims += fmt::format("{}{}", dims.empty() ? "" : ", ", host(d));
  for (const Expr &st : m.strides)
    strides += fmt::format("{}{}", strides.empty() ? "" : ", ", host(st));
  for (int b : m.box)
    box += fmt::format("{}{}u", box.empty() ? "" : ", ", b);
  return fmt::format(
      "  ::CUtensorMap {0};\n  {{\n"
      "    const ::std::int64_t tilec_dims[] = {{{1}}};\n"
      "    const ::std::int64_t tilec_strides[] = {{{2}, 0}};\n"
      "    const unsigned tilec_box[] = {{{3}}};\n"
      "    if (::CUresult tilec_r = ::tilec::rt::tensorMap(\n"
      "            tilec_detail::mapCache<{4}, {5}>(), &{0}, {6}, {7}u, {8}, tilec_dims,\n"
      "            tilec_strides, tilec_box, {9}, &tilec_tma_ok);\n"
      "        tilec_r != ::CUDA_SUCCESS)\n      return tilec_r;\n  }}\n",
      names[i], dims, strides, box, index, i, tensorMapDataType(p.dtype), m.box.size(),
      names[m.tensor], tensorMapSwizzle(m.swizzleBytes));
}

} // namespace

std::string detail::cxxParamType(const thir::Param &p, const LaunchApi &api) {
  switch (p.kind) {
  case thir::ParamKind::Tensor:
    return std::string(api.devicePtr);
  case thir::ParamKind::Dim:
    return "::std::int64_t";
  case thir::ParamKind::TensorMap:
    return "::CUtensorMap";
  case thir::ParamKind::TmaEnabled:
    return "::std::int32_t";
  case thir::ParamKind::Scalar:
    break;
  }
  std::string_view t = dtypeCxxName(p.dtype);
  if (t == "float" || t == "double" || t == "bool")
    return std::string(t);
  return fmt::format("::std::{}", t);
}

namespace {

std::string paramComment(const thir::Param &p) {
  switch (p.kind) {
  case thir::ParamKind::Tensor:
    return fmt::format("{} tensor, {}-byte aligned", dtypeName(p.dtype), p.alignBytes);
  case thir::ParamKind::Dim:
    return "symbolic dimension, > 0";
  case thir::ParamKind::Scalar:
    if (p.dtype == DType::Float16 || p.dtype == DType::BFloat16)
      return fmt::format("{} scalar (its bits)", dtypeName(p.dtype));
    return fmt::format("{} scalar", dtypeName(p.dtype));
  case thir::ParamKind::TensorMap:
  case thir::ParamKind::TmaEnabled:
    break;
  }
  return "";
}

void appendImage(std::string &out, std::string_view binary, BinaryKind kind) {
  static constexpr char kHex[] = "0123456789abcdef";
  size_t n = binary.size() + (kind == BinaryKind::Ptx ? 1 : 0);
  out.reserve(out.size() + n * 6 + n / 16 * 4 + 256);
  for (size_t i = 0; i < n; ++i) {
    auto byte = i < binary.size() ? static_cast<unsigned char>(binary[i]) : 0u;
    out += i % 16 == 0 ? "\n    " : " ";
    out += "0x";
    out += kHex[byte >> 4];
    out += kHex[byte & 15];
    out += ',';
  }
  out += '\n';
}

/// `text` as a C++ string literal. Bytes outside printable ASCII become three-digit octal
/// escapes, which, unlike \x, never swallow a following character.
std::string cxxStringLiteral(std::string_view text) {
  std::string out = "\"";
  for (char c : text) {
    auto u = static_cast<unsigned char>(c);
    if (c == '"' || c == '\\')
      out += {'\\', c};
    else if (u < 0x20 || u >= 0x7f)
      out += fmt::format("\\{:03o}", u);
    else
      out += c;
  }
  return out + "\"";
}

/// What a launch function does with one parameter: the checks (and any host-side setup) before
/// the launch, and the object whose address goes into the kernel's argument array. Every
/// parameter kind is handled here and nowhere else in the launch function.
struct ParamCode {
  std::string setup;
  std::string argument;
};

ParamCode paramCode(const thir::Param &p, const std::string &name, const std::string &kernel,
                    int alignBytes, const LaunchApi &api) {
  auto check = [&](std::string call) {
    return fmt::format("  if ({} tilec_r = {}; tilec_r != {})\n"
                       "    return tilec_r;\n",
                       api.result, call, api.success);
  };
  switch (p.kind) {
  case thir::ParamKind::Tensor:
    return {check(fmt::format("{}::checkTensor({}, {}, \"{}\", \"{}\")", api.rt, name,
                              std::max(alignBytes, 1), kernel, name)),
            name};
  case thir::ParamKind::Dim:
    return {check(fmt::format("{}::checkDim({}, \"{}\", \"{}\")", api.rt, name, kernel, name)),
            name};
  case thir::ParamKind::Scalar:
    return {"", name};
  case thir::ParamKind::TensorMap:
  case thir::ParamKind::TmaEnabled:
    // Derived from the launch arguments after their checks (tensorMapSetup).
    return {"", name};
  }
  bug("unknown parameter kind");
}

void appendKernel(std::string &out, const KernelEntry &e, size_t index, const LaunchApi &api) {
  const thir::Kernel &k = *e.kernel;
  std::vector<std::string> names = launchParamNames(k);
  HostExpr host(k, names, api.rt);
  std::array<std::string, 3> grid;
  for (size_t i = 0; i < 3; ++i)
    grid[i] = k.grid[i] ? host(k.grid[i]) : "::std::int64_t{1}";
  std::string fn = functionName(k);

  // The facts of the launch as constants, and the grid as a function of the dimensions and
  // scalars, for frameworks that plan launches (or check occupancy) themselves.
  out += fmt::format("/// Compile-time facts of `{}` (with several images: the most any of them "
                     "uses).\nstruct {}_info {{\n",
                     k.name, fn);
  out += fmt::format("  static constexpr const char *name = \"{}\";\n", k.name);
  out += fmt::format("  static constexpr unsigned threads_per_block = {};\n", e.threads);
  out +=
      fmt::format("  static constexpr unsigned dynamic_shared_bytes = {};\n", e.dynamicSharedBytes);
  out += fmt::format(
      "  /// Blocks per SM a persistent kernel is launched on: then the launch runs at most\n"
      "  /// this many times the device's SMs, each block walking grid()'s blocks (0: one\n"
      "  /// block per grid block).\n"
      "  static constexpr unsigned persistent_blocks_per_sm = {};\n",
      e.persistentBlocksPerSM);
  out += fmt::format("  /// The launch grid for these arguments (its extents as computed, before "
                     "the checks).\n  static {}::Grid grid(",
                     api.rt);
  bool first = true;
  for (size_t i = 0; i < k.params.size(); ++i)
    if (isGridArgument(k.params[i])) {
      out += fmt::format("{}[[maybe_unused]] {} {}", first ? "" : ", ",
                         cxxParamType(k.params[i], api), names[i]);
      first = false;
    }
  out += fmt::format(") {{\n    return {{{}, {}, {}}};\n  }}\n}};\n\n", grid[0], grid[1], grid[2]);

  out += fmt::format("/// Launches `{}`: {} threads a block, dynamic shared memory {} bytes.\n",
                     k.name, e.threads, e.dynamicSharedBytes);
  for (size_t i = 0; i < 3; ++i)
    if (k.grid[i])
      out += fmt::format("/// grid.{} = {}\n", "xyz"[i], thir::printExpr(k.grid[i], k));
  if (e.persistentBlocksPerSM)
    out += fmt::format(
        "/// Persistent: launched on at most {} blocks per SM, each walking the grid.\n",
        e.persistentBlocksPerSM);
  std::vector<ParamCode> code;
  for (size_t i = 0; i < k.params.size(); ++i) {
    thir::Param p = k.params[i];
    p.alignBytes = e.alignBytes[i];
    if (isLaunchArgument(p))
      out += fmt::format("/// {}: {}\n", names[i], paramComment(p));
    code.push_back(paramCode(p, names[i], k.name, p.alignBytes, api));
  }
  out += fmt::format("inline {} {}({} stream", api.result, fn, api.stream);
  for (size_t i = 0; i < k.params.size(); ++i)
    if (isLaunchArgument(k.params[i]))
      out += fmt::format(", {} {}", cxxParamType(k.params[i], api), names[i]);
  out += ") {\n";
  for (const ParamCode &c : code)
    out += c.setup;
  // Tensor dimensions computed from the checked ones. Their names are free text (a .thir input
  // may hold any string), so they are escaped.
  for (const thir::DimCheck &c : k.dimChecks)
    out += fmt::format("  if ({} tilec_r = {}::checkDim({}, \"{}\", {}); "
                       "tilec_r != {})\n    return tilec_r;\n",
                       api.result, api.rt, host(c.value), k.name, cxxStringLiteral(c.what),
                       api.success);
  out += fmt::format("  const {}::Grid tilec_grid = {}_info::grid(", api.rt, fn);
  first = true;
  for (size_t i = 0; i < k.params.size(); ++i)
    if (isGridArgument(k.params[i])) {
      out += fmt::format("{}{}", first ? "" : ", ", names[i]);
      first = false;
    }
  out += ");\n";
  // Tensor maps after the checks of the tensors and dimensions they are encoded from.
  bool maps = std::any_of(k.params.begin(), k.params.end(), [](const thir::Param &p) {
    return p.kind == thir::ParamKind::TensorMap;
  });
  if (maps)
    out += "  bool tilec_tma_ok = true;\n";
  for (size_t i = 0; i < k.params.size(); ++i)
    if (k.params[i].kind == thir::ParamKind::TensorMap)
      out += tensorMapSetup(k, index, i, names, host);
  for (size_t i = 0; i < k.params.size(); ++i)
    if (k.params[i].kind == thir::ParamKind::TmaEnabled)
      out += fmt::format("  ::std::int32_t {} = tilec_tma_ok ? 1 : 0;\n", names[i]);
  if (code.empty()) {
    out += "  void **tilec_args = nullptr;\n";
  } else {
    out += "  void *tilec_args[] = {";
    for (size_t i = 0; i < code.size(); ++i)
      out += fmt::format("{}&{}", i ? ", " : "", code[i].argument);
    out += "};\n";
  }
  out += fmt::format("  return {}::launch(tilec_detail::state(), tilec_detail::kImages, "
                     "{}, tilec_grid,\n                              stream, tilec_args);\n}}\n\n",
                     api.rt, index);
}

/// The compute capability an image needs, from the target description of its arch.
struct ArchNumbers {
  int major, minor;
  bool archSpecific;
};
ArchNumbers archNumbers(std::string_view arch) {
  std::optional<target::TargetInfo> t = target::targetInfo(arch);
  if (!t)
    bug(fmt::format("unexpected arch name '{}'", arch));
  return {t->smVersion / 10, t->smVersion % 10, t->archSpecific};
}

/// FNV-1a, 64 bits: stable across platforms and compiler versions, unlike std::hash.
uint64_t fnv1a(std::string_view text) {
  uint64_t h = 0xcbf29ce484222325ull;
  for (char c : text) {
    h ^= static_cast<unsigned char>(c);
    h *= 0x100000001b3ull;
  }
  return h;
}

} // namespace

std::string defaultNamespace(std::string_view stem) {
  std::string id;
  for (char c : stem)
    id += std::isalnum(static_cast<unsigned char>(c)) ? c : '_';
  if (id.empty() || std::isdigit(static_cast<unsigned char>(id[0])))
    id.insert(id.begin(), '_');
  if (isKeyword(id))
    id += '_';
  return "tile::" + id;
}

bool isValidNamespace(std::string_view ns) {
  if (ns.empty())
    return false;
  while (true) {
    size_t sep = ns.find("::");
    std::string_view part = ns.substr(0, sep);
    if (!isIdentifier(part) || isKeyword(part) || part == "tilec")
      return false;
    if (sep == std::string_view::npos)
      return true;
    ns = ns.substr(sep + 2);
  }
}

/// The kernels of every image: the same kernels with the same launch parameters, as they come
/// from one source. What may differ per arch (block size, shared memory, alignment) is merged
/// conservatively: the most any image needs. An image may also have derived parameters after
/// the launch ones (tensor maps, the TMA flag) that another lacks: the entry takes the longest
/// list, and a kernel with fewer parameters reads only the front of the argument array.
std::vector<KernelEntry> mergeKernels(const std::vector<HeaderImage> &images) {
  if (images.empty())
    bug("a header needs at least one image");
  const thir::Module &m = *images.front().module;
  std::vector<KernelEntry> entries;
  for (const thir::Kernel &k : m.kernels)
    entries.push_back({&k, std::vector<int>(k.params.size(), 1)});
  for (const HeaderImage &img : images) {
    if (img.module->kernels.size() != m.kernels.size())
      bug("images with different kernels");
    for (size_t i = 0; i < entries.size(); ++i) {
      const thir::Kernel &k = img.module->kernels[i];
      const thir::Kernel &have = *entries[i].kernel;
      if (k.name != have.name)
        bug(fmt::format("images disagree on kernel '{}'", k.name));
      if (k.dynamicSharedBytes < 0 || k.threads <= 0)
        bug("negative dynamic shared memory size or block size");
      const thir::Kernel &shorter = k.params.size() < have.params.size() ? k : have;
      const thir::Kernel &longer = &shorter == &k ? have : k;
      for (size_t j = 0; j < longer.params.size(); ++j) {
        bool derived = !isLaunchArgument(longer.params[j]);
        if (j < shorter.params.size() ? shorter.params[j].kind != longer.params[j].kind : !derived)
          bug(fmt::format("images disagree on the parameters of '{}'", k.name));
      }
      if (&longer == &k) {
        entries[i].kernel = &k;
        entries[i].alignBytes.resize(k.params.size(), 1);
      }
      for (size_t j = 0; j < k.params.size(); ++j)
        entries[i].alignBytes[j] = std::max(entries[i].alignBytes[j], k.params[j].alignBytes);
      entries[i].threads = std::max(entries[i].threads, static_cast<unsigned>(k.threads));
      entries[i].dynamicSharedBytes =
          std::max(entries[i].dynamicSharedBytes, static_cast<unsigned>(k.dynamicSharedBytes));
      entries[i].persistentBlocksPerSM = std::max(entries[i].persistentBlocksPerSM,
                                                  static_cast<unsigned>(k.persistentBlocksPerSM));
    }
  }

  return entries;
}

LaunchSignature launchSignature(const thir::Kernel &k) {
  LaunchSignature sig;
  sig.function = functionName(k);
  std::vector<std::string> names = launchParamNames(k);
  for (size_t i = 0; i < k.params.size(); ++i)
    if (isLaunchArgument(k.params[i]))
      sig.params.push_back({cxxParamType(k.params[i]), names[i], &k.params[i]});
  return sig;
}

std::string generateHeader(const std::vector<HeaderImage> &images, const HeaderOptions &opts) {
  if (!isValidNamespace(opts.ns))
    bug(fmt::format("invalid namespace '{}'", opts.ns));
  if (images.empty())
    bug("a header needs at least one image");
  const LaunchApi &api = launchApiOf(images.front().arch);
  for (const HeaderImage &img : images)
    if (&launchApiOf(img.arch) != &api)
      bug("a header's images are for NVIDIA and AMD targets both");
  std::string_view runtime = api.runtime();
  if (runtime.find(fmt::format("#ifndef {}", api.guard)) == std::string_view::npos)
    bug(fmt::format("the embedded runtime lost its {} guard", api.guard));
  const bool hip = &api == &kHip;

  const thir::Module &m = *images.front().module;
  std::vector<KernelEntry> entries = mergeKernels(images);

  std::string out;
  out += fmt::format("// Generated by tilec from {}. Do not edit.\n",
                     opts.sourceName.empty() ? m.name : opts.sourceName);
  if (hip)
    out += "// Needs only HIP's module API: select a device (hipSetDevice), then call the launch\n"
           "// functions (they load the code object on each device on first use there; see\n"
           "// runtime below). Argument errors (null or misaligned tensor, dimension <= 0, grid\n"
           "// beyond the limits) return hipErrorInvalidValue before any HIP call; last_error()\n"
           "// says which argument was rejected. Not yet run on AMD hardware (docs/amd.md).\n";
  else
    out +=
        "// Needs only the CUDA Driver API: call cuInit() and make a context current, then call\n"
        "// the launch functions (they load the module into each context on first use there;\n"
        "// see runtime below). Argument errors (null or misaligned tensor, dimension <= 0, grid\n"
        "// beyond the limits) return CUDA_ERROR_INVALID_VALUE before any driver call;\n"
        "// last_error() says which argument was rejected.\n";
  out += "#pragma once\n\n";
  if (hip) // as in runtime_hip.h: the AMD platform unless the build chose one
    out += "#if !defined(__HIP_PLATFORM_AMD__) && !defined(__HIP_PLATFORM_NVIDIA__)\n"
           "#define __HIP_PLATFORM_AMD__\n#endif\n";
  out += fmt::format("#include {}\n\n#include <array>\n#include <cstddef>\n#include <cstdint>\n\n",
                     api.include);
  // The core first: the runtime includes it only where it was not pasted.
  std::string_view core = detail::runtimeCoreHeaderBytes();
  if (core.find("#ifndef TILEC_RUNTIME_CORE_H") == std::string_view::npos)
    bug("the embedded runtime_core.h lost its TILEC_RUNTIME_CORE_H guard");
  for (std::string_view text : {core, runtime}) {
    out += text;
    if (!text.empty() && text.back() != '\n')
      out += '\n';
  }

  size_t n = m.kernels.size();
  std::string body = "namespace tilec_detail {\n\n";
  for (size_t i = 0; i < images.size(); ++i) {
    const HeaderImage &img = images[i];
    body += fmt::format("// {} {}, {} bytes.\nalignas(64) inline constexpr unsigned char "
                        "kImage{}[] = {{",
                        img.arch,
                        hip                             ? "code object"
                        : img.kind == BinaryKind::Cubin ? "cubin"
                                                        : "PTX, NUL-terminated",
                        img.binary.size() + (img.kind == BinaryKind::Ptx ? 1 : 0), i);
    appendImage(body, img.binary, img.kind);
    body += "};\n\n";
  }
  body += fmt::format("inline constexpr ::std::array<{}::Image<{}>, {}> kImages = {{{{\n", api.rt,
                      n, images.size());
  for (size_t i = 0; i < images.size(); ++i) {
    const HeaderImage &img = images[i];
    if (hip) {
      body += fmt::format("    {{\"{0} code object\", \"{0}\", kImage{1}, {{{{\n", img.arch, i);
      for (const thir::Kernel &k : img.module->kernels)
        body +=
            fmt::format("        {{\"{}\", {}u, {}u}},\n", k.name, k.threads, k.dynamicSharedBytes);
    } else {
      ArchNumbers a = archNumbers(img.arch);
      body += fmt::format(
          "    {{\"{} {}\", {}, {}, {}, ::tilec::rt::ImageKind::{}, kImage{}, {{{{\n", img.arch,
          img.kind == BinaryKind::Cubin ? "cubin" : "PTX", a.major, a.minor,
          a.archSpecific ? "true" : "false", img.kind == BinaryKind::Cubin ? "Cubin" : "Ptx", i);
      // Code for sm_90+ waits for the grids ahead in the stream itself (codegen's kernelEntry).
      bool programmatic = target::targetInfo(img.arch)->hasGridDependencyControl;
      // (balanceX, false by default, is written only where it is set.)
      for (const thir::Kernel &k : img.module->kernels)
        body += fmt::format("        {{\"{}\", {}u, {}u, {}u, {}{}}},\n", k.name, k.threads,
                            k.dynamicSharedBytes, k.persistentBlocksPerSM,
                            programmatic ? "true" : "false", k.persistentBalanceX ? ", true" : "");
    }
    body += "    }}},\n";
  }
  body += "}};\n\n";
  // From the merged entries: an image without tensor maps (sm_80) may come first.
  bool maps = std::any_of(entries.begin(), entries.end(), [](const KernelEntry &e) {
    return std::any_of(e.kernel->params.begin(), e.kernel->params.end(),
                       [](const thir::Param &p) { return p.kind == thir::ParamKind::TensorMap; });
  });
  if (maps)
    body += "template <int Kernel, int Param> inline ::tilec::rt::TensorMapCache &mapCache() {\n"
            "  static ::tilec::rt::TensorMapCache c;\n  return c;\n}\n\n";
  body += fmt::format("inline {1}::ModuleState<{0}> &state() {{\n"
                      "  static {1}::ModuleState<{0}> s;\n  return s;\n}}\n\n",
                      n, api.rt);
  body += "} // namespace tilec_detail\n\n";
  // Where a module lives: one per CUDA context, one per HIP device.
  std::string_view where = hip ? "on the current device" : "into the current context";
  std::string_view everywhere =
      hip ? "on every device it was loaded on" : "from every context it was loaded into";
  body += fmt::format(
      "/// Loads the module {5}; launches do it lazily when needed.\n"
      "inline {0} load() {{\n"
      "  const {1}::{2}<{3}> *tilec_loaded = nullptr;\n"
      "  return {1}::load(tilec_detail::state(), tilec_detail::kImages, tilec_loaded);\n"
      "}}\n\n"
      "/// Unloads the module {6}; a later launch loads it\n"
      "/// again. Must not race with launches from this header.\n"
      "inline void unload() {{ {1}::unload(tilec_detail::state()); }}\n\n"
      "/// The image loaded {7} (\"{4}\"), or null.\n"
      "inline const char *loaded_image() {{\n"
      "  return {1}::loadedImage(tilec_detail::state(), tilec_detail::kImages);\n}}\n\n"
      "/// Why the last failed launch or load on this thread failed, in one line (which argument\n"
      "/// and why); empty when none failed. {1}::lastError() has the fields.\n"
      "inline const char *last_error() {{ return {1}::lastErrorMessage(); }}\n\n",
      api.result, api.rt, hip ? "DeviceModule" : "ContextModule", n,
      hip ? "gfx942 code object" : "sm_90a cubin", where, everywhere,
      hip ? "on the current device" : "into the current context");
  if (!opts.constants.empty()) {
    body += "/// The program's integer and boolean constants as compiled (after -D).\n"
            "namespace constants {\n";
    for (const HeaderConstant &c : opts.constants) {
      if (!isIdentifier(c.name))
        bug(fmt::format("constant name '{}' is not an identifier", c.name));
      std::string name = isKeyword(c.name) ? c.name + "_" : c.name;
      if (c.isBool)
        body += fmt::format("constexpr bool {} = {};\n", name, c.value ? "true" : "false");
      else if (c.value == INT64_MIN)
        body += fmt::format("constexpr ::std::int64_t {} = -9223372036854775807 - 1;\n", name);
      else
        body += fmt::format("constexpr ::std::int64_t {} = {};\n", name, c.value);
    }
    body += "} // namespace constants\n\n";
  }
  for (size_t i = 0; i < n; ++i)
    appendKernel(body, entries[i], i, api);

  // The inline namespace carries a hash of everything inside it (the images and the launch
  // code), so two headers of one namespace built from different inputs (other -D values) can be
  // linked into one program without their definitions being merged. Hidden visibility keeps
  // each shared library's copy to itself (no GNU-unique symbols, no interposition).
  std::string inner = fmt::format("tilec_{:016x}", fnv1a(body));
  out += fmt::format("\n#if defined(__GNUC__)\n#pragma GCC visibility push(hidden)\n#endif\n\n"
                     "namespace {} {{\ninline namespace {} {{\n\n",
                     opts.ns, inner);
  out += body;
  out += fmt::format("}} // namespace {}\n}} // namespace {}\n\n"
                     "#if defined(__GNUC__)\n#pragma GCC visibility pop\n#endif\n",
                     inner, opts.ns);
  return out;
}

} // namespace tilec::driver
