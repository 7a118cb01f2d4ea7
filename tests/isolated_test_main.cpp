// The main of the test binaries that run SimGrid: SimGrid 3.32 builds one platform per process, so every test
// runs in a process of its own (sim::run_isolated), whether ctest runs one test per process or a person runs the
// whole binary. Each child runs its one test and prints GoogleTest's own report; the parent adds a summary line
// and fails when any child failed or died.
#include "gputwin/sim/isolated_run.hpp"

#include <gtest/gtest.h>

#include <algorithm>
#include <cstdio>
#include <exception>
#include <string>
#include <vector>

namespace {

// GoogleTest's glob: '*' any run of characters, '?' one.
bool glob_matches(const char* pattern, const char* name)
{
  if (*pattern == '\0')
    return *name == '\0';
  if (*pattern == '*')
    return glob_matches(pattern + 1, name) || (*name != '\0' && glob_matches(pattern, name + 1));
  return *name != '\0' && (*pattern == '?' || *pattern == *name) && glob_matches(pattern + 1, name + 1);
}

// Whether `name` matches one of the ':'-separated globs of `patterns`.
bool any_matches(const std::string& patterns, const std::string& name)
{
  size_t begin = 0;
  while (begin <= patterns.size()) {
    const size_t end = std::min(patterns.find(':', begin), patterns.size());
    if (glob_matches(patterns.substr(begin, end - begin).c_str(), name.c_str()))
      return true;
    begin = end + 1;
  }
  return false;
}

// Whether --gtest_filter selects `name` ("POSITIVE[-NEGATIVE]", as GoogleTest reads it). GoogleTest applies the
// filter only inside RUN_ALL_TESTS, so the selection is computed here.
bool filter_selects(const std::string& filter, const std::string& name)
{
  const size_t dash = filter.find('-');
  const std::string positive = dash == std::string::npos ? filter : filter.substr(0, dash);
  const std::string negative = dash == std::string::npos ? "" : filter.substr(dash + 1);
  return any_matches(positive.empty() ? "*" : positive, name) && !(!negative.empty() && any_matches(negative, name));
}

} // namespace

int main(int argc, char** argv)
{
  ::testing::InitGoogleTest(&argc, argv);
  if (::testing::GTEST_FLAG(list_tests))
    return RUN_ALL_TESTS();
  std::vector<std::string> selected; // "Suite.Name" of every test the filter selects
  const ::testing::UnitTest& unit = *::testing::UnitTest::GetInstance();
  for (int s = 0; s < unit.total_test_suite_count(); ++s) {
    const ::testing::TestSuite& suite = *unit.GetTestSuite(s);
    for (int t = 0; t < suite.total_test_count(); ++t) {
      const std::string name = std::string(suite.name()) + "." + suite.GetTestInfo(t)->name();
      if (filter_selects(::testing::GTEST_FLAG(filter), name))
        selected.push_back(name);
    }
  }
  if (selected.size() <= 1) // already a process of its own (how ctest runs each test)
    return RUN_ALL_TESTS();

  std::vector<std::string> failed;
  try {
    const std::vector<std::string> exit_codes = gputwin::sim::run_isolated(
        selected.size(), 1,
        [&](size_t i) {
          ::testing::GTEST_FLAG(filter) = selected[i];
          const int code = RUN_ALL_TESTS();
          std::fflush(nullptr); // the child leaves with _exit: GoogleTest's report flushed first
          return std::to_string(code);
        },
        gputwin::sim::IsolatedRunCallbacks{[&](size_t i, const std::string& code) {
                                              if (code != "0")
                                                failed.push_back(selected[i]);
                                            },
                                            {},
                                            [&](size_t i) { return "the test " + selected[i]; }});
    (void)exit_codes;
  } catch (const std::exception& e) {
    std::printf("[ ISOLATED ] error: %s\n", e.what());
    return 1;
  }
  std::printf("[ ISOLATED ] %zu tests, each in a process of its own: %zu failed\n", selected.size(), failed.size());
  for (const std::string& name : failed)
    std::printf("[  FAILED  ] %s\n", name.c_str());
  return failed.empty() ? 0 : 1;
}
