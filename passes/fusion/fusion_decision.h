// FusionDecision: whether two regions may become one, as a value with a reason
// (never a bare bool), so that every refusal can be shown in the ledger and `kiln dump`.
#ifndef KILN_PASSES_FUSION_FUSION_DECISION_H_
#define KILN_PASSES_FUSION_FUSION_DECISION_H_

#include <string>

namespace kiln {

class FusionDecision {
 public:
  static FusionDecision Allow(std::string rule, std::string reason = "") {
    return FusionDecision(true, std::move(rule), std::move(reason));
  }
  static FusionDecision Forbid(std::string rule, std::string reason) {
    return FusionDecision(false, std::move(rule), std::move(reason));
  }
  bool ok() const { return ok_; }
  explicit operator bool() const { return ok_; }
  // A short stable name of the rule ("cycle", "matmul-epilogue", ...), and the sentence.
  const std::string& rule() const { return rule_; }
  const std::string& reason() const { return reason_; }

 private:
  FusionDecision(bool ok, std::string rule, std::string reason)
      : ok_(ok), rule_(std::move(rule)), reason_(std::move(reason)) {}
  bool ok_;
  std::string rule_;
  std::string reason_;
};

#define KILN_RETURN_IF_NOT_FUSIBLE(expr)      \
  do {                                        \
    ::kiln::FusionDecision kiln_fd_ = (expr); \
    if (!kiln_fd_) return kiln_fd_;           \
  } while (0)

}  // namespace kiln

#endif  // KILN_PASSES_FUSION_FUSION_DECISION_H_
