// Little-endian byte records for kiln's two on-disk formats: the `.kiln` artifact
// (runtime/artifact.cc) and the CUBIN cache entry (runtime/jit/kernel_cache.cc). Both write
// fixed-width integers, doubles by their bits and length-prefixed strings; both read them back
// with every read bounds-checked and the first failure remembered by field name, so a
// truncated or corrupt file gives "malformed field 'buffer shape'" instead of a crash.
#ifndef KILN_RUNTIME_BINARY_IO_H_
#define KILN_RUNTIME_BINARY_IO_H_

#include <cstdint>
#include <cstring>
#include <string>
#include <string_view>
#include <vector>

namespace kiln {

// The value of `width` little-endian bytes at `bytes[pos]`; the caller checks the bounds.
inline uint64_t LoadLittleEndian(std::string_view bytes, size_t pos, int width) {
  uint64_t v = 0;
  for (int i = 0; i < width; ++i) v |= uint64_t{static_cast<unsigned char>(bytes[pos + i])} << (8 * i);
  return v;
}

class ByteWriter {
 public:
  void U32(uint32_t v) { Put(v, 4); }
  void U64(uint64_t v) { Put(v, 8); }
  void I64(int64_t v) { U64(static_cast<uint64_t>(v)); }
  void F64(double v) {
    uint64_t bits;
    std::memcpy(&bits, &v, 8);
    U64(bits);
  }
  void Str(std::string_view s) {
    U64(s.size());
    out_.append(s.data(), s.size());
  }
  void Raw(std::string_view s) { out_.append(s.data(), s.size()); }
  void Ints(const std::vector<int>& v) {
    U64(v.size());
    for (int x : v) I64(x);
  }
  void I64s(const std::vector<int64_t>& v) {
    U64(v.size());
    for (int64_t x : v) I64(x);
  }
  std::string& bytes() { return out_; }

 private:
  void Put(uint64_t v, int width) {
    for (int i = 0; i < width; ++i) out_.push_back(static_cast<char>((v >> (8 * i)) & 0xff));
  }
  std::string out_;
};

// Reads what ByteWriter wrote. After a failed read every later read returns zero or empty,
// and failed() names the first field that did not fit.
class ByteReader {
 public:
  explicit ByteReader(std::string_view in) : in_(in) {}
  uint64_t U64(const char* field) {
    if (!ok() || in_.size() - pos_ < 8) return Fail(field), 0;
    uint64_t v = LoadLittleEndian(in_, pos_, 8);
    pos_ += 8;
    return v;
  }
  int64_t I64(const char* field) { return static_cast<int64_t>(U64(field)); }
  // An int in [-1, INT32_MAX] (-1 is kiln's "none" buffer id).
  int Int(const char* field) {
    int64_t v = I64(field);
    if (v < -1 || v > INT32_MAX) Fail(field);
    return ok() ? static_cast<int>(v) : 0;
  }
  double F64(const char* field) {
    uint64_t bits = U64(field);
    double v;
    std::memcpy(&v, &bits, 8);
    return v;
  }
  std::string Str(const char* field) {
    uint64_t n = U64(field);
    if (!ok() || n > in_.size() - pos_) return Fail(field), std::string();
    std::string s(in_.substr(pos_, n));
    pos_ += n;
    return s;
  }
  // An element count where each element takes at least 8 bytes, so a corrupt count cannot
  // make the caller reserve more than the input could hold.
  uint64_t Count(const char* field) {
    uint64_t n = U64(field);
    if (ok() && n > (in_.size() - pos_) / 8 + 1) Fail(field);
    return ok() ? n : 0;
  }
  std::vector<int> Ints(const char* field) {
    std::vector<int> v(Count(field));
    for (int& x : v) x = Int(field);
    return v;
  }
  std::vector<int64_t> I64s(const char* field) {
    std::vector<int64_t> v(Count(field));
    for (int64_t& x : v) x = I64(field);
    return v;
  }
  bool ok() const { return failed_.empty(); }
  bool at_end() const { return pos_ == in_.size(); }
  const std::string& failed() const { return failed_; }
  // For a caller's own check on a value that was read whole but is not valid.
  void Fail(const char* field) {
    if (failed_.empty()) failed_ = field;
  }

 private:
  std::string_view in_;
  size_t pos_ = 0;
  std::string failed_;
};

}  // namespace kiln

#endif  // KILN_RUNTIME_BINARY_IO_H_
