// The op table (ir/ops.def) is well formed: every row documents its formula, names are unique
// and parse back to their kind, arity bounds make sense for the category, attribute schemas
// have unique names and well-typed defaults, and unknown names get close suggestions.
#include <algorithm>
#include <cctype>
#include <set>
#include <string>

#include "absl/strings/match.h"
#include "gtest/gtest.h"
#include "ir/attributes.h"
#include "ir/op.h"

namespace kiln {
namespace {

TEST(OpTableTest, RowsAreInEnumOrderWithFormulas) {
  const auto& ops = AllOps();
  ASSERT_FALSE(ops.empty());
  for (size_t i = 0; i < ops.size(); ++i) {
    SCOPED_TRACE(ops[i].name);
    EXPECT_EQ(static_cast<size_t>(ops[i].kind), i);
    EXPECT_EQ(&GetOpInfo(ops[i].kind), &ops[i]);
    ASSERT_NE(ops[i].formula, nullptr);
    EXPECT_FALSE(std::string(ops[i].formula).empty());
    EXPECT_STRNE(CategoryName(ops[i].category), "?");
  }
}

TEST(OpTableTest, NamesAreUniqueIdentifiersAndParseBack) {
  std::set<std::string> names;
  for (const OpInfo& op : AllOps()) {
    std::string name = op.name;
    EXPECT_TRUE(names.insert(name).second) << "duplicate op name " << name;
    ASSERT_FALSE(name.empty());
    for (char c : name) EXPECT_TRUE(std::islower(c) || std::isdigit(c) || c == '_') << name;
    auto kind = ParseOpKind(OpName(op.kind));
    ASSERT_TRUE(kind.ok()) << kind.status();
    EXPECT_EQ(*kind, op.kind);
  }
}

TEST(OpTableTest, ArityBoundsAreSane) {
  for (const OpInfo& op : AllOps()) {
    SCOPED_TRACE(op.name);
    EXPECT_GE(op.min_arity, 0);
    EXPECT_TRUE(op.max_arity == -1 || op.max_arity >= op.min_arity);
    if (op.category == OpCategory::kLeaf) {
      EXPECT_EQ(op.max_arity, 0);
    } else if (op.category != OpCategory::kPointwise) {
      EXPECT_GE(op.min_arity, 1) << "only leaves and generators take no operands";
    }
  }
  EXPECT_EQ(GetOpInfo(OpKind::kAdd).min_arity, 2);
  EXPECT_EQ(GetOpInfo(OpKind::kConcat).max_arity, -1);
}

TEST(OpTableTest, AttributeSchemasAreWellTyped) {
  for (const OpInfo& op : AllOps()) {
    SCOPED_TRACE(op.name);
    std::set<std::string> names;
    for (const AttrSpec& spec : AttrSpecsFor(op.kind)) {
      EXPECT_TRUE(names.insert(spec.name).second) << "duplicate attribute " << spec.name;
      EXPECT_FALSE(std::string(spec.doc).empty()) << spec.name;
      if (spec.default_value.has_value()) {
        EXPECT_EQ(TypeOf(*spec.default_value), spec.type) << spec.name;
      }
    }
  }
}

TEST(OpTableTest, UnknownNamesSuggestCloseOnes) {
  std::vector<std::string> close = ClosestOpNames("sofmax");
  EXPECT_NE(std::find(close.begin(), close.end(), "softmax"), close.end());
  auto kind = ParseOpKind("sofmax");
  ASSERT_FALSE(kind.ok());
  EXPECT_TRUE(absl::StrContains(kind.status().message(), "unknown op \"sofmax\""));
  EXPECT_TRUE(absl::StrContains(kind.status().message(), "softmax"));
  EXPECT_FALSE(ParseOpKind("").ok());
  EXPECT_FALSE(ParseOpKind("Add").ok());
}

}  // namespace
}  // namespace kiln
