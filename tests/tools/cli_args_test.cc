// ParseArgs: strict flags, values in both spellings, the errors a user sees.
#include "tools/cli_args.h"

#include "gtest/gtest.h"

namespace kiln {
namespace {

const std::vector<FlagSpec> kSpecs = {{"reference", false}, {"inputs", true}, {"random", true}};

TEST(CliArgsTest, FlagsValuesAndPositionals) {
  auto args = ParseArgs({"--reference", "g.json", "--inputs", "dir", "--random=3"}, kSpecs);
  ASSERT_TRUE(args.ok()) << args.status();
  EXPECT_FALSE(args->help);
  EXPECT_EQ(args->positional, std::vector<std::string>{"g.json"});
  EXPECT_TRUE(args->Has("reference"));
  EXPECT_EQ(args->values.at("inputs"), "dir");
  EXPECT_EQ(args->values.at("random"), "3");
}

TEST(CliArgsTest, Help) {
  auto args = ParseArgs({"-h"}, kSpecs);
  ASSERT_TRUE(args.ok());
  EXPECT_TRUE(args->help);
}

TEST(CliArgsTest, DoubleDashEndsFlags) {
  auto args = ParseArgs({"--", "--reference"}, kSpecs);
  ASSERT_TRUE(args.ok());
  EXPECT_EQ(args->positional, std::vector<std::string>{"--reference"});
  EXPECT_FALSE(args->Has("reference"));
}

TEST(CliArgsTest, UnknownFlagListsKnownOnes) {
  auto args = ParseArgs({"--refrence"}, kSpecs);
  ASSERT_FALSE(args.ok());
  EXPECT_NE(args.status().message().find("unknown flag --refrence"), std::string::npos);
  EXPECT_NE(args.status().message().find("--reference"), std::string::npos);
  EXPECT_FALSE(ParseArgs({"-x"}, kSpecs).ok());
}

TEST(CliArgsTest, ValueErrors) {
  EXPECT_FALSE(ParseArgs({"--inputs"}, kSpecs).ok());                 // missing value
  EXPECT_FALSE(ParseArgs({"--inputs", "--reference"}, kSpecs).ok());  // a flag is no value
  EXPECT_FALSE(ParseArgs({"--inputs="}, kSpecs).ok());                // empty value
  EXPECT_FALSE(ParseArgs({"--reference=yes"}, kSpecs).ok());          // switch with a value
  EXPECT_FALSE(ParseArgs({"--random", "1", "--random", "2"}, kSpecs).ok());  // twice
}

}  // namespace
}  // namespace kiln
