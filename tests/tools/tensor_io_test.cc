// Tensor files: raw .bin and NumPy .npy, byte for byte, and every refusal.
#include "tools/tensor_io.h"

#include <filesystem>
#include <string>

#include "gtest/gtest.h"

namespace kiln {
namespace {

std::string TempPath(const std::string& name) {
  auto dir = std::filesystem::path(::testing::TempDir()) / "kiln_tensor_io_test";
  std::filesystem::create_directories(dir);
  return (dir / name).string();
}

// An .npy v1 file as NumPy writes it: magic, version, little-endian u16 header length, the
// header dict padded with spaces to a 64-byte boundary and ended by '\n', then the data.
std::string NumpyFile(const std::string& dict, const std::string& data, int major = 1) {
  size_t prefix = major == 1 ? 10 : 12;
  std::string header = dict;
  header.append((64 - (prefix + header.size() + 1) % 64) % 64, ' ');
  header += '\n';
  std::string out = "\x93NUMPY";
  out += static_cast<char>(major);
  out += '\0';
  size_t n = header.size();
  for (size_t i = 0; i < prefix - 8; ++i) out += static_cast<char>((n >> (8 * i)) & 0xff);
  return out + header + data;
}

TEST(TensorIoTest, WritesWhatNumpyWrites) {
  Tensor t(DType::kI32, {3});
  for (int i = 0; i < 3; ++i) t.SetI64(i, i + 1);
  std::string data("\x01\0\0\0\x02\0\0\0\x03\0\0\0", 12);
  EXPECT_EQ(SerializeNpy(t),
            NumpyFile("{'descr': '<i4', 'fortran_order': False, 'shape': (3,), }", data));

  Tensor m(DType::kF32, {2, 3});
  std::string bytes = SerializeNpy(m);
  EXPECT_EQ(bytes.size() % 64, (2 * 3 * 4) % 64);  // data starts on a 64-byte boundary
  EXPECT_NE(bytes.find("'shape': (2, 3), }"), std::string::npos);
  Tensor scalar(DType::kBF16, {});
  EXPECT_NE(SerializeNpy(scalar).find("{'descr': '<u2', 'fortran_order': False, 'shape': (), }"),
            std::string::npos);
}

TEST(TensorIoTest, ReadsV1AndV2) {
  // bf16 bit patterns, little-endian: 0x3f80 = 1, 0x4000 = 2, 0x4040 = 3, 0x4080 = 4.
  const std::string data("\x80\x3f\x00\x40\x40\x40\x80\x40", 8);
  for (int major : {1, 2, 3}) {
    auto t = ParseNpy(NumpyFile("{'descr': '<u2', 'fortran_order': False, 'shape': (2, 2), }", data, major),
                      "x.npy");
    ASSERT_TRUE(t.ok()) << t.status();
    EXPECT_EQ(t->dtype(), DType::kBF16);
    EXPECT_EQ(t->shape(), (Shape{2, 2}));
    EXPECT_EQ(t->GetF64(0), 1.0);
    EXPECT_EQ(t->GetF64(1), 2.0);
    EXPECT_EQ(t->GetF64(2), 3.0);
    EXPECT_EQ(t->GetF64(3), 4.0);
  }
}

TEST(TensorIoTest, EveryDTypeRoundTrips) {
  for (DType dtype : kAllDTypes) {
    Tensor t(dtype, {2, 5});
    for (int i = 0; i < 10; ++i) t.SetF64(i, dtype == DType::kBool ? i % 2 : i - 3.25);
    auto back = ParseNpy(SerializeNpy(t), "t.npy");
    ASSERT_TRUE(back.ok()) << back.status();
    EXPECT_TRUE(back->BitwiseEqual(t)) << DTypeName(dtype);

    std::string path = TempPath(std::string("t_") + DTypeName(dtype) + ".bin");
    ASSERT_TRUE(WriteRawTensor(path, t).ok());
    auto raw = ReadTensorFile(path, dtype, {2, 5});
    ASSERT_TRUE(raw.ok()) << raw.status();
    EXPECT_TRUE(raw->BitwiseEqual(t));
  }
}

TEST(TensorIoTest, RawSizeMustMatchExactly) {
  std::string path = TempPath("short.bin");
  ASSERT_TRUE(WriteFileBytes(path, std::string(10, '\0')).ok());
  auto t = ReadTensorFile(path, DType::kF16, {2, 3});
  ASSERT_FALSE(t.ok());
  EXPECT_NE(t.status().message().find("holds 10 bytes but f16[2,3] needs 12"), std::string::npos)
      << t.status();
  EXPECT_FALSE(ReadTensorFile(TempPath("missing.bin"), DType::kF32, {1}).ok());
}

TEST(TensorIoTest, NpyMustMatchTheInput) {
  std::string path = TempPath("x.npy");
  ASSERT_TRUE(WriteNpyTensor(path, Tensor(DType::kF32, {4})).ok());
  auto t = ReadTensorFile(path, DType::kBF16, {4});
  ASSERT_FALSE(t.ok());
  EXPECT_NE(t.status().message().find("holds f32[4] ('<f4') but the graph input is bf16[4] ('<u2'"),
            std::string::npos)
      << t.status();
  EXPECT_FALSE(ReadTensorFile(path, DType::kF32, {2, 2}).ok());
  EXPECT_TRUE(ReadTensorFile(path, DType::kF32, {4}).ok());
}

TEST(TensorIoTest, RefusesWhatItCannotRead) {
  auto expect_error = [](const std::string& bytes, const std::string& fragment) {
    auto t = ParseNpy(bytes, "bad.npy");
    ASSERT_FALSE(t.ok()) << fragment;
    EXPECT_NE(t.status().message().find(fragment), std::string::npos) << t.status();
  };
  expect_error("PK\x03\x04 not numpy", "bad magic");
  expect_error(NumpyFile("{'descr': '>f4', 'fortran_order': False, 'shape': (1,), }", "abcd"),
               "unsupported .npy dtype");
  expect_error(NumpyFile("{'descr': '<f8', 'fortran_order': False, 'shape': (1,), }", "abcdefgh"),
               "unsupported .npy dtype");
  expect_error(NumpyFile("{'descr': '<f4', 'fortran_order': True, 'shape': (2, 2), }",
                         std::string(16, '\0')),
               "Fortran order");
  expect_error(NumpyFile("{'descr': '<f4', 'fortran_order': False, 'shape': (2, 2), }",
                         std::string(15, '\0')),
               "data is 15 bytes but f32[2,2] needs 16");
  expect_error(NumpyFile("{'descr': '|b1', 'fortran_order': False, 'shape': (2,), }",
                         std::string("\x01\x02", 2)),
               "expected 0 or 1");
  expect_error(NumpyFile("{'descr': '<f4', 'shape': (1,), }", "abcd"), "lacks");
}

TEST(TensorIoTest, AForgedShapeIsAnErrorBeforeAnyAllocation) {
  // Found by tests/fuzz (regressions/tensor_file): the tensor was allocated from the header's
  // shape before the data size was compared, so a few bytes could ask for terabytes
  // (std::bad_alloc) or overflow the element count.
  auto npy = [](const std::string& shape) {
    return ParseNpy(NumpyFile("{'descr': '<f4', 'fortran_order': False, 'shape': " + shape + ", }", "abcd"),
                    "big.npy");
  };
  auto t = npy("(1099511627776,)");
  ASSERT_FALSE(t.ok());
  EXPECT_EQ(t.status().message(), "big.npy: .npy data is 4 bytes but f32[1099511627776] needs 4398046511104");
  t = npy("(4294967296, 4294967296, 4294967296)");
  ASSERT_FALSE(t.ok());
  EXPECT_NE(t.status().message().find("big.npy: shape [4294967296,4294967296,4294967296] has more than 2^48"),
            std::string::npos) << t.status();
  std::string path = TempPath("small.bin");
  ASSERT_TRUE(WriteFileBytes(path, "abcd").ok());
  auto raw = ReadTensorFile(path, DType::kF32, {int64_t{1} << 40});
  ASSERT_FALSE(raw.ok());
  EXPECT_NE(raw.status().message().find("holds 4 bytes but f32[1099511627776] needs 4398046511104"),
            std::string::npos) << raw.status();
}

}  // namespace
}  // namespace kiln
