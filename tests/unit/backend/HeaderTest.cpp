#include "BackendTestUtil.h"

#include "driver/HeaderGen.h"

#include <doctest/doctest.h>
#include <fmt/format.h>

#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <stdexcept>
#include <unistd.h>

using namespace tilec;
using namespace tilec::test;
namespace fs = std::filesystem;

namespace {

bool contains(const std::string &haystack, std::string_view needle) {
  return haystack.find(needle) != std::string::npos;
}

/// A second module: a kernel without parameters and one whose parameter names collide with the
/// header's own names, with a grid over scalars and more than 48 KB of dynamic shared memory.
Module otherModule() {
  Kernel empty;
  empty.name = "nothing";
  empty.threads = 32;
  Kernel odd;
  odd.name = "new"; // a C++ keyword
  odd.threads = 128;
  odd.dynamicSharedBytes = 64 * 1024;
  odd.params = {tensor("stream", DType::BFloat16, 2),
                scalar("tilec_r", DType::Int32),
                scalar("scale", DType::Float16),
                scalar("flag", DType::Bool),
                dim("class"),
                dim("M")};
  Expr rows = param(5, DType::Int64);
  odd.grid[0] = binary(BinOp::Max, cast(param(1, DType::Int32), {DType::Int64, 1}), constInt(1));
  odd.grid[1] = select(binary(BinOp::Gt, rows, constInt(64)),
                       binary(BinOp::Add, binary(BinOp::Mod, rows, constInt(7)), constInt(1)),
                       binary(BinOp::Div, param(4, DType::Int64), constInt(2)));
  // Floored: -100 // 7 is -15 (C's -100 / 7 is -14).
  odd.grid[2] = binary(BinOp::Mul,
                       binary(BinOp::FloorDiv, binary(BinOp::Sub, constInt(0), rows), constInt(7)),
                       constInt(-1));
  return Module{"other", {empty, odd}};
}

std::string header(const Module &m, std::string ns) {
  return driver::generateHeader(m,
                                std::string("\x7f"
                                            "ELF\0\1\2",
                                            7),
                                driver::BinaryKind::Cubin, {std::move(ns), m.name + ".tile"});
}

void write(const fs::path &p, std::string_view text) {
  std::ofstream f(p, std::ios::binary);
  f.write(text.data(), static_cast<std::streamsize>(text.size()));
}

/// The fake driver: records the calls the header makes, so that its behaviour can be checked
/// without a GPU.
constexpr std::string_view kFakeDriverMain = R"cpp(
#include "vector_add.h"
#include "other.h"
#include <tilec/runtime.h>
#include <cstdio>
#include <cstring>

static int loads = 0, launches = 0, attributes = 0;
static unsigned lastGrid[3], lastBlock, lastSmem;
static long long lastN;
CUresult CUDAAPI cuModuleLoadData(CUmodule *m, const void *image) {
  ++loads;
  if (std::memcmp(image, "\x7f" "ELF", 4) != 0) return CUDA_ERROR_INVALID_IMAGE;
  *m = reinterpret_cast<CUmodule>(0x1000);
  return CUDA_SUCCESS;
}
CUresult CUDAAPI cuModuleGetFunction(CUfunction *f, CUmodule, const char *name) {
  if (std::strcmp(name, "vector_add") && std::strcmp(name, "nothing") && std::strcmp(name, "new"))
    return CUDA_ERROR_NOT_FOUND;
  *f = reinterpret_cast<CUfunction>(0x2000);
  return CUDA_SUCCESS;
}
CUresult CUDAAPI cuFuncSetAttribute(CUfunction, CUfunction_attribute a, int v) {
  if (a == CU_FUNC_ATTRIBUTE_MAX_DYNAMIC_SHARED_SIZE_BYTES && v == 64 * 1024) ++attributes;
  return CUDA_SUCCESS;
}
CUresult CUDAAPI cuModuleUnload(CUmodule) { return CUDA_SUCCESS; }
CUresult CUDAAPI cuLaunchKernel(CUfunction, unsigned gx, unsigned gy, unsigned gz, unsigned bx,
                                unsigned, unsigned, unsigned smem, CUstream, void **args, void **) {
  ++launches;
  lastGrid[0] = gx; lastGrid[1] = gy; lastGrid[2] = gz; lastBlock = bx; lastSmem = smem;
  if (args) lastN = *static_cast<long long *>(args[3]);
  return CUDA_SUCCESS;
}

#define EXPECT(c) do { if (!(c)) { std::printf("failed: %s (line %d)\n", #c, __LINE__); return 1; } } while (0)
int main() {
  namespace va = tile::vector_add;
  CUdeviceptr a = 0x10000, b = 0x20000, c = 0x30000;
  EXPECT(va::vector_add(nullptr, 0, b, c, 100) == CUDA_ERROR_INVALID_VALUE);
  EXPECT(va::vector_add(nullptr, a, b, c + 4, 100) == CUDA_ERROR_INVALID_VALUE);
  EXPECT(va::vector_add(nullptr, a, b, c, 0) == CUDA_ERROR_INVALID_VALUE);
  EXPECT(va::vector_add(nullptr, a, b, c, -5) == CUDA_ERROR_INVALID_VALUE);
  EXPECT(va::vector_add(nullptr, a, b, c, (1LL << 31) * 1024) == CUDA_ERROR_INVALID_VALUE);
  EXPECT(loads == 0 && launches == 0);
  EXPECT(va::vector_add(nullptr, a, b, c, 1025) == CUDA_SUCCESS);
  EXPECT(loads == 1 && launches == 1);
  EXPECT(lastGrid[0] == 2 && lastGrid[1] == 1 && lastGrid[2] == 1);
  EXPECT(lastBlock == 256 && lastSmem == 0 && lastN == 1025);
  EXPECT(va::vector_add(nullptr, a, b, c, 1024) == CUDA_SUCCESS);
  EXPECT(loads == 1 && launches == 2 && lastGrid[0] == 1);
  va::unload();
  EXPECT(va::load() == CUDA_SUCCESS && loads == 2);

  namespace o = tile::other;
  EXPECT(o::nothing(nullptr) == CUDA_SUCCESS);
  EXPECT(attributes == 1);
  EXPECT(lastGrid[0] == 1 && lastBlock == 32);
  EXPECT(o::new_(nullptr, a, 3, 0, true, 10, 100) == CUDA_SUCCESS);
  EXPECT(lastGrid[0] == 3 && lastGrid[1] == 3 && lastGrid[2] == 15);
  EXPECT(o::new_(nullptr, a, -3, 0, true, 10, 64) == CUDA_SUCCESS);
  EXPECT(lastGrid[0] == 1 && lastGrid[1] == 5 && lastGrid[2] == 10 && lastSmem == 64 * 1024);
  EXPECT(o::new_(nullptr, a + 1, 3, 0, true, 10, 64) == CUDA_ERROR_INVALID_VALUE);
  return 0;
}
)cpp";

