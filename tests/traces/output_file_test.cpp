// traces/output_file.hpp: every output is written to a temporary file and renamed into place; a failure
// leaves neither a partial file under the final name nor a temporary file, and keeps the old content.
#include "gputwin/traces/output_file.hpp"
#include "test_temp_path.hpp"

#include <gtest/gtest.h>

#include <algorithm>
#include <filesystem>
#include <fstream>
#include <iterator>
#include <stdexcept>
#include <string>
#include <sys/stat.h>
#include <vector>

namespace gputwin {
namespace {

namespace fs = std::filesystem;

// A fresh, empty directory per test.
fs::path fresh_directory(const std::string& name)
{
  const fs::path dir = fs::path(test_temp_path(name));
  fs::remove_all(dir);
  fs::create_directories(dir);
  return dir;
}

std::string read(const fs::path& path)
{
  std::ifstream in(path, std::ios::binary);
  return std::string((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
}

// The names in `dir`, so a test can see that no temporary file was left behind.
std::vector<std::string> entries(const fs::path& dir)
{
  std::vector<std::string> names;
  for (const fs::directory_entry& e : fs::directory_iterator(dir))
    names.push_back(e.path().filename().string());
  std::sort(names.begin(), names.end());
  return names;
}

TEST(OutputFile, WritesTheWholeContentAndNoTemporary)
{
  const fs::path dir = fresh_directory("success");
  const std::string path = (dir / "out.json").string();
  write_file_atomically(path, [](std::ostream& out) {
    for (int i = 0; i < 100000; ++i) // larger than the stream buffer
      out << i << '\n';
  });
  const std::string text = read(path);
  EXPECT_EQ(text.substr(0, 4), "0\n1\n");
  EXPECT_EQ(text.substr(text.size() - 6), "99999\n");
  EXPECT_EQ(entries(dir), std::vector<std::string>{"out.json"});
}

TEST(OutputFile, WritesContentFromMemory)
{
  const fs::path dir = fresh_directory("memory");
  const std::string path = (dir / "model.yaml").string();
  write_file_atomically(path, std::string_view("gpu: a100\n"));
  EXPECT_EQ(read(path), "gpu: a100\n");
  EXPECT_EQ(entries(dir), std::vector<std::string>{"model.yaml"});
}

TEST(OutputFile, ReplacesAnExistingFileAndKeepsItsMode)
{
  const fs::path dir = fresh_directory("replace");
  const std::string path = (dir / "out.txt").string();
  std::ofstream(path) << "old content that is longer than the new one\n";
  ::chmod(path.c_str(), 0640);
  write_file_atomically(path, std::string_view("new\n"));
  EXPECT_EQ(read(path), "new\n");
  struct stat st {};
  ASSERT_EQ(::stat(path.c_str(), &st), 0);
  EXPECT_EQ(st.st_mode & 0777, 0640u);
  EXPECT_EQ(entries(dir), std::vector<std::string>{"out.txt"});
}

TEST(OutputFile, AWriterThatThrowsLeavesNoFileAndNoTemporary)
{
  const fs::path dir = fresh_directory("throws");
  const std::string path = (dir / "out.json").string();
  EXPECT_THROW(write_file_atomically(path,
                                     [](std::ostream& out) {
                                       out << std::string(200000, 'x'); // part of it already on disk
                                       throw std::runtime_error("the run failed half-way");
                                     }),
               std::runtime_error);
  EXPECT_FALSE(fs::exists(path));
  EXPECT_TRUE(entries(dir).empty());
}

TEST(OutputFile, AFailedWriteKeepsTheOldContent)
{
  const fs::path dir = fresh_directory("keep_old");
  const std::string path = (dir / "out.json").string();
  std::ofstream(path) << "the old, complete file\n";
  EXPECT_THROW(write_file_atomically(path,
                                     [](std::ostream& out) {
                                       out << "a new, partial file";
                                       throw std::runtime_error("interrupted");
                                     }),
               std::runtime_error);
  EXPECT_EQ(read(path), "the old, complete file\n");
  EXPECT_EQ(entries(dir), std::vector<std::string>{"out.json"});
}

TEST(OutputFile, AStreamLeftInAFailedStateIsAnError)
{
  const fs::path dir = fresh_directory("failbit");
  const std::string path = (dir / "out.json").string();
  EXPECT_THROW(write_file_atomically(path, [](std::ostream& out) { out.setstate(std::ios::failbit); }), OutputError);
  EXPECT_FALSE(fs::exists(path));
  EXPECT_TRUE(entries(dir).empty());
}

TEST(OutputFile, DevFullFailsWithOneLineNamingThePathAndTheReason)
{
  if (!fs::exists("/dev/full"))
    GTEST_SKIP() << "no /dev/full on this system";
  for (const size_t size : {size_t{10}, size_t{1} << 20}) { // fails at the final flush / while writing
    try {
      write_file_atomically(
          "/dev/full", [size](std::ostream& out) { out << std::string(size, 'x'); }, "--timeline");
      ADD_FAILURE() << "writing to /dev/full must fail";
    } catch (const OutputError& e) {
      const std::string message = e.what();
      EXPECT_EQ(message, "--timeline: cannot write '/dev/full': No space left on device");
      EXPECT_EQ(message.find('\n'), std::string::npos);
    }
  }
}

TEST(OutputFile, WritesSpecialFilesInPlace)
{
  if (!fs::exists("/dev/null"))
    GTEST_SKIP() << "no /dev/null on this system";
  EXPECT_NO_THROW(write_file_atomically("/dev/null", std::string_view("discarded\n")));
  EXPECT_TRUE(fs::is_character_file("/dev/null")); // not replaced by a regular file
}

TEST(OutputFile, AMissingDirectoryOrADirectoryIsAnError)
{
  const fs::path dir = fresh_directory("missing");
  try {
    write_file_atomically((dir / "no" / "such" / "out.json").string(), std::string_view("x"), "--output");
    ADD_FAILURE() << "expected an OutputError";
  } catch (const OutputError& e) {
    EXPECT_EQ(std::string(e.what()), "--output: cannot write '" + (dir / "no" / "such" / "out.json").string() +
                                         "': No such file or directory");
  }
  EXPECT_THROW(write_file_atomically(dir.string(), std::string_view("x")), OutputError);
  EXPECT_THROW(write_file_atomically("", std::string_view("x")), OutputError);
  EXPECT_TRUE(entries(dir).empty());
}

} // namespace
} // namespace gputwin
