// traces::InternedName (interned_name.hpp): an op's name stored once per distinct text. Equal texts are one stored
// string, however they were made and from whichever thread; a name reads, compares and orders as its text did as a
// std::string; appending interns the new text; ops carry a pointer, not a string.
#include "gputwin/traces/interned_name.hpp"
#include "gputwin/traces/op_graph.hpp"

#include <gtest/gtest.h>

#include <map>
#include <sstream>
#include <string>
#include <thread>
#include <vector>

namespace gputwin::traces {
namespace {

TEST(InternedName, EqualTextsShareOneStoredString)
{
  std::string built = "attn.";
  built.append("softmax.fwd"); // a text made at run time, not a literal
  const InternedName a("attn.softmax.fwd"), b(built), c{std::string_view(built)};
  EXPECT_EQ(&a.str(), &b.str());
  EXPECT_EQ(&a.str(), &c.str());
  EXPECT_EQ(a, b);
  EXPECT_NE(&a.str(), &InternedName("attn.softmax.bwd").str());
  EXPECT_EQ(&InternedName().str(), &InternedName("").str());
  EXPECT_TRUE(InternedName().empty());
}

TEST(InternedName, ReadsComparesAndOrdersAsItsText)
{
  const InternedName name("moe.dispatch.bwd");
  EXPECT_EQ(name, "moe.dispatch.bwd");
  EXPECT_EQ(name, std::string("moe.dispatch.bwd"));
  EXPECT_FALSE(name == "moe.dispatch");
  EXPECT_EQ(name.size(), 16u);
  EXPECT_TRUE(name.starts_with("moe.") && name.ends_with(".bwd"));
  EXPECT_EQ(name.find("dispatch"), 4u);
  EXPECT_EQ(name.substr(0, 3), "moe");
  EXPECT_EQ(name + "!", "moe.dispatch.bwd!");
  const std::string& text = name; // converts to the text it stands for
  EXPECT_EQ(text, "moe.dispatch.bwd");
  std::ostringstream out;
  out << name;
  EXPECT_EQ(out.str(), "moe.dispatch.bwd");
  // Ordered by text, whatever order the texts were interned in.
  std::map<InternedName, int> by_name{{InternedName("zeta"), 2}, {InternedName("alpha"), 1}};
  EXPECT_EQ(by_name.begin()->first, "alpha");
  EXPECT_TRUE(InternedName("b") > InternedName("a"));
}

TEST(InternedName, AppendingInternsTheNewText)
{
  InternedName name("qkv.fwd");
  const std::string* before = &name.str();
  name += "_v2";
  EXPECT_EQ(name, "qkv.fwd_v2");
  EXPECT_EQ(&name.str(), &InternedName("qkv.fwd_v2").str());
  EXPECT_EQ(&InternedName("qkv.fwd").str(), before); // the old text is still interned, unchanged
}

TEST(InternedName, ThreadsInterningTheSameTextsGetTheSameStrings)
{
  constexpr int threads = 4, names = 500;
  std::vector<std::vector<const std::string*>> seen(threads);
  std::vector<std::thread> workers;
  for (int t = 0; t < threads; ++t)
    workers.emplace_back([t, &seen] {
      for (int i = 0; i < names; ++i)
        seen[static_cast<size_t>(t)].push_back(&InternedName("layer" + std::to_string(i) + ".fc1.fwd").str());
    });
  for (std::thread& w : workers)
    w.join();
  for (int t = 1; t < threads; ++t)
    EXPECT_EQ(seen[static_cast<size_t>(t)], seen[0]);
}

TEST(InternedName, AnOpCarriesAPointerNotAString)
{
  EXPECT_EQ(sizeof(InternedName), sizeof(void*));
  EXPECT_LT(sizeof(Op), 192u); // 192 with a std::string name
}

} // namespace
} // namespace gputwin::traces
