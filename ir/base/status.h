// Error handling for all of kiln, in two channels that never mix (DESIGN.md §7):
//  * absl::Status / absl::StatusOr for anything a user can cause (bad input, unsupported op,
//    NVRTC failure). Propagate with KILN_RETURN_IF_ERROR and KILN_ASSIGN_OR_RETURN.
//  * KILN_CHECK(cond) << "message" for compiler bugs: aborts with file:line; the message is
//    built only when the check fails.
// Debian's Abseil (20220623) has neither absl/log nor status_macros.h, so they live here, once.
#ifndef KILN_IR_BASE_STATUS_H_
#define KILN_IR_BASE_STATUS_H_

#include <sstream>
#include <string>
#include <utility>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "absl/strings/str_cat.h"

#define KILN_STATUS_CONCAT_INNER_(a, b) a##b
#define KILN_STATUS_CONCAT_(a, b) KILN_STATUS_CONCAT_INNER_(a, b)

#define KILN_RETURN_IF_ERROR(expr)                           \
  do {                                                       \
    ::absl::Status kiln_status_ = (expr);                    \
    if (!kiln_status_.ok()) return kiln_status_;             \
  } while (0)

#define KILN_ASSIGN_OR_RETURN(lhs, expr) \
  KILN_ASSIGN_OR_RETURN_IMPL_(KILN_STATUS_CONCAT_(kiln_statusor_, __LINE__), lhs, expr)

#define KILN_ASSIGN_OR_RETURN_IMPL_(statusor, lhs, expr) \
  auto statusor = (expr);                                \
  if (!statusor.ok()) return statusor.status();          \
  lhs = std::move(statusor).value()

namespace kiln::internal {

// Collects the streamed message of a failed KILN_CHECK and aborts in its destructor.
class CheckFailure {
 public:
  CheckFailure(const char* file, int line, const char* condition);
  [[noreturn]] ~CheckFailure();
  template <typename T>
  CheckFailure& operator<<(const T& value) {
    stream_ << value;
    return *this;
  }

 private:
  std::ostringstream stream_;
};

// Lets `KILN_CHECK(c) << msg` be an expression of type void in both branches of ?:.
struct Voidify {
  void operator&(const CheckFailure&) {}
};

}  // namespace kiln::internal

// Aborts with file:line and "compiler bug" when `cond` is false. Never use it for user input.
#define KILN_CHECK(cond)                  \
  (cond) ? (void)0                        \
         : ::kiln::internal::Voidify() &  \
               ::kiln::internal::CheckFailure(__FILE__, __LINE__, #cond)

#define KILN_CHECK_OK(expr)                                   \
  do {                                                        \
    ::absl::Status kiln_check_status_ = (expr);               \
    KILN_CHECK(kiln_check_status_.ok()) << kiln_check_status_; \
  } while (0)

#endif  // KILN_IR_BASE_STATUS_H_
