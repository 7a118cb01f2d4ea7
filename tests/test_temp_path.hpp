// A scratch file path that belongs to the running test alone.
//
// ctest runs every test of a binary as its own process, two or more at a time (`-j`). A fixed name under
// ::testing::TempDir() is therefore written by one test while another reads it: the reader sees a truncated file
// and fails for no reason of its own (CI saw exactly this with a GPU-model YAML three tests shared). The path
// names the suite and the test, so concurrent tests never share a file, and is stable between runs of one test.
#pragma once

#include <gtest/gtest.h>

#include <string>

inline std::string test_temp_path(const std::string& name)
{
  std::string owner = "no-test";
  if (const ::testing::TestInfo* test = ::testing::UnitTest::GetInstance()->current_test_info())
    owner = std::string(test->test_suite_name()) + "." + test->name();
  for (char& c : owner)
    if (c == '/')
      c = '_';  // parameterised names: Suite/Instance.Test/Index
  std::string dir = ::testing::TempDir();
  if (dir.empty() || dir.back() != '/')
    dir += '/';
  return dir + owner + "." + name;
}
