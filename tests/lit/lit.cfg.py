import os
import lit.formats

config.name = "tilec"
config.test_format = lit.formats.ShTest(execute_external=False)
config.suffixes = [".tile", ".test", ".thir"]
config.excludes = ["Inputs"]
config.test_source_root = os.path.dirname(__file__)
config.test_exec_root = os.path.join(os.path.dirname(config.tilec_bin), "..", "tests", "lit-out")

config.substitutions.append(("%tilec", config.tilec_bin))
config.substitutions.append(("%srcroot", config.source_root))
config.substitutions.append(("%conformance", os.path.join(config.source_root, "..", "shared", "conformance")))
config.substitutions.append(("%samples", os.path.join(config.source_root, "samples")))
config.substitutions.append(("%stdlib", os.path.join(config.source_root, "stdlib")))
config.substitutions.append(("%runtime", os.path.join(config.source_root, "runtime", "include")))
config.substitutions.append(("%cuda_include", config.cuda_include))
config.substitutions.append(("%cxx", config.cxx))
config.substitutions.append(("%fake_libcuda", config.fake_libcuda))
config.substitutions.append(("%fakecuda", os.path.join(config.source_root, "tests", "fakecuda")))
config.environment["PATH"] = os.pathsep.join([config.llvm_bin, config.environment.get("PATH", "")])
if config.have_cuda_h:
    config.available_features.add("cuda-h")
if os.path.isfile("/usr/include/hip/hip_runtime_api.h"):
    config.available_features.add("hip-h")
if config.have_ptxas:
    config.available_features.add("ptxas")
if os.path.isdir(os.path.join(config.source_root, "..", "shared", "conformance")):
    config.available_features.add("conformance")
import shutil
if shutil.which("chromium"):
    config.available_features.add("chromium")
import sys
config.substitutions.append(("%python", sys.executable))
