// The runtime half of kiln's C++ API (DESIGN.md §1-2: tools, examples and bindings use api/
// only). Running needs no compiler: a Program comes from Compile() (api/compiler.h) or from an
// artifact file, and runs through an Executable:
//
//   KILN_ASSIGN_OR_RETURN(Program program, LoadArtifact("model.kiln"));   // or Compile(...)
//   KILN_ASSIGN_OR_RETURN(auto exe, Executable::Load(std::move(program)));
//   KILN_RETURN_IF_ERROR(exe->Run(inputs, outputs, stream));              // DeviceTensor spans
//
// Also here: HaveGpu / CurrentDeviceArch / EnsureContext, DeviceBuffer, the device query, and
// the cuBLASLt runner (kiln bench measures the matmul rate with it).
#ifndef KILN_API_RUNTIME_H_
#define KILN_API_RUNTIME_H_

#include "runtime/artifact.h"
#include "runtime/cuda_driver.h"
#include "runtime/device_info.h"
#include "runtime/executable.h"
#include "runtime/matmul.h"
#include "runtime/program.h"

#endif  // KILN_API_RUNTIME_H_
