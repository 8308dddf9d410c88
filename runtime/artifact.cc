#include "runtime/artifact.h"

#include <cstdio>
#include <cstring>
#include <fstream>
#include <utility>

#include "absl/strings/str_cat.h"
#include "ir/base/hash.h"
#include "ir/base/status.h"
#include "runtime/binary_io.h"
#include "runtime/file_util.h"

namespace kiln {
namespace {

constexpr char kMagic[8] = {'K', 'I', 'L', 'N', 'A', 'R', 'T', '\n'};

// The artifact's one field that is not a number, a string or a list of them.
DType ReadDtype(ByteReader& r, const char* field) {
  auto t = ParseDType(r.Str(field));
  if (!t.ok()) r.Fail(field);
  return t.ok() ? *t : DType::kF32;
}

void WriteSpec(ByteWriter& w, const MatmulSpec& s) {
  w.Str(DTypeName(s.dtype));
  for (int64_t v : {s.m, s.n, s.k, s.batch, s.stride_a, s.stride_b, s.stride_d}) w.I64(v);
  w.U64((s.trans_a ? 1 : 0) | (s.trans_b ? 2 : 0) | (s.has_bias ? 4 : 0) | (s.has_residual ? 8 : 0) |
          (s.gelu ? 16 : 0) | (s.relu ? 32 : 0));
  w.I64(s.alignment);
}

MatmulSpec ReadSpec(ByteReader& r) {
  MatmulSpec s;
  s.dtype = ReadDtype(r, "matmul dtype");
  for (int64_t* v : {&s.m, &s.n, &s.k, &s.batch, &s.stride_a, &s.stride_b, &s.stride_d}) *v = r.I64("matmul sizes");
  uint64_t flags = r.U64("matmul flags");
  s.trans_a = flags & 1;
  s.trans_b = flags & 2;
  s.has_bias = flags & 4;
  s.has_residual = flags & 8;
  s.gelu = flags & 16;
  s.relu = flags & 32;
  s.alignment = r.Int("matmul alignment");
  return s;
}

}  // namespace

std::string SerializeProgram(const Program& p) {
  // The header (magic, version, payload length) goes in first and the length is patched in at
  // the end, so a payload of a gigabyte of weights is not copied once more to prepend it.
  ByteWriter w;
  w.Raw(std::string_view(kMagic, sizeof(kMagic)));
  const uint32_t version = kArtifactVersion;
  w.Raw(std::string_view(reinterpret_cast<const char*>(&version), 4));
  const size_t length_at = w.bytes().size();
  w.Raw(std::string_view("\0\0\0\0\0\0\0\0", 8));
  const size_t payload_at = w.bytes().size();
  w.Str(p.graph_name);
  w.Str(p.graph_hash);
  w.Str(p.arch);
  w.Str(p.device);
  w.U64(p.buffers.size());
  for (const Buffer& b : p.buffers) {
    w.Str(b.name);
    w.Str(DTypeName(b.dtype));
    w.I64s(b.shape);
    w.I64(b.bytes);
    w.I64(static_cast<int64_t>(b.kind));
    w.I64(b.index);
    w.I64(b.offset);
    w.I64(b.alias_of);
  }
  w.Ints(p.inputs);
  w.Ints(p.outputs);
  w.U64(p.output_names.size());
  for (const std::string& n : p.output_names) w.Str(n);
  w.U64(p.modules.size());
  for (const Module& m : p.modules) {
    w.Str(m.name);
    w.Str(m.cubin);
    w.I64(m.registers);
    w.I64(m.spill_bytes);
    w.F64(m.compile_ms);
    w.Str(m.params);
  }
  w.U64(p.steps.size());
  for (const Step& s : p.steps) {
    w.I64(static_cast<int64_t>(s.kind));
    w.I64(s.region);
    w.Str(s.label);
    w.F64(s.predicted_us);
    w.I64(s.bytes);
    switch (s.kind) {
      case Step::Kind::kKernel:
        w.Str(s.kernel.name);
        w.I64(s.kernel.module);
        w.Ints(s.kernel.args);
        w.I64(s.kernel.scratch);
        w.U64(s.kernel.in_place.size());
        for (const auto& [in, out] : s.kernel.in_place) {
          w.I64(in);
          w.I64(out);
        }
        w.I64(s.kernel.count);
        w.I64(s.kernel.launch.grid);
        w.I64(s.kernel.launch.grid_y);
        w.I64(s.kernel.launch.grid_z);
        w.I64(s.kernel.launch.block);
        w.I64(s.kernel.launch.dynamic_smem_bytes);
        w.I64(s.kernel.launch.cluster_x);
        w.I64(s.kernel.launch.cooperative ? 1 : 0);
        w.I64(s.kernel.launch.grid_multiple);
        w.U64(s.kernel.launch.tensor_maps.size());
        for (const TensorMapSpec& m : s.kernel.launch.tensor_maps) {
          w.I64(m.arg);
          w.I64(m.offset);
          w.Str(DTypeName(m.dtype));
          w.I64(m.rank);
          for (int d = 0; d < TensorMapSpec::kMaxRank; ++d) {
            w.I64(m.dims[d]);
            w.I64(m.strides[d]);
            w.I64(m.box[d]);
          }
          w.I64(m.swizzle_bytes);
        }
        break;
      case Step::Kind::kMatmul:
        WriteSpec(w, s.matmul.spec);
        w.U64(s.matmul.calls.size());
        for (const MatmulStep::Call& c : s.matmul.calls) {
          w.I64(c.a);
          w.I64(c.b);
          w.I64(c.d);
        }
        w.Ints({s.matmul.a, s.matmul.b, s.matmul.d, s.matmul.bias, s.matmul.residual});
        break;
      case Step::Kind::kCopy:
        w.Ints({s.copy.src, s.copy.dst});
        break;
    }
  }
  w.Str(p.constants);
  w.I64(p.arena_bytes);
  w.I64(p.persistent_bytes);
  w.Str(p.ledger_json);
  w.Str(p.lowering_ledger);
  w.Str(p.source_graph);

  std::string& out = w.bytes();
  const uint64_t length = out.size() - payload_at;
  std::memcpy(out.data() + length_at, &length, 8);
  const uint64_t checksum = Fnv1a64(std::string_view(out).substr(payload_at));
  out.append(reinterpret_cast<const char*>(&checksum), 8);
  return std::move(out);
}

absl::StatusOr<Program> DeserializeProgram(const std::string& bytes, const std::string& where) {
  auto bad = [&](const std::string& why) { return absl::DataLossError(absl::StrCat(where, ": ", why)); };
  if (bytes.size() < 12 || std::memcmp(bytes.data(), kMagic, sizeof(kMagic)) != 0) {
    return bad("not a kiln artifact (no KILNART magic; `kiln compile` writes them)");
  }
  uint32_t version;
  std::memcpy(&version, bytes.data() + 8, 4);
  if (version != kArtifactVersion) {
    return bad(absl::StrCat("artifact format version ", version, "; this kiln reads version ", kArtifactVersion,
                            ": recompile the graph"));
  }
  uint64_t length = 0;
  if (bytes.size() < 28) return bad("truncated header");
  std::memcpy(&length, bytes.data() + 12, 8);
  if (length != bytes.size() - 28) {
    return bad(absl::StrCat("truncated or padded: ", bytes.size(), " bytes, the header promises a payload of ",
                            length));
  }
  std::string payload = bytes.substr(20, length);
  uint64_t checksum;
  std::memcpy(&checksum, bytes.data() + 20 + length, 8);
  if (checksum != Fnv1a64(payload)) return bad("checksum mismatch: the file is corrupt");

  ByteReader r(payload);
  Program p;
  p.graph_name = r.Str("graph name");
  p.graph_hash = r.Str("graph hash");
  p.arch = r.Str("arch");
  p.device = r.Str("device");
  // Elements are appended as they are read, so a forged count costs no more memory than the
  // bytes that are really there.
  for (uint64_t i = 0, count = r.Count("buffers"); i < count && r.ok(); ++i) {
    Buffer& b = p.buffers.emplace_back();
    b.name = r.Str("buffer name");
    b.dtype = ReadDtype(r, "buffer dtype");
    b.shape = r.I64s("buffer shape");
    b.bytes = r.I64("buffer bytes");
    int64_t kind = r.I64("buffer kind");
    if (kind < 0 || kind > static_cast<int64_t>(BufferKind::kAlias)) return bad("unknown buffer kind");
    b.kind = static_cast<BufferKind>(kind);
    b.index = r.Int("buffer index");
    b.offset = r.I64("buffer offset");
    b.alias_of = r.Int("buffer alias");
  }
  p.inputs = r.Ints("inputs");
  p.outputs = r.Ints("outputs");
  for (uint64_t i = 0, count = r.Count("output names"); i < count && r.ok(); ++i) {
    p.output_names.push_back(r.Str("output name"));
  }
  for (uint64_t i = 0, count = r.Count("modules"); i < count && r.ok(); ++i) {
    Module& m = p.modules.emplace_back();
    m.name = r.Str("module name");
    m.cubin = r.Str("cubin");
    m.registers = r.Int("registers");
    m.spill_bytes = r.I64("spills");
    m.compile_ms = r.F64("compile ms");
    m.params = r.Str("params");
  }
  for (uint64_t i = 0, count = r.Count("steps"); i < count && r.ok(); ++i) {
    Step& s = p.steps.emplace_back();
    int64_t kind = r.I64("step kind");
    if (kind < 0 || kind > static_cast<int64_t>(Step::Kind::kCopy)) return bad("unknown step kind");
    s.kind = static_cast<Step::Kind>(kind);
    s.region = r.Int("step region");
    s.label = r.Str("step label");
    s.predicted_us = r.F64("step prediction");
    s.bytes = r.I64("step bytes");
    switch (s.kind) {
      case Step::Kind::kKernel:
        s.kernel.name = r.Str("kernel name");
        s.kernel.module = r.Int("kernel module");
        s.kernel.args = r.Ints("kernel args");
        s.kernel.scratch = r.Int("kernel scratch");
        for (uint64_t j = 0, count = r.Count("kernel in-place pairs"); j < count && r.ok(); ++j) {
          const int in = r.Int("kernel in-place input");
          s.kernel.in_place.push_back({in, r.Int("kernel in-place output")});
        }
        s.kernel.count = r.I64("kernel count");
        s.kernel.launch.grid = r.I64("kernel grid");
        s.kernel.launch.grid_y = r.I64("kernel grid y");
        s.kernel.launch.grid_z = r.I64("kernel grid z");
        s.kernel.launch.block = r.Int("kernel block");
        s.kernel.launch.dynamic_smem_bytes = r.Int("kernel smem");
        s.kernel.launch.cluster_x = r.Int("kernel cluster");
        s.kernel.launch.cooperative = r.I64("kernel cooperative") != 0;
        s.kernel.launch.grid_multiple = r.I64("kernel grid multiple");
        for (uint64_t j = 0, count = r.Count("kernel tensor maps"); j < count && r.ok(); ++j) {
          TensorMapSpec& m = s.kernel.launch.tensor_maps.emplace_back();
          m.arg = r.Int("tensor map arg");
          m.offset = r.I64("tensor map offset");
          m.dtype = ReadDtype(r, "tensor map dtype");
          m.rank = r.Int("tensor map rank");
          for (int d = 0; d < TensorMapSpec::kMaxRank; ++d) {
            m.dims[d] = r.I64("tensor map dim");
            m.strides[d] = r.I64("tensor map stride");
            m.box[d] = r.Int("tensor map box");
          }
          m.swizzle_bytes = r.Int("tensor map swizzle");
        }
        break;
      case Step::Kind::kMatmul: {
        s.matmul.spec = ReadSpec(r);
        s.matmul.calls.clear();
        for (uint64_t j = 0, count = r.Count("matmul calls"); j < count && r.ok(); ++j) {
          MatmulStep::Call& c = s.matmul.calls.emplace_back();
          c.a = r.I64("matmul call");
          c.b = r.I64("matmul call");
          c.d = r.I64("matmul call");
        }
        std::vector<int> ids = r.Ints("matmul buffers");
        if (ids.size() != 5) return bad("matmul step without its five buffer ids");
        s.matmul.a = ids[0], s.matmul.b = ids[1], s.matmul.d = ids[2], s.matmul.bias = ids[3], s.matmul.residual = ids[4];
        break;
      }
      case Step::Kind::kCopy: {
        std::vector<int> ids = r.Ints("copy buffers");
        if (ids.size() != 2) return bad("copy step without its two buffer ids");
        s.copy.src = ids[0], s.copy.dst = ids[1];
        break;
      }
    }
    if (!r.ok()) break;
  }
  p.constants = r.Str("constants");
  p.arena_bytes = r.I64("arena bytes");
  p.persistent_bytes = r.I64("persistent bytes");
  p.ledger_json = r.Str("ledger");
  p.lowering_ledger = r.Str("lowering ledger");
  p.source_graph = r.Str("source graph");
  if (!r.ok()) return bad(absl::StrCat("malformed field '", r.failed(), "'"));
  if (!r.at_end()) return bad("trailing bytes after the last field");
  absl::Status valid = p.Validate();
  if (!valid.ok()) return bad(std::string(valid.message()));
  return p;
}

absl::Status SaveArtifact(const Program& program, const std::string& path) {
  return WriteFileAtomically(path, SerializeProgram(program));
}

absl::StatusOr<Program> LoadArtifact(const std::string& path) {
  absl::StatusOr<std::string> bytes = ReadWholeFile(path);
  if (!bytes.ok()) return bytes.status();
  return DeserializeProgram(*bytes, path);
}

bool LooksLikeArtifact(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  char head[sizeof(kMagic)] = {};
  in.read(head, sizeof(head));
  return in.gcount() == sizeof(head) && std::memcmp(head, kMagic, sizeof(kMagic)) == 0;
}

}  // namespace kiln
