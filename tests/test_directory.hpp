// A scratch directory of the running test (test_temp_path.hpp), and what it holds: tests of atomic output files use
// both to see that a run leaves the final file and nothing else.
#pragma once

#include "test_temp_path.hpp"

#include <algorithm>
#include <filesystem>
#include <string>
#include <vector>

// A fresh, empty directory belonging to the running test alone.
inline std::filesystem::path fresh_test_directory(const std::string& name)
{
  const std::filesystem::path dir(test_temp_path(name));
  std::filesystem::remove_all(dir);
  std::filesystem::create_directories(dir);
  return dir;
}

// The names in `dir`, sorted, so a test can see that no temporary file was left behind.
inline std::vector<std::string> directory_entries(const std::filesystem::path& dir)
{
  std::vector<std::string> names;
  for (const std::filesystem::directory_entry& e : std::filesystem::directory_iterator(dir))
    names.push_back(e.path().filename().string());
  std::sort(names.begin(), names.end());
  return names;
}
