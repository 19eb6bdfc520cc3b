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

const std::string kFakeCubin("\x7f"
                             "ELF\0\1\2",
                             7);

std::string header(const Module &m, std::string ns) {
  return driver::generateHeader({{&m, "sm_90a", kFakeCubin, driver::BinaryKind::Cubin}},
                                {std::move(ns), m.name + ".tile"});
}

void write(const fs::path &p, std::string_view text) {
  std::ofstream f(p, std::ios::binary);
  f.write(text.data(), static_cast<std::streamsize>(text.size()));
}

/// Runs the headers against the fake driver of tests/fakecuda, which records what was loaded
/// and launched in which context, so that their behaviour can be checked without a GPU.
constexpr std::string_view kFakeDriverMain = R"cpp(
#include "vector_add.h"
#include "other.h"
#include <tilec/runtime.h>
#include "fake_cuda.h"
#include <cstdio>
#include <cstring>

static long long lastN;
static void recordN(void **args) { if (args) lastN = *static_cast<long long *>(args[3]); }

#define EXPECT(c) do { if (!(c)) { std::printf("failed: %s (line %d)\n", #c, __LINE__); return 1; } } while (0)
int main() {
  namespace va = tile::vector_add;
  CUdeviceptr a = 0x10000, b = 0x20000, c = 0x30000;
  EXPECT(va::vector_add(nullptr, a, b, c, 100) == CUDA_ERROR_INVALID_CONTEXT);
  EXPECT(std::strstr(va::last_error(), "no current CUDA context"));
  fake_cuda_on_launch(recordN);
  CUcontext ctx = fake_cuda_create_context(0);
  EXPECT(va::vector_add(nullptr, 0, b, c, 100) == CUDA_ERROR_INVALID_VALUE);
  EXPECT(std::strcmp(va::last_error(), "vector_add: argument 'A' = 0x0: null pointer (CUresult 1)") == 0);
  EXPECT(va::vector_add(nullptr, a, b, c + 4, 100) == CUDA_ERROR_INVALID_VALUE);
  EXPECT(std::strcmp(va::last_error(), "vector_add: argument 'C' = 0x30004: not aligned to what the kernel assumes (CUresult 1)") == 0);
  EXPECT(va::vector_add(nullptr, a, b, c, 0) == CUDA_ERROR_INVALID_VALUE);
  EXPECT(std::strcmp(tilec::rt::lastError().argument, "N") == 0 && tilec::rt::lastError().value == 0);
  EXPECT(va::vector_add(nullptr, a, b, c, -5) == CUDA_ERROR_INVALID_VALUE);
  EXPECT(va::vector_add(nullptr, a, b, c, (1LL << 31) * 1024) == CUDA_ERROR_INVALID_VALUE);
  EXPECT(std::strstr(va::last_error(), "dimension must be < 2^31"));
  EXPECT(fake_cuda_total_loads() == 0 && fake_cuda_launches(ctx) == 0);
  EXPECT(va::loaded_image() == nullptr);
  EXPECT(va::vector_add(nullptr, a, b, c, 1025) == CUDA_SUCCESS);
  EXPECT(std::strcmp(va::loaded_image(), "sm_90a cubin") == 0);
  fake_cuda_launch l = fake_cuda_last_launch();
  EXPECT(fake_cuda_total_loads() == 1 && fake_cuda_launches(ctx) == 1);
  EXPECT(l.grid[0] == 2 && l.grid[1] == 1 && l.grid[2] == 1);
  EXPECT(l.block == 256 && l.shared == 0 && lastN == 1025);
  EXPECT(std::strcmp(l.kernel, "vector_add") == 0);
  EXPECT(va::vector_add(nullptr, a, b, c, 1024) == CUDA_SUCCESS);
  EXPECT(fake_cuda_total_loads() == 1 && fake_cuda_launches(ctx) == 2 && fake_cuda_last_launch().grid[0] == 1);
  EXPECT(va::vector_add_info::grid(1025).x == 2 && va::vector_add_info::threads_per_block == 256);
  va::unload();
  EXPECT(fake_cuda_live_modules(ctx) == 0);
  EXPECT(va::load() == CUDA_SUCCESS && fake_cuda_total_loads() == 2);

  namespace o = tile::other;
  EXPECT(o::nothing(nullptr) == CUDA_SUCCESS);
  EXPECT(fake_cuda_last_launch().grid[0] == 1 && fake_cuda_last_launch().block == 32);
  EXPECT(o::new_(nullptr, a, 3, 0, true, 10, 100) == CUDA_SUCCESS);
  l = fake_cuda_last_launch();
  EXPECT(l.grid[0] == 3 && l.grid[1] == 3 && l.grid[2] == 15);
  EXPECT(o::new_(nullptr, a, -3, 0, true, 10, 64) == CUDA_SUCCESS);
  l = fake_cuda_last_launch();
  EXPECT(l.grid[0] == 1 && l.grid[1] == 5 && l.grid[2] == 10 && l.shared == 64 * 1024);
  EXPECT(o::new__info::dynamic_shared_bytes == 64 * 1024);
  EXPECT(o::new_(nullptr, a + 1, 3, 0, true, 10, 64) == CUDA_ERROR_INVALID_VALUE);
  EXPECT(std::strstr(o::last_error(), "argument 'stream_'"));
  // A grid extent of 0 (tilec_r = 0 gives max(0, 1) = 1; class = 0 is rejected first).
  EXPECT(o::new_(nullptr, a, 3, 0, true, 0, 64) == CUDA_ERROR_INVALID_VALUE);
  EXPECT(std::strcmp(tilec::rt::lastError().argument, "class_") == 0);
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
  CHECK(contains(h, "namespace tile::vector_add {\ninline namespace tilec_"));
  CHECK(contains(h, "// sm_90a cubin, 7 bytes.\nalignas(64) inline constexpr unsigned char "
                    "kImage0[] = {\n    0x7f, 0x45, 0x4c, 0x46, 0x00, 0x01, 0x02,\n};"));
  CHECK(contains(h, "{\"sm_90a cubin\", 9, 0, true, ::tilec::rt::ImageKind::Cubin, kImage0, {{\n"
                    "        {\"vector_add\", 256u, 0u, 0u, true},\n"));
  CHECK(contains(h, "inline ::CUresult load() {"));
  CHECK(contains(h, "inline void unload() {"));
  CHECK(contains(h, "inline const char *last_error() {"));
  CHECK(contains(h, "inline ::CUresult vector_add(::CUstream stream, ::CUdeviceptr A, "
                    "::CUdeviceptr B, ::CUdeviceptr C, ::std::int64_t N) {"));
  CHECK(contains(h, "::tilec::rt::checkTensor(C, 16, \"vector_add\", \"C\")"));
  CHECK(contains(h, "::tilec::rt::checkDim(N, \"vector_add\", \"N\")"));
  CHECK(contains(h, "struct vector_add_info {\n"));
  CHECK(contains(h, "static constexpr unsigned threads_per_block = 256;"));
  CHECK(contains(h, "return {::tilec::rt::floorDiv((N + ::std::int64_t{1023}), "
                    "::std::int64_t{1024}), ::std::int64_t{1}, ::std::int64_t{1}};"));
  CHECK(contains(h, "vector_add_info::grid(N);"));
  CHECK(h == header(vectorAdd(), "tile::vector_add")); // deterministic

  Module m = vectorAdd();
  std::string ptx = driver::generateHeader({{&m, "sm_80", ".version 8.5", driver::BinaryKind::Ptx}},
                                           {"tile::vector_add", "vector_add.tile"});
  CHECK(contains(ptx, "// sm_80 PTX, NUL-terminated, 13 bytes."));
  CHECK(contains(ptx, "0x35, 0x00,\n};"));
  CHECK(contains(ptx, "{\"sm_80 PTX\", 8, 0, false, ::tilec::rt::ImageKind::Ptx, kImage0"));
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
  fs::path dir = fs::temp_directory_path() / fmt::format("tilec-header-test-{}", ::getpid());
  fs::create_directories(dir);
  write(dir / "vector_add.h", header(vectorAdd(), driver::defaultNamespace("vector_add")));
  write(dir / "other.h", header(otherModule(), driver::defaultNamespace("other")));
  write(dir / "tu.cpp", "#include \"vector_add.h\"\n#include \"other.h\"\n#include "
                        "\"vector_add.h\"\n#include <tilec/runtime.h>\n");
  write(dir / "main.cpp", kFakeDriverMain);
  write(dir / "alone.cpp", "#include \"other.h\"\n");
  auto flags = [&](const std::string &cudaInclude) {
    return fmt::format("-std=c++17 -Wall -Wextra -Werror -I{} -I{} -I{}", dir.string(), cudaInclude,
                       TILEC_TEST_RUNTIME_INCLUDE);
  };
  // Against the real cuda.h where there is one, and against the fake's.
  for (std::string cudaInclude :
       {std::string(TILEC_TEST_CUDA_INCLUDE), std::string(TILEC_TEST_FAKECUDA)}) {
    if (cudaInclude.empty())
      continue;
    CHECK(run(fmt::format("{} {} -fsyntax-only {}", TILEC_TEST_CXX, flags(cudaInclude),
                          (dir / "tu.cpp").string())) == 0);
    // A generated header alone, with -pedantic.
    CHECK(run(fmt::format("{} {} -pedantic -fsyntax-only {}", TILEC_TEST_CXX, flags(cudaInclude),
                          (dir / "alone.cpp").string())) == 0);
  }
  fs::path exe = dir / "fake";
  REQUIRE(run(fmt::format("{} {} -o {} {} {}/fake_cuda.cpp -lpthread", TILEC_TEST_CXX,
                          flags(TILEC_TEST_FAKECUDA), exe.string(), (dir / "main.cpp").string(),
                          TILEC_TEST_FAKECUDA)) == 0);
  CHECK(run(exe.string()) == 0);
  std::error_code ec;
  fs::remove_all(dir, ec);
}

