// The parts of `tilec bench` that need no GPU: argument parsing, host evaluation of launch
// expressions, the seeded input contents and the summary of timings.
#include "bench/Report.h"
#include "bench/Runner.h"
#include "bench/Tune.h"
#include "bench/Workload.h"

#include <doctest/doctest.h>

#include <cmath>
#include <cstring>

using namespace tilec;
using namespace tilec::bench;

TEST_CASE("parseAssignments reads NAME=VALUE lists") {
  Assignments a;
  std::string error;
  CHECK(parseAssignments("M=4096, N = 128;K=64", a, error));
  CHECK(a == Assignments{{"M", "4096"}, {"N", "128"}, {"K", "64"}});
  CHECK(parseAssignments("M=1", a, error)); // a later value wins
  CHECK(a.at("M") == "1");
  CHECK(parseAssignments("", a, error));
  CHECK_FALSE(parseAssignments("M=1,N", a, error));
  CHECK(error == "expected NAME=VALUE, got 'N'");
  CHECK_FALSE(parseAssignments("=3", a, error));
  CHECK_FALSE(parseAssignments("M=", a, error));
}

TEST_CASE("parseByteSize takes decimal and binary units") {
  CHECK(parseByteSize("1048576") == 1048576u);
  CHECK(parseByteSize("256MiB") == 256u << 20);
  CHECK(parseByteSize("1GB") == 1000000000u);
  CHECK(parseByteSize("4k") == 4000u);
  CHECK(parseByteSize("1_000") == 1000u);
  CHECK_FALSE(parseByteSize("12XB"));
  CHECK_FALSE(parseByteSize("0"));
  CHECK_FALSE(parseByteSize("-4"));
  CHECK_FALSE(parseByteSize("GiB"));
  CHECK_FALSE(parseByteSize("99999999999GiB")); // beyond 2^50
}

TEST_CASE("evalHost evaluates grid expressions with the language's integer semantics") {
  using namespace tilec::thir;
  // ceildiv(N, 128) as lowering writes it: (N + 127) // 128, N a Dim parameter.
  Expr n = param(1, DType::Int64);
  Expr grid = binary(BinOp::FloorDiv, binary(BinOp::Add, n, constInt(127)), constInt(128));
  CHECK(evalHost(grid, {0, 1000}) == 8);
  CHECK(evalHost(grid, {0, 1024}) == 8);
  CHECK(evalHost(binary(BinOp::FloorDiv, constInt(-7), constInt(2)), {}) == -4);
  CHECK(evalHost(binary(BinOp::Mod, constInt(-7), constInt(2)), {}) == 1);
  CHECK(evalHost(binary(BinOp::Div, constInt(-7), constInt(2)), {}) == -3);
  CHECK(evalHost(binary(BinOp::Min, n, constInt(5)), {0, 9}) == 5);
  CHECK(evalHost(select(binary(BinOp::Lt, n, constInt(5)), constInt(1), constInt(2)), {0, 9}) == 2);
  // Narrowing casts wrap as on the device.
  CHECK(evalHost(cast(constInt(300), Type{DType::UInt8, 1}), {}) == 44);
  // What a host expression cannot be: a division by zero, a parameter out of range, a float.
  CHECK_FALSE(evalHost(binary(BinOp::FloorDiv, n, constInt(0)), {0, 9}));
  CHECK_FALSE(evalHost(param(3, DType::Int64), {0, 9}));
  CHECK_FALSE(evalHost(constFloat(1.5), {}));
}

TEST_CASE("randomContents is a function of the seed, in each dtype's range") {
  auto a = randomContents(DType::Float16, 4096, 7), b = randomContents(DType::Float16, 4096, 7);
  CHECK(a == b);
  CHECK(a != randomContents(DType::Float16, 4096, 8));
  CHECK(a.size() == 8192);
  auto f = randomContents(DType::Float32, 4096, 1);
  float lo = 2, hi = -2;
  for (size_t i = 0; i < 4096; ++i) {
    float v;
    std::memcpy(&v, &f[4 * i], 4);
    lo = std::min(lo, v);
    hi = std::max(hi, v);
  }
  CHECK(lo >= -1.0f);
  CHECK(hi < 1.0f);
  CHECK(lo < -0.9f); // spread over the range, not a constant
  CHECK(hi > 0.9f);
  auto i8 = randomContents(DType::Int32, 1000, 3);
  for (size_t i = 0; i < 1000; ++i) {
    int32_t v;
    std::memcpy(&v, &i8[4 * i], 4);
    CHECK((v >= 0 && v < 16));
  }
  auto e4 = randomContents(DType::Float8E4M3, 1000, 3);
  for (unsigned char bits : e4)
    CHECK(std::abs(float8Value(bits, DType::Float8E4M3)) <= 1.0);
}

TEST_CASE("summarize takes the median of the launches") {
  Timing t = summarize({5, 1, 3});
  CHECK(t.median == 3);
  CHECK(t.min == 1);
  CHECK(t.max == 5);
  CHECK(t.us == std::vector<double>{5, 1, 3}); // in the order run
  CHECK(summarize({4, 1, 3, 2}).median == 2.5);
}

