#include "ir/base/status.h"

#include <cstdio>
#include <cstdlib>

namespace kiln::internal {

CheckFailure::CheckFailure(const char* file, int line, const char* condition) {
  stream_ << file << ":" << line << ": KILN_CHECK failed: " << condition << ": ";
}

CheckFailure::~CheckFailure() {
  std::string text = stream_.str();
  std::fprintf(stderr, "%s\n(this is a bug in kiln, not in your input; please report it)\n",
               text.c_str());
  std::fflush(stderr);
  std::abort();
}

}  // namespace kiln::internal