/// Image selection by compute capability, against the fake driver: which image each device gets,
/// with the launch facts of that image, and the error when none fits.
constexpr std::string_view kMultiArchMain = R"cpp(
#include "multi.h"
#include "fake_cuda.h"
#include <cstdio>
#include <cstring>

#define EXPECT(c) do { if (!(c)) { std::printf("failed: %s (line %d)\n", #c, __LINE__); return 1; } } while (0)
int main() {
  namespace va = tile::multi;
  fake_cuda_set_capability(0, 9, 0);  // H100/H200: the arch-specific sm_90a cubin
  fake_cuda_set_capability(1, 8, 6);  // A10-like: the sm_80 cubin (same major, later minor)
  fake_cuda_set_capability(2, 10, 0); // newer major: only PTX can run
  fake_cuda_set_capability(3, 7, 5);  // older: nothing fits
  const char *want[] = {"sm_90a cubin", "sm_80 cubin", "sm_80 PTX"};
  unsigned threads[] = {256, 128, 128};
  // Only sm_90+ code waits for the grid ahead itself (griddepcontrol), so only it is launched
  // with programmatic stream serialization.
  int programmatic[] = {1, 0, 0};
  for (int d = 0; d < 3; ++d) {
    fake_cuda_create_context(d);
    EXPECT(va::vector_add(nullptr, 0x1000, 0x1000, 0x1000, 5000) == CUDA_SUCCESS);
    EXPECT(std::strcmp(va::loaded_image(), want[d]) == 0);
    EXPECT(fake_cuda_last_launch().block == threads[d]);
    EXPECT(fake_cuda_last_launch().programmatic == programmatic[d]);
  }
  fake_cuda_create_context(3);
  EXPECT(va::vector_add(nullptr, 0x1000, 0x1000, 0x1000, 5000) == CUDA_ERROR_NO_BINARY_FOR_GPU);
  EXPECT(va::loaded_image() == nullptr);
  EXPECT(std::strstr(va::last_error(), "vector_add: no embedded image runs on this GPU"));
  EXPECT(va::vector_add_info::threads_per_block == 256);
  return 0;
}
)cpp";

