// A fake of the HIP module API that generated HIP headers call, recording what they do.
#include "fake_hip.h"

#include <cstring>
#include <map>
#include <string>
#include <vector>

namespace {

struct Module {
  const void *image;
  int device;
  bool live = true;
};
struct Function {
  Module *module;
  std::string name;
};

thread_local int current = 0;
std::map<int, std::string> arches;
std::vector<Module *> modules;
int loads = 0;
int recorded = 0;
long launches = 0;
fake_hip_launch last{};

} // namespace

void fake_hip_set_arch(int device, const char *arch) { arches[device] = arch; }
int fake_hip_total_loads() { return loads; }
int fake_hip_live_modules() {
  int n = 0;
  for (Module *m : modules)
    n += m->live;
  return n;
}
fake_hip_launch fake_hip_last_launch() { return last; }
void fake_hip_record_args(int count) { recorded = count < 8 ? count : 8; }
long fake_hip_launches() { return launches; }

hipError_t hipSetDevice(int device) {
  if (device < 0 || device >= 8)
    return hipErrorInvalidDevice;
  current = device;
  return hipSuccess;
}

hipError_t hipGetDevice(int *device) {
  *device = current;
  return hipSuccess;
}

hipError_t hipGetDeviceProperties(hipDeviceProp_t *props, int device) {
  std::memset(props, 0, sizeof *props);
  auto it = arches.find(device);
  std::string arch = it == arches.end() ? "gfx942:sramecc+:xnack-" : it->second;
  std::strncpy(props->gcnArchName, arch.c_str(), sizeof props->gcnArchName - 1);
  return hipSuccess;
}

hipError_t hipModuleLoadData(hipModule_t *module, const void *image) {
  // A code object is an ELF file.
  if (std::memcmp(image,
                  "\x7f"
                  "ELF",
                  4) != 0)
    return hipErrorInvalidImage;
  auto *m = new Module{image, current};
  modules.push_back(m);
  ++loads;
  *module = reinterpret_cast<hipModule_t>(m);
  return hipSuccess;
}

hipError_t hipModuleGetFunction(hipFunction_t *function, hipModule_t module, const char *name) {
  auto *f = new Function{reinterpret_cast<Module *>(module), name};
  *function = reinterpret_cast<hipFunction_t>(f);
  return hipSuccess;
}

hipError_t hipModuleUnload(hipModule_t module) {
  reinterpret_cast<Module *>(module)->live = false;
  return hipSuccess;
}

hipError_t hipModuleLaunchKernel(hipFunction_t f, unsigned gx, unsigned gy, unsigned gz,
                                 unsigned bx, unsigned by, unsigned bz, unsigned shared,
                                 hipStream_t, void **args, void **) {
  auto *fn = reinterpret_cast<Function *>(f);
  if (!fn->module->live || fn->module->device != current)
    return hipErrorInvalidHandle;
  ++launches;
  last = {fn->name.c_str(), fn->module->image, current, {gx, gy, gz}, {bx, by, bz}, shared, {}};
  for (int i = 0; i < recorded; ++i)
    std::memcpy(&last.args[i], args[i], sizeof last.args[i]);
  return hipSuccess;
}
