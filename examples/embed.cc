// A host program that embeds kiln (the C++ API's intended use): compile a graph once, then
// run it on buffers and a stream the program owns. Given a FILE.kiln artifact instead, it
// loads it with the runtime alone (no NVRTC, no passes).
//
//   kiln_embed examples/layernorm.json       # compile now, run 10 times, print the outputs
//   kiln_embed layernorm.kiln                # run an artifact written by `kiln compile`
#include <cstdio>
#include <random>
#include <string>
#include <vector>

#include "api/compiler.h"
#include "ir/interpreter.h"
#include "api/runtime.h"

namespace {

// Uniform in (-1, 1) for floats; 0..3 for integers (e.g. class indices); alternating bools.
kiln::Tensor RandomTensor(kiln::DType dtype, const kiln::Shape& shape, uint64_t seed) {
  kiln::Tensor t(dtype, shape);
  std::mt19937_64 rng(seed);
  std::uniform_real_distribution<double> uniform(-1.0, 1.0);
  for (int64_t i = 0; i < t.num_elements(); ++i) {
    t.SetF64(i, kiln::IsFloat(dtype) ? uniform(rng) : static_cast<double>(rng() % (dtype == kiln::DType::kBool ? 2 : 4)));
  }
  return t;
}

int Fail(const absl::Status& status) {
  std::fprintf(stderr, "kiln_embed: %s\n", std::string(status.message()).c_str());
  return 1;
}

}  // namespace

int main(int argc, char** argv) {
  using namespace kiln;
  if (argc != 2) {
    std::fprintf(stderr, "usage: kiln_embed GRAPH.json|GRAPH.onnx|FILE.kiln\n");
    return 2;
  }
  const std::string path = argv[1];
  if (!HaveGpu()) return Fail(absl::FailedPreconditionError("no GPU (or no driver) on this machine"));

  // 1. A Program: loaded from an artifact, or compiled now for this GPU.
  Program program;
  if (LooksLikeArtifact(path)) {
    absl::StatusOr<Program> loaded = LoadArtifact(path);
    if (!loaded.ok()) return Fail(loaded.status());
    program = std::move(*loaded);
  } else {
    absl::StatusOr<std::unique_ptr<Graph>> graph = LoadGraph(path);
    if (!graph.ok()) return Fail(graph.status());
    CompileOptions options;
    absl::StatusOr<std::string> arch = CurrentDeviceArch();
    if (!arch.ok()) return Fail(arch.status());
    options.arch = *arch;
    absl::StatusOr<Compiled> compiled = Compile(std::move(*graph), options);
    if (!compiled.ok()) return Fail(compiled.status());
    program = std::move(compiled->lowered.program);
  }

  // 2. Loaded onto the GPU once.
  absl::StatusOr<std::unique_ptr<Executable>> exe = Executable::Load(std::move(program));
  if (!exe.ok()) return Fail(exe.status());
  const Program& p = (*exe)->program();

  // 3. The host program's own buffers and stream.
  const CudaDriver* cu = *LoadCudaDriver();
  CUstream stream;
  if (cu->cuStreamCreate(&stream, CU_STREAM_NON_BLOCKING) != CUDA_SUCCESS) {
    return Fail(absl::InternalError("cuStreamCreate failed"));
  }
  std::vector<DeviceBuffer> memory;
  std::vector<DeviceTensor> inputs, outputs;
  uint64_t seed = 1;
  for (int id : p.inputs) {
    const Buffer& b = p.buffers[id];
    Tensor host = RandomTensor(b.dtype, b.shape, seed++);
    absl::StatusOr<DeviceBuffer> d = DeviceBuffer::Allocate(b.bytes);
    if (!d.ok()) return Fail(d.status());
    cu->cuMemcpyHtoD(d->get(), host.data(), host.num_bytes());
    inputs.push_back({d->get(), b.dtype, b.shape});
    memory.push_back(std::move(*d));
  }
  for (int id : p.outputs) {
    const Buffer& b = p.buffers[id];
    absl::StatusOr<DeviceBuffer> d = DeviceBuffer::Allocate(b.bytes);
    if (!d.ok()) return Fail(d.status());
    outputs.push_back({d->get(), b.dtype, b.shape});
    memory.push_back(std::move(*d));
  }

  // 4. Run as often as needed; Run() only validates and launches.
  for (int i = 0; i < 10; ++i) {
    if (absl::Status s = (*exe)->Run(inputs, outputs, stream); !s.ok()) return Fail(s);
  }
  cu->cuStreamSynchronize(stream);
  for (size_t i = 0; i < outputs.size(); ++i) {
    Tensor host(outputs[i].dtype, outputs[i].shape);
    cu->cuMemcpyDtoH(host.data(), outputs[i].data, host.num_bytes());
    double sum = 0;
    for (int64_t e = 0; e < host.num_elements(); ++e) sum += host.GetF64(e);
    std::printf("%s %s%s: first %g, sum %.6g\n", p.output_names[i].c_str(), DTypeName(host.dtype()),
                ShapeToString(host.shape()).c_str(), host.num_elements() ? host.GetF64(0) : 0.0, sum);
  }
  cu->cuStreamDestroy(stream);
  return 0;
}