TEST_CASE("a header with several images picks by compute capability (fake driver)") {
  Module sm90 = vectorAdd(), sm80 = vectorAdd();
  sm80.kernels[0].threads = 128;
  std::string cubin90 = kFakeCubin + "90", cubin80 = kFakeCubin + "80";
  std::string h =
      driver::generateHeader({{&sm90, "sm_90a", cubin90, driver::BinaryKind::Cubin},
                              {&sm80, "sm_80", cubin80, driver::BinaryKind::Cubin},
                              {&sm80, "sm_80", ".version 8.5", driver::BinaryKind::Ptx}},
                             {"tile::multi", "multi.tile"});
  CHECK(contains(h, "{\"sm_80 cubin\", 8, 0, false, ::tilec::rt::ImageKind::Cubin, kImage1"));
  CHECK(contains(h, "static constexpr unsigned threads_per_block = 256;"));
  fs::path dir = fs::temp_directory_path() / fmt::format("tilec-multiarch-test-{}", ::getpid());
  fs::create_directories(dir);
  write(dir / "multi.h", h);
  write(dir / "main.cpp", kMultiArchMain);
  fs::path exe = dir / "multi";
  REQUIRE(run(fmt::format("{} -std=c++17 -Wall -Wextra -Werror -I{} -I{} -o {} {} {}/fake_cuda.cpp "
                          "-lpthread",
                          TILEC_TEST_CXX, dir.string(), TILEC_TEST_FAKECUDA, exe.string(),
                          (dir / "main.cpp").string(), TILEC_TEST_FAKECUDA)) == 0);
  CHECK(run(exe.string()) == 0);
  std::error_code ec;
  fs::remove_all(dir, ec);
}
