// RandomGraph: valid, deterministic, a prefix under less fuel, printable as IR text that
// parses back (regression files), and covering every op of the table.
#include "tests/differential/random_graph.h"

#include <set>

#include "gtest/gtest.h"
#include "ir/parser.h"
#include "ir/printer.h"
#include "ir/verifier.h"

namespace kiln {
namespace {

constexpr int kSeeds = 3000;

TEST(RandomGraph, EverySeedGivesAValidGraphThatPrintsAndParses) {
  for (uint64_t seed = 0; seed < kSeeds; ++seed) {
    auto g = RandomGraph(seed, {DefaultOpsForSeed(seed)});
    ASSERT_TRUE(g.ok()) << "seed " << seed << ": " << g.status();
    ASSERT_TRUE(Verify(**g).ok()) << "seed " << seed << ": " << Verify(**g);
    ASSERT_FALSE((*g)->outputs().empty()) << seed;
    const std::string text = PrintGraph(**g);
    auto parsed = ParseGraph(text);
    ASSERT_TRUE(parsed.ok()) << "seed " << seed << ": " << parsed.status() << "\n" << text;
    EXPECT_EQ(PrintGraph(**parsed), text) << seed;
  }
}

TEST(RandomGraph, SameSeedSameGraphAndLessFuelGivesAPrefix) {
  for (uint64_t seed : {3u, 17u, 2024u}) {
    auto a = RandomGraph(seed, {12}), b = RandomGraph(seed, {12}), c = RandomGraph(seed, {5});
    ASSERT_TRUE(a.ok() && b.ok() && c.ok());
    EXPECT_EQ(PrintGraph(**a), PrintGraph(**b));
    // Every node of the 5-op graph is in the 12-op graph, with the same definition.
    for (const Node* n : (*c)->nodes()) {
      const Node* m = (*a)->FindNode(n->name());
      ASSERT_NE(m, nullptr) << n->ToString();
      EXPECT_EQ(m->ToString(), n->ToString());
    }
  }
}

TEST(RandomGraph, CoversTheWholeOpTable) {
  std::set<OpKind> seen;
  for (uint64_t seed = 0; seed < kSeeds; ++seed) {
    auto g = RandomGraph(seed, {DefaultOpsForSeed(seed)});
    ASSERT_TRUE(g.ok());
    for (const Node* n : (*g)->nodes()) seen.insert(n->op());
  }
  for (const OpInfo& op : AllOps()) {
    EXPECT_TRUE(seen.count(op.kind)) << op.name << " is never generated";
  }
}

}  // namespace
}  // namespace kiln