TEST_CASE("rates and the report") {
  CHECK(tflops(2.0 * 4096 * 4096 * 4096, 200.0) == doctest::Approx(687.19).epsilon(1e-4));
  CHECK(gbps(1e9, 1000.0) == doctest::Approx(1000.0));
  BenchReport r;
  r.device.name = "GPU";
  r.device.ccMajor = 9;
  r.source = "k.tile";
  r.arch = "sm_90a";
  KernelReport k;
  k.name = "k";
  k.dims = {{"N", 8}};
  k.timing = summarize({10, 20, 30});
  k.bytes = 1e6;
  r.kernels.push_back(k);
  std::string text = formatText(r);
  CHECK(text.find("k (k.tile, --arch sm_90a) N=8") != std::string::npos);
  CHECK(text.find("median 20.00 us, min 10.00, max 30.00 (3 launches") != std::string::npos);
  CHECK(text.find("50.0 GB/s\n") != std::string::npos);
  nlohmann::json j = toJson(r);
  CHECK(j["kernels"][0]["dims"]["N"] == 8);
  CHECK(j["kernels"][0]["us"]["median"] == 20.0);
  CHECK_FALSE(j["kernels"][0].contains("tflops")); // no FLOPs counted
}

TEST_CASE("the tune space: parsing and enumeration") {
  std::vector<Knob> space;
  std::string error;
  REQUIRE(parseSpace("block_M=64,128; num_stages=3,4 ;", space, error));
  REQUIRE(space.size() == 2);
  CHECK(space[1].values == std::vector<std::string>{"3", "4"});
  std::vector<Variant> v = enumerate(space);
  REQUIRE(v.size() == 4);
  CHECK(variantName(v[0]) == "block_M=64 num_stages=3");
  CHECK(variantName(v[1]) == "block_M=64 num_stages=4"); // the last knob varies fastest
  CHECK(variantName(v[3]) == "block_M=128 num_stages=4");
  std::vector<Knob> bad;
  CHECK_FALSE(parseSpace("", bad, error));
  CHECK(error == "the space is empty");
  CHECK_FALSE(parseSpace("a", bad, error));
  CHECK_FALSE(parseSpace("a=1;a=2", bad, error));
  std::vector<Assignments> shapes;
  REQUIRE(parseShapes("M=1,N=2;M=3,N=4", shapes, error));
  CHECK(shapes.size() == 2);
  CHECK(shapeName(shapes[1]) == "M=3,N=4");
}

TEST_CASE("tensorDistance: how tune tells a wrong variant from rounding") {
  auto f32 = [](std::vector<float> v) {
    std::vector<unsigned char> out(v.size() * 4);
    std::memcpy(out.data(), v.data(), out.size());
    return out;
  };
  CHECK(tensorDistance(DType::Float32, f32({1, 2, 3}), f32({1, 2, 3})) == 0);
  CHECK(tensorDistance(DType::Float32, f32({3, 4}), f32({3, 4.5})) == doctest::Approx(0.1));
  CHECK(tensorDistance(DType::Float32, f32({1, NAN}), f32({1, NAN})) == 0);
  CHECK(std::isinf(tensorDistance(DType::Float32, f32({1, 2}), f32({1, NAN}))));
  CHECK(std::isinf(tensorDistance(DType::Float32, f32({1}), f32({1, 2}))));
  // float16 1.0 (0x3c00) against 1.0009765625 (0x3c01): one ulp.
  std::vector<unsigned char> one = {0x00, 0x3c}, next = {0x01, 0x3c};
  CHECK(tensorDistance(DType::Float16, one, next) == doctest::Approx(1.0 / 1024));
  CHECK(tensorDistance(DType::Float16, one, next) < defaultTolerance(DType::Float16));
  std::vector<unsigned char> ints = {1, 2, 3, 4}, other = {1, 2, 3, 5};
  CHECK(tensorDistance(DType::UInt8, ints, other) == 0.25);
  CHECK(defaultTolerance(DType::Int32) == 0);
}

TEST_CASE("the tune record round-trips and gives each shape its fastest variant") {
  Record r;
  r.sourceHash = contentHash("program");
  r.arch = "sm_90a";
  r.device = "GPU";
  r.kernel = "k";
  Measurement a{"block=256", "N=4", "ok", "", summarize({3, 4}), {}, std::nullopt, 1.0};
  Measurement b{"block=1024", "N=4", "ok", "", summarize({2}), {}, std::nullopt, 2.0};
  Measurement c{"block=64", "N=4", "disagrees", "tensor 'C' differs", summarize({1}), {}, {}, {}};
  r.measurements = {a, b, c};
  std::string error;
  std::optional<Record> back = recordFromJson(toJson(r), error);
  REQUIRE(back);
  CHECK(back->sourceHash == r.sourceHash);
  REQUIRE(back->measurements.size() == 3);
  CHECK(back->measurements[0].timing.median == 3.5);
  CHECK(back->measurements[2].reason == "tensor 'C' differs");
  CHECK(findMeasurement(*back, "block=1024", "N=4")->gbps == 2.0);
  CHECK_FALSE(findMeasurement(*back, "block=1024", "N=8"));
  // The fastest that ran and agreed wins; a shape where none ran has no winner.
  auto w = winners(back->measurements, {"N=4", "N=8"});
  REQUIRE(w[0]);
  CHECK(w[0]->variant == "block=1024");
  CHECK_FALSE(w[1]);
  CHECK_FALSE(recordFromJson(nlohmann::json{{"x", 1}}, error));
  CHECK(contentHash("a") != contentHash("b"));
  CHECK(contentHash("a").size() == 16);
}
