// CU_ASSERT_OK(call): a gtest assertion that a CUDA driver call (through the CudaDriver table,
// runtime/cuda_driver.h) succeeded, its KILN_CU_RETURN_IF_ERROR status in the failure message.
// For the GPU tests that drive the driver API directly.
#ifndef KILN_TESTS_TESTING_CU_ASSERT_H_
#define KILN_TESTS_TESTING_CU_ASSERT_H_

#include "absl/status/status.h"
#include "gtest/gtest.h"
#include "runtime/cuda_driver.h"

#define CU_ASSERT_OK(call)                    \
  do {                                        \
    absl::Status s_ = [&]() -> absl::Status { \
      KILN_CU_RETURN_IF_ERROR(call);          \
      return absl::OkStatus();                \
    }();                                      \
    ASSERT_TRUE(s_.ok()) << s_;               \
  } while (0)

#endif  // KILN_TESTS_TESTING_CU_ASSERT_H_