int run(const std::string &command) {
  INFO(command);
  return std::system(command.c_str());
}

} // namespace

TEST_CASE("header text follows the contract") {
  std::string h = header(vectorAdd(), driver::defaultNamespace("vector_add"));
  INFO(h);
  CHECK(h.rfind("// Generated by tilec from vector_add.tile. Do not edit.\n", 0) == 0);
  CHECK(contains(h, "#pragma once\n"));
  CHECK(contains(h, "#include <cuda.h>\n"));
  CHECK(contains(h, "#include <cstdint>\n"));
  CHECK(contains(h, "#include <cstddef>\n"));
  CHECK(contains(h, "#ifndef TILEC_RUNTIME_H\n#define TILEC_RUNTIME_H\n"));
  CHECK(contains(h, std::string(driver::runtimeHeaderText())));
  CHECK(contains(h, "namespace tile::vector_add {\n"));
  CHECK(contains(h, "alignas(64) inline constexpr unsigned char kImage[] = {\n    0x7f, 0x45, "
                    "0x4c, 0x46, 0x00, 0x01, 0x02,\n};"));
  CHECK(contains(h, "inline ::CUresult load() {"));
  CHECK(contains(h, "inline void unload() {"));
  CHECK(contains(h, "inline ::CUresult vector_add(::CUstream stream, ::CUdeviceptr A, "
                    "::CUdeviceptr B, ::CUdeviceptr C, ::std::int64_t N) {"));
  CHECK(contains(h, "::tilec::rt::checkTensor(C, 16)"));
  CHECK(contains(h, "::tilec::rt::checkDim(N)"));
  CHECK(contains(h, "const ::std::int64_t tilec_grid_x = ::tilec::rt::floorDiv((N + "
                    "::std::int64_t{1023}), ::std::int64_t{1024});"));
  CHECK(contains(h, "256u, stream, tilec_args);"));
  CHECK(h == header(vectorAdd(), "tile::vector_add")); // deterministic

  std::string ptx = driver::generateHeader(vectorAdd(), ".version 8.5", driver::BinaryKind::Ptx,
                                           {"tile::vector_add", "vector_add.tile"});
  CHECK(contains(ptx, "// PTX text, NUL-terminated, 13 bytes."));
  CHECK(contains(ptx, "0x35, 0x00,\n};"));
}

