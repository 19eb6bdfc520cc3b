#include "bench/Runner.h"

#include <llvm/ADT/APFloat.h>

#include <fmt/format.h>

#include <algorithm>
#include <array>
#include <cstring>
#include <functional>

namespace tilec::bench {

namespace {

uint64_t splitmix(uint64_t x) {
  x += 0x9e3779b97f4a7c15ull;
  x = (x ^ (x >> 30)) * 0xbf58476d1ce4e5b9ull;
  x = (x ^ (x >> 27)) * 0x94d049bb133111ebull;
  return x ^ (x >> 31);
}

constexpr int kTableBits = 16;

/// The encodings of 2^16 values evenly spread over [-1, 1) in `dtype`, little-endian.
std::vector<unsigned char> floatTable(DType dtype) {
  int bytes = dtypeBytes(dtype);
  std::vector<unsigned char> table(size_t{1} << kTableBits);
  table.resize((size_t{1} << kTableBits) * bytes);
  for (size_t i = 0; i < (size_t{1} << kTableBits); ++i) {
    double v = -1.0 + 2.0 * (static_cast<double>(i) + 0.5) / static_cast<double>(1 << kTableBits);
    uint64_t bits = 0;
    if (isFloat8(dtype)) {
      bits = float8Bits(v, dtype);
    } else if (dtype == DType::Float64) {
      std::memcpy(&bits, &v, 8);
    } else if (dtype == DType::Float32) {
      float f = static_cast<float>(v);
      uint32_t b;
      std::memcpy(&b, &f, 4);
      bits = b;
    } else {
      llvm::APFloat f(v);
      bool lost = false;
      f.convert(dtype == DType::BFloat16 ? llvm::APFloat::BFloat() : llvm::APFloat::IEEEhalf(),
                llvm::APFloat::rmNearestTiesToEven, &lost);
      bits = f.bitcastToAPInt().getZExtValue();
    }
    for (int b = 0; b < bytes; ++b)
      table[i * bytes + b] = static_cast<unsigned char>(bits >> (8 * b));
  }
  return table;
}

/// A kernel parameter's bytes as cuLaunchKernel reads them (the largest is a tensor map).
struct alignas(64) ParamSlot {
  unsigned char bytes[128];
};

struct DeviceBuffer {
  const cu::Driver *cu = nullptr;
  cu::DevicePtr ptr = 0;
  DeviceBuffer() = default;
  DeviceBuffer(const DeviceBuffer &) = delete;
  DeviceBuffer &operator=(const DeviceBuffer &) = delete;
  ~DeviceBuffer() {
    if (ptr)
      cu->memFree(ptr);
  }
};

struct LoadedModule {
  const cu::Driver *cu = nullptr;
  cu::Module module = nullptr;
  ~LoadedModule() {
    if (module)
      cu->moduleUnload(module);
  }
};

struct Events {
  const cu::Driver *cu = nullptr;
  std::vector<cu::Event> events;
  ~Events() {
    for (cu::Event e : events)
      cu->eventDestroy(e);
  }
};

int tensorMapDataType(DType t) {
  // CUtensorMapDataType: UINT8 0, UINT16 1, UINT32 2, INT32 3, UINT64 4, INT64 5, FLOAT16 6,
  // FLOAT32 7, FLOAT64 8, BFLOAT16 9; as the header maps them (tensorMapDataType in HeaderGen).
  switch (t) {
  case DType::Float16:
    return 6;
  case DType::BFloat16:
    return 9;
  case DType::Float32:
    return 7;
  case DType::Float64:
    return 8;
  case DType::Int32:
    return 3;
  case DType::UInt32:
    return 2;
  case DType::Int64:
    return 5;
  case DType::Int16:
    return 1;
  default:
    return 0;
  }
}

int tensorMapSwizzle(int bytes) {
  switch (bytes) {
  case 32:
    return 1;
  case 64:
    return 2;
  case 128:
    return 3;
  default:
    return 0;
  }
}

} // namespace

std::vector<unsigned char> randomContents(DType dtype, uint64_t elements, uint64_t seed) {
  int bytes = dtypeBytes(dtype);
  std::vector<unsigned char> out(elements * static_cast<uint64_t>(bytes));
  uint64_t state = splitmix(seed);
  if (isFloat(dtype)) {
    std::vector<unsigned char> table = floatTable(dtype);
    for (uint64_t i = 0; i < elements; ++i) {
      size_t pick = splitmix(state + i) & ((size_t{1} << kTableBits) - 1);
      std::memcpy(&out[i * bytes], &table[pick * bytes], static_cast<size_t>(bytes));
    }
  } else {
    uint64_t mask = dtype == DType::Bool ? 1 : 15;
    for (uint64_t i = 0; i < elements; ++i) {
      uint64_t v = splitmix(state + i) & mask;
      std::memcpy(&out[i * bytes], &v, static_cast<size_t>(bytes)); // little-endian
    }
  }
  return out;
}

Timing summarize(std::vector<double> us) {
  Timing t;
  t.us = us;
  if (us.empty())
    return t;
  std::sort(us.begin(), us.end());
  t.min = us.front();
  t.max = us.back();
  size_t n = us.size();
  t.median = n % 2 ? us[n / 2] : (us[n / 2 - 1] + us[n / 2]) / 2;
  return t;
}

bool Runner::check(cu::Result r, std::string_view what, std::string &error) const {
  if (r == cu::kSuccess)
    return true;
  error = fmt::format("{} failed: {}", what, cu_->errorText(r));
  return false;
}

std::unique_ptr<Runner> Runner::open(int ordinal, std::string &error) {
  std::unique_ptr<Runner> r(new Runner());
  r->cu_ = cu::Driver::load(error);
  if (!r->cu_)
    return nullptr;
  const cu::Driver &cu = *r->cu_;
  if (!r->check(cu.init(0), "cuInit", error))
    return nullptr;
  int count = 0;
  if (!r->check(cu.deviceGetCount(&count), "cuDeviceGetCount", error))
    return nullptr;
  if (ordinal < 0 || ordinal >= count) {
    error = count == 0
                ? "no CUDA device found"
                : fmt::format("--device {}: the machine has {} CUDA device{} (ordinals 0 to {})",
                              ordinal, count, count == 1 ? "" : "s", count - 1);
    return nullptr;
  }
  if (!r->check(cu.deviceGet(&r->dev_, ordinal), "cuDeviceGet", error) ||
      !r->check(cu.primaryCtxRetain(&r->ctx_, r->dev_), "cuDevicePrimaryCtxRetain", error) ||
      !r->check(cu.ctxSetCurrent(r->ctx_), "cuCtxSetCurrent", error))
    return nullptr;
  DeviceInfo &d = r->info_;
  d.ordinal = ordinal;
  char name[256] = {};
  int l2 = 0;
  if (!r->check(cu.deviceGetName(name, sizeof name - 1, r->dev_), "cuDeviceGetName", error) ||
      !r->check(cu.deviceGetAttribute(&d.ccMajor, cu::kAttrComputeCapabilityMajor, r->dev_),
                "cuDeviceGetAttribute", error) ||
      !r->check(cu.deviceGetAttribute(&d.ccMinor, cu::kAttrComputeCapabilityMinor, r->dev_),
                "cuDeviceGetAttribute", error) ||
      !r->check(cu.deviceGetAttribute(&d.multiprocessors, cu::kAttrMultiprocessorCount, r->dev_),
                "cuDeviceGetAttribute", error) ||
      !r->check(cu.deviceGetAttribute(&l2, cu::kAttrL2CacheSize, r->dev_), "cuDeviceGetAttribute",
                error) ||
      !r->check(
          cu.deviceGetAttribute(&d.maxSharedPerBlock, cu::kAttrMaxSharedPerBlockOptin, r->dev_),
          "cuDeviceGetAttribute", error))
    return nullptr;
  d.name = name;
  d.l2Bytes = l2;
  return r;
}

Runner::~Runner() {
  if (ctx_)
    cu_->primaryCtxRelease(dev_);
}

std::string Runner::arch() const {
  if (info_.ccMajor == 9 && info_.ccMinor == 0)
    return "sm_90a";
  return "sm_80";
}

TensorSet::~TensorSet() {
  for (const Entry &e : entries_) {
    if (e.live)
      cu_->memFree(e.live);
    if (e.pristine)
      cu_->memFree(e.pristine);
  }
}

bool TensorSet::fits(const Launch &launch) const {
  if (launch.tensors.size() != entries_.size())
    return false;
  for (size_t t = 0; t < entries_.size(); ++t)
    if (launch.tensors[t].dtype != entries_[t].dtype ||
        launch.tensors[t].bytes != entries_[t].bytes)
      return false;
  return true;
}

std::unique_ptr<TensorSet> Runner::prepare(const Launch &launch, const RunOptions &opts,
                                           bool keepPristine, std::string &error) {
  const cu::Driver &cu = *cu_;
  std::unique_ptr<TensorSet> set(new TensorSet());
  set->cu_ = &cu;
  // Each tensor its own stream of values, a function of the seed and its position.
  for (size_t t = 0; t < launch.tensors.size(); ++t) {
    const TensorArg &arg = launch.tensors[t];
    TensorSet::Entry &e = set->entries_.emplace_back(TensorSet::Entry{arg.dtype, arg.bytes});
    uint64_t bytes = std::max<uint64_t>(arg.bytes, 1);
    if (!check(cu.memAlloc(&e.live, bytes),
               fmt::format("allocating {} bytes for tensor '{}'", arg.bytes, arg.name), error) ||
        (keepPristine && !check(cu.memAlloc(&e.pristine, bytes),
                                fmt::format("allocating a copy of tensor '{}'", arg.name), error)))
      return nullptr;
    uint64_t elements = arg.bytes / static_cast<uint64_t>(dtypeBytes(arg.dtype));
    std::vector<unsigned char> host = randomContents(arg.dtype, elements, opts.seed * 1000003 + t);
    if (!check(cu.memcpyHtoD(e.live, host.data(), host.size()), "filling a tensor", error) ||
        (keepPristine &&
         !check(cu.memcpyHtoD(e.pristine, host.data(), host.size()), "filling a tensor", error)))
      return nullptr;
  }
  return set;
}

std::optional<RunResult> Runner::run(const Launch &launch, std::string_view image,
                                     const RunOptions &opts, bool captureOutputs,
                                     std::string &error) {
  std::unique_ptr<TensorSet> tensors = prepare(launch, opts, false, error);
  if (!tensors)
    return std::nullopt;
  return run(launch, image, *tensors, opts, captureOutputs, error);
}

std::optional<RunResult> Runner::run(const Launch &launch, std::string_view image,
                                     TensorSet &tensors, const RunOptions &opts,
                                     bool captureOutputs, std::string &error) {
  const cu::Driver &cu = *cu_;
  if (!tensors.fits(launch)) {
    error = "internal: the tensors prepared do not fit this launch";
    return std::nullopt;
  }
  const thir::Kernel &k = *launch.kernel;
  // PTX text must end in a NUL for cuModuleLoadData; a cubin is passed as is.
  std::string owned(image);
  owned.push_back('\0');
  LoadedModule mod{&cu};
  if (!check(cu.moduleLoadData(&mod.module, owned.data()), "loading the module", error))
    return std::nullopt;
  cu::Function fn = nullptr;
  if (!check(cu.moduleGetFunction(&fn, mod.module, k.name.c_str()),
             fmt::format("finding kernel '{}'", k.name), error))
    return std::nullopt;
  if (k.dynamicSharedBytes > info_.maxSharedPerBlock) {
    error = fmt::format("kernel '{}' needs {} bytes of shared memory a block; {} allows {}", k.name,
                        k.dynamicSharedBytes, info_.name, info_.maxSharedPerBlock);
    return std::nullopt;
  }
  if (k.dynamicSharedBytes > 48 * 1024 &&
      !check(cu.funcSetAttribute(fn, cu::kFuncAttrMaxDynamicSharedBytes, k.dynamicSharedBytes),
             "raising the shared memory limit", error))
    return std::nullopt;
  RunResult result;
  if (!check(cu.funcGetAttribute(&result.facts.registers, cu::kFuncAttrNumRegs, fn),
             "cuFuncGetAttribute", error) ||
      !check(cu.funcGetAttribute(&result.facts.localBytes, cu::kFuncAttrLocalSizeBytes, fn),
             "cuFuncGetAttribute", error) ||
      !check(
          cu.occupancyMaxActiveBlocksPerMultiprocessor(&result.facts.blocksPerSM, fn, k.threads,
                                                       static_cast<size_t>(k.dynamicSharedBytes)),
          "cuOccupancyMaxActiveBlocksPerMultiprocessor", error))
    return std::nullopt;
  if (result.facts.blocksPerSM == 0) {
    error = fmt::format("kernel '{}' does not fit on an SM: {} registers a thread x {} threads, "
                        "{} bytes of shared memory",
                        k.name, result.facts.registers, k.threads, k.dynamicSharedBytes);
    return std::nullopt;
  }

  // The tensors as filled: an earlier run on them may have written its outputs.
  std::vector<cu::DevicePtr> tensorPtr(k.params.size(), 0);
  for (size_t t = 0; t < launch.tensors.size(); ++t) {
    const TensorSet::Entry &e = tensors.entries_[t];
    if (e.pristine && !check(cu.memcpyDtoDAsync(e.live, e.pristine, e.bytes, nullptr),
                             "restoring a tensor", error))
      return std::nullopt;
    tensorPtr[launch.tensors[t].param] = e.live;
  }

  // The argument array, parameter by parameter as the header's launch function builds it.
  std::vector<ParamSlot> slots(k.params.size());
  std::vector<void *> args(k.params.size());
  bool tmaOk = true;
  for (size_t i = 0; i < k.params.size(); ++i) {
    const thir::Param &p = k.params[i];
    ParamSlot &slot = slots[i];
    std::memset(slot.bytes, 0, sizeof slot.bytes);
    args[i] = slot.bytes;
    switch (p.kind) {
    case thir::ParamKind::Tensor:
      std::memcpy(slot.bytes, &tensorPtr[i], sizeof(cu::DevicePtr));
      break;
    case thir::ParamKind::Dim:
      std::memcpy(slot.bytes, &launch.intValues[i], sizeof(int64_t));
      break;
    case thir::ParamKind::Scalar: {
      double v = launch.scalarValues[i];
      uint64_t bits = 0;
      if (p.dtype == DType::Float32) {
        float f = static_cast<float>(v);
        std::memcpy(&bits, &f, 4);
      } else if (p.dtype == DType::Float64) {
        std::memcpy(&bits, &v, 8);
      } else if (p.dtype == DType::Float16 || p.dtype == DType::BFloat16) {
        llvm::APFloat f(v);
        bool lost = false;
        f.convert(p.dtype == DType::BFloat16 ? llvm::APFloat::BFloat() : llvm::APFloat::IEEEhalf(),
                  llvm::APFloat::rmNearestTiesToEven, &lost);
        bits = f.bitcastToAPInt().getZExtValue();
      } else if (isFloat8(p.dtype)) {
        error = fmt::format("float8 scalar parameter '{}' is not supported yet", p.name);
        return std::nullopt;
      } else {
        bits = static_cast<uint64_t>(launch.intValues[i]);
      }
      std::memcpy(slot.bytes, &bits, static_cast<size_t>(dtypeBytes(p.dtype)));
      break;
    }
    case thir::ParamKind::TensorMap:
    case thir::ParamKind::TmaEnabled:
      break; // below, once every tensor is known
    }
  }
  for (size_t i = 0; i < k.params.size(); ++i) {
    const thir::Param &p = k.params[i];
    if (p.kind != thir::ParamKind::TensorMap)
      continue;
    const thir::TensorMapInfo &m = p.map;
    unsigned rank = static_cast<unsigned>(m.box.size());
    cu::DevicePtr ptr = m.tensor >= 0 ? tensorPtr[m.tensor] : 0;
    std::array<unsigned long long, 5> dims{}, strides{};
    std::array<unsigned, 5> box{}, elementStrides{};
    bool fits = rank >= 1 && rank <= 5 && m.dims.size() == rank && m.strides.size() + 1 == rank &&
                ptr % 16 == 0;
    for (unsigned d = 0; fits && d < rank; ++d) {
      auto extent = evalHost(m.dims[d], launch.intValues);
      fits = extent && *extent > 0 && *extent <= (int64_t{1} << 32);
      if (fits)
        dims[d] = static_cast<unsigned long long>(*extent);
      box[d] = static_cast<unsigned>(m.box[d]);
      elementStrides[d] = 1;
      if (fits && d + 1 < rank) {
        auto stride = evalHost(m.strides[d], launch.intValues);
        fits = stride && *stride > 0 && *stride % 16 == 0 && *stride < (int64_t{1} << 40);
        if (fits)
          strides[d] = static_cast<unsigned long long>(*stride);
      }
    }
    if (!fits) {
      tmaOk = false; // the kernel copies without TMA, as through the header
      continue;
    }
    auto *map = reinterpret_cast<cu::TensorMap *>(slots[i].bytes);
    if (!check(cu.tensorMapEncodeTiled(
                   map, tensorMapDataType(p.dtype), rank, reinterpret_cast<void *>(ptr),
                   dims.data(), strides.data(), box.data(), elementStrides.data(),
                   cu::kTensorMapInterleaveNone, tensorMapSwizzle(m.swizzleBytes),
                   cu::kTensorMapL2Promotion256B, cu::kTensorMapOobFillNone),
               fmt::format("encoding the tensor map of '{}'", p.name), error))
      return std::nullopt;
  }
  if (!tmaOk)
    for (size_t i = 0; i < k.params.size(); ++i)
      if (k.params[i].kind == thir::ParamKind::TensorMap)
        std::memset(slots[i].bytes, 0, sizeof slots[i].bytes);
  for (size_t i = 0; i < k.params.size(); ++i)
    if (k.params[i].kind == thir::ParamKind::TmaEnabled) {
      int32_t on = tmaOk ? 1 : 0;
      std::memcpy(slots[i].bytes, &on, 4);
    }

  // A persistent kernel walks the grid on as many blocks as fit, as the header launches it.
  std::array<int64_t, 3> grid = launch.grid;
  if (k.persistentBlocksPerSM > 0) {
    // At most 2^31 - 1 blocks (Workload checked).
    const int64_t blocks = grid[0] * grid[1] * grid[2];
    const int64_t resident =
        static_cast<int64_t>(std::max(info_.multiprocessors, 1)) * k.persistentBlocksPerSM;
    grid = {thir::persistentLaunchBlocks(blocks, resident, grid[0], k.persistentBalanceX), 1, 1};
  }
  auto launchOnce = [&]() {
    return cu.launchKernel(fn, static_cast<unsigned>(grid[0]), static_cast<unsigned>(grid[1]),
                           static_cast<unsigned>(grid[2]), static_cast<unsigned>(k.threads), 1, 1,
                           static_cast<unsigned>(k.dynamicSharedBytes), nullptr,
                           args.empty() ? nullptr : args.data(), nullptr);
  };
  // The first launch alone, so that its outputs can be read before repetitions change them.
  if (!check(launchOnce(), fmt::format("launching '{}'", k.name), error) ||
      !check(cu.ctxSynchronize(), fmt::format("running '{}'", k.name), error))
    return std::nullopt;
  if (captureOutputs)
    for (size_t t = 0; t < launch.tensors.size(); ++t) {
      std::vector<unsigned char> host(launch.tensors[t].bytes);
      if (!check(cu.memcpyDtoH(host.data(), tensors.entries_[t].live, host.size()),
                 "reading a tensor", error))
        return std::nullopt;
      result.tensors.push_back(std::move(host));
    }
  for (int i = 1; i < opts.warmup; ++i)
    if (!check(launchOnce(), fmt::format("launching '{}'", k.name), error))
      return std::nullopt;

  std::optional<Timing> timing = timeRepeated([&] { return launchOnce(); },
                                              fmt::format("launching '{}'", k.name), opts, error);
  if (!timing)
    return std::nullopt;
  result.timing = std::move(*timing);
  return result;
}

std::optional<Timing> Runner::timeCopy(uint64_t bytes, const RunOptions &opts, std::string &error) {
  const cu::Driver &cu = *cu_;
  DeviceBuffer src, dst;
  src.cu = dst.cu = &cu;
  if (!check(cu.memAlloc(&src.ptr, bytes), "allocating the copy's source", error) ||
      !check(cu.memAlloc(&dst.ptr, bytes), "allocating the copy's destination", error) ||
      !check(cu.memsetD32Async(src.ptr, 0x3c003c00u, bytes / 4, nullptr), "filling", error))
    return std::nullopt;
  auto copy = [&] { return cu.memcpyDtoDAsync(dst.ptr, src.ptr, bytes, nullptr); };
  for (int i = 0; i < opts.warmup; ++i)
    if (!check(copy(), "copying", error))
      return std::nullopt;
  return timeRepeated(copy, "copying", opts, error);
}

std::optional<Timing> Runner::timeRepeated(const std::function<cu::Result()> &enqueue,
                                           std::string_view what, const RunOptions &opts,
                                           std::string &error) {
  const cu::Driver &cu = *cu_;
  DeviceBuffer flush;
  flush.cu = &cu;
  uint64_t flushBytes = static_cast<uint64_t>(std::max<int64_t>(info_.l2Bytes, 1 << 20)) * 2;
  if (opts.flushL2 &&
      !check(cu.memAlloc(&flush.ptr, flushBytes), "allocating the L2 flush buffer", error))
    return std::nullopt;
  Events ev{&cu, {}};
  ev.events.resize(2 * static_cast<size_t>(opts.reps), nullptr);
  for (cu::Event &e : ev.events)
    if (!check(cu.eventCreate(&e, 0), "cuEventCreate", error))
      return std::nullopt;
  // Every repetition is enqueued before any is waited for: the host's launch latency stays out
  // of the window between the two events.
  for (int r = 0; r < opts.reps; ++r) {
    if (opts.flushL2 &&
        !check(cu.memsetD32Async(flush.ptr, static_cast<unsigned>(r), flushBytes / 4, nullptr),
               "flushing the L2 cache", error))
      return std::nullopt;
    if (!check(cu.eventRecord(ev.events[2 * r], nullptr), "cuEventRecord", error) ||
        !check(enqueue(), what, error) ||
        !check(cu.eventRecord(ev.events[2 * r + 1], nullptr), "cuEventRecord", error))
      return std::nullopt;
  }
  if (!check(cu.ctxSynchronize(), what, error))
    return std::nullopt;
  std::vector<double> us;
  for (int r = 0; r < opts.reps; ++r) {
    float ms = 0;
    if (!check(cu.eventElapsedTime(&ms, ev.events[2 * r], ev.events[2 * r + 1]),
               "cuEventElapsedTime", error))
      return std::nullopt;
    us.push_back(static_cast<double>(ms) * 1000.0);
  }
  return summarize(std::move(us));
}

} // namespace tilec::bench
