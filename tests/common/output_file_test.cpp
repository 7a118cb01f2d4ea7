// common/output_file.hpp: every output is written to a temporary file and renamed into place; a failure
// leaves neither a partial file under the final name nor a temporary file, and keeps the old content.
#include "gputwin/common/output_file.hpp"
#include "test_directory.hpp"

#include <gtest/gtest.h>

#include <algorithm>
#include <filesystem>
#include <fstream>
#include <iterator>
#include <stdexcept>
#include <string>
#include <csignal>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>
#include <vector>

namespace gputwin {
namespace {

namespace fs = std::filesystem;

std::string read(const fs::path& path)
{
  std::ifstream in(path, std::ios::binary);
  return std::string((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
}

TEST(OutputFile, WritesTheWholeContentAndNoTemporary)
{
  const fs::path dir = fresh_test_directory("success");
  const std::string path = (dir / "out.json").string();
  write_file_atomically(path, [](std::ostream& out) {
    for (int i = 0; i < 100000; ++i) // larger than the stream buffer
      out << i << '\n';
  });
  const std::string text = read(path);
  EXPECT_EQ(text.substr(0, 4), "0\n1\n");
  EXPECT_EQ(text.substr(text.size() - 6), "99999\n");
  EXPECT_EQ(directory_entries(dir), std::vector<std::string>{"out.json"});
}

TEST(OutputFile, WritesContentFromMemory)
{
  const fs::path dir = fresh_test_directory("memory");
  const std::string path = (dir / "model.yaml").string();
  write_file_atomically(path, std::string_view("gpu: a100\n"));
  EXPECT_EQ(read(path), "gpu: a100\n");
  EXPECT_EQ(directory_entries(dir), std::vector<std::string>{"model.yaml"});
}

TEST(OutputFile, ReplacesAnExistingFileAndKeepsItsMode)
{
  const fs::path dir = fresh_test_directory("replace");
  const std::string path = (dir / "out.txt").string();
  std::ofstream(path) << "old content that is longer than the new one\n";
  ::chmod(path.c_str(), 0640);
  write_file_atomically(path, std::string_view("new\n"));
  EXPECT_EQ(read(path), "new\n");
  struct stat st {};
  ASSERT_EQ(::stat(path.c_str(), &st), 0);
  EXPECT_EQ(st.st_mode & 0777, 0640u);
  EXPECT_EQ(directory_entries(dir), std::vector<std::string>{"out.txt"});
}

TEST(OutputFile, AWriterThatThrowsLeavesNoFileAndNoTemporary)
{
  const fs::path dir = fresh_test_directory("throws");
  const std::string path = (dir / "out.json").string();
  EXPECT_THROW(write_file_atomically(path,
                                     [](std::ostream& out) {
                                       out << std::string(200000, 'x'); // part of it already on disk
                                       throw std::runtime_error("the run failed half-way");
                                     }),
               std::runtime_error);
  EXPECT_FALSE(fs::exists(path));
  EXPECT_TRUE(directory_entries(dir).empty());
}

TEST(OutputFile, AFailedWriteKeepsTheOldContent)
{
  const fs::path dir = fresh_test_directory("keep_old");
  const std::string path = (dir / "out.json").string();
  std::ofstream(path) << "the old, complete file\n";
  EXPECT_THROW(write_file_atomically(path,
                                     [](std::ostream& out) {
                                       out << "a new, partial file";
                                       throw std::runtime_error("interrupted");
                                     }),
               std::runtime_error);
  EXPECT_EQ(read(path), "the old, complete file\n");
  EXPECT_EQ(directory_entries(dir), std::vector<std::string>{"out.json"});
}

TEST(OutputFile, AStreamLeftInAFailedStateIsAnError)
{
  const fs::path dir = fresh_test_directory("failbit");
  const std::string path = (dir / "out.json").string();
  EXPECT_THROW(write_file_atomically(path, [](std::ostream& out) { out.setstate(std::ios::failbit); }), OutputError);
  EXPECT_FALSE(fs::exists(path));
  EXPECT_TRUE(directory_entries(dir).empty());
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
  const fs::path dir = fresh_test_directory("missing");
  try {
    write_file_atomically((dir / "no" / "such" / "out.json").string(), std::string_view("x"), "--output");
    ADD_FAILURE() << "expected an OutputError";
  } catch (const OutputError& e) {
    EXPECT_EQ(std::string(e.what()), "--output: cannot write '" + (dir / "no" / "such" / "out.json").string() +
                                         "': No such file or directory");
  }
  EXPECT_THROW(write_file_atomically(dir.string(), std::string_view("x")), OutputError);
  EXPECT_THROW(write_file_atomically("", std::string_view("x")), OutputError);
  EXPECT_TRUE(directory_entries(dir).empty());
}

// A symbolic link: its target is replaced atomically in the target's directory and the link stays a link; a failed
// write keeps the target (issue 30: the link was written in place, a failed or killed write destroyed it).
TEST(OutputFile, ASymlinkIsFollowedAndItsTargetReplacedAtomically)
{
  const fs::path dir = fresh_test_directory("symlink");
  fs::create_directories(dir / "real");
  const fs::path target = dir / "real" / "out.json";
  std::ofstream(target) << "old\n";
  fs::create_symlink(fs::path("real") / "out.json", dir / "link.json"); // relative to the link's directory
  EXPECT_THROW(write_file_atomically((dir / "link.json").string(),
                                     [](std::ostream& out) {
                                       out << "partial";
                                       throw std::runtime_error("killed");
                                     }),
               std::runtime_error);
  EXPECT_EQ(read(target), "old\n");
  write_file_atomically((dir / "link.json").string(), std::string_view("new\n"));
  EXPECT_TRUE(fs::is_symlink(dir / "link.json"));
  EXPECT_EQ(read(target), "new\n");
  EXPECT_EQ(directory_entries(dir / "real"), std::vector<std::string>{"out.json"});
  EXPECT_EQ(directory_entries(dir), (std::vector<std::string>{"link.json", "real"}));
  fs::create_symlink(dir / "real" / "later.json", dir / "dangling.json"); // a dangling link creates its target
  write_file_atomically((dir / "dangling.json").string(), std::string_view("made\n"));
  EXPECT_EQ(read(dir / "real" / "later.json"), "made\n");
  EXPECT_TRUE(fs::is_symlink(dir / "dangling.json"));
}

// SIGTERM or SIGINT while the temporary file is being written: it is removed, then the signal ends the process.
TEST(OutputFile, SigtermAndSigintRemoveTheTemporaryFile)
{
  for (const int sig : {SIGTERM, SIGINT}) {
    const fs::path dir = fresh_test_directory("signal" + std::to_string(sig));
    const std::string path = (dir / "big.json").string();
    const pid_t child = ::fork();
    ASSERT_GE(child, 0);
    if (child == 0) {
      ::signal(sig, SIG_DFL);
      write_file_atomically(path, [sig](std::ostream& out) {
        for (int i = 0; i < 100000; ++i)
          out << i << '\n';
        out.flush();
        ::raise(sig); // as if the user pressed Ctrl-C in the middle of the write
        for (int i = 0; i < 100000; ++i)
          out << i << '\n';
      });
      ::_exit(0); // not reached: the signal ends the child
    }
    int status = 0;
    ASSERT_EQ(::waitpid(child, &status, 0), child);
    EXPECT_TRUE(WIFSIGNALED(status) && WTERMSIG(status) == sig) << status;
    const std::vector<std::string> left = directory_entries(dir);
    EXPECT_TRUE(left.empty()) << "left behind: " << (left.empty() ? "" : left.front());
  }
}

// check_output_paths: before any work, each output's directory must exist and take files, and no two outputs may
// name one file (also through "./" or a link).
TEST(OutputFile, OutputPathsAreCheckedBeforeTheWork)
{
  const fs::path dir = fresh_test_directory("check");
  const std::string csv = (dir / "x.csv").string();
  EXPECT_NO_THROW(check_output_paths({{"--csv", csv}, {"--plot", (dir / "x.png").string()}}));
  EXPECT_NO_THROW(check_output_paths({{"--timeline", "/dev/null"}}));
  if (fs::exists("/dev/stdout")) { // a link to /proc/self/fd/1: written in place
    EXPECT_NO_THROW(check_output_paths({{"--timeline", "/dev/stdout"}}));
  }
  const auto message = [](const std::vector<std::pair<std::string, std::string>>& outputs) {
    try {
      check_output_paths(outputs);
    } catch (const OutputError& e) {
      return std::string(e.what());
    }
    return std::string("no error");
  };
  EXPECT_EQ(message({{"--csv", "/nonexistent/x.csv"}}),
            "--csv: cannot write '/nonexistent/x.csv': No such file or directory");
  EXPECT_EQ(message({{"--plot", dir.string()}}), "--plot: cannot write '" + dir.string() + "': Is a directory");
  EXPECT_EQ(message({{"--csv", ""}}), "--csv: cannot write '': empty file name");
  EXPECT_EQ(message({{"--csv", csv}, {"--plot", csv}}),
            "--plot: '" + csv + "' is also the file of --csv (give each output a file of its own)");
  fs::create_symlink(csv, dir / "link.csv");
  EXPECT_NE(message({{"--csv", (dir / "." / "x.csv").string()}, {"--plot", (dir / "link.csv").string()}})
                .find("is also the file of --csv"),
            std::string::npos);
  EXPECT_TRUE(directory_entries(dir) == std::vector<std::string>{"link.csv"}); // nothing written
}

} // namespace
} // namespace gputwin