TEST_CASE("namespaces and names are made valid C++") {
  CHECK(driver::defaultNamespace("gemm") == "tile::gemm");
  CHECK(driver::defaultNamespace("flash-attn.v2") == "tile::flash_attn_v2");
  CHECK(driver::defaultNamespace("2d") == "tile::_2d");
  CHECK(driver::defaultNamespace("new") == "tile::new_");
  CHECK(driver::isValidNamespace("a::b_2"));
  CHECK_FALSE(driver::isValidNamespace("a::"));
  CHECK_FALSE(driver::isValidNamespace("a b"));
  CHECK_FALSE(driver::isValidNamespace("class"));
  CHECK_THROWS_AS(header(vectorAdd(), "not valid"), std::logic_error);
  Module bad = vectorAdd();
  bad.kernels[0].grid[1] = globalLoad(0, constInt(0), {DType::Int64, 1}, 8);
  CHECK_THROWS_AS(header(bad, "t"), std::logic_error);
}

TEST_CASE("generated headers compile and behave (against a fake driver)") {
  std::string cudaInclude = TILEC_TEST_CUDA_INCLUDE;
  if (cudaInclude.empty()) {
    MESSAGE("cuda.h not found: skipping");
    return;
  }
  fs::path dir = fs::temp_directory_path() / fmt::format("tilec-header-test-{}", ::getpid());
  fs::create_directories(dir);
  write(dir / "vector_add.h", header(vectorAdd(), driver::defaultNamespace("vector_add")));
  write(dir / "other.h", header(otherModule(), driver::defaultNamespace("other")));
  write(dir / "tu.cpp", "#include \"vector_add.h\"\n#include \"other.h\"\n#include "
                        "\"vector_add.h\"\n#include <tilec/runtime.h>\n");
  write(dir / "main.cpp", kFakeDriverMain);
  std::string flags = fmt::format("-std=c++17 -Wall -Wextra -Werror -I{} -I{} -I{}", dir.string(),
                                  cudaInclude, TILEC_TEST_RUNTIME_INCLUDE);
  CHECK(run(fmt::format("{} {} -fsyntax-only {}", TILEC_TEST_CXX, flags,
                        (dir / "tu.cpp").string())) == 0);
  // A generated header alone, with -pedantic.
  write(dir / "alone.cpp", "#include \"other.h\"\n");
  CHECK(run(fmt::format("{} {} -pedantic -fsyntax-only {}", TILEC_TEST_CXX, flags,
                        (dir / "alone.cpp").string())) == 0);
  fs::path exe = dir / "fake";
  REQUIRE(run(fmt::format("{} {} -o {} {} -lpthread", TILEC_TEST_CXX, flags, exe.string(),
                          (dir / "main.cpp").string())) == 0);
  CHECK(run(exe.string()) == 0);
  std::error_code ec;
  fs::remove_all(dir, ec);
}
