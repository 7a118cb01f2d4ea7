#pragma once
// Shared by the reader fuzz harnesses (tests/fuzz/*_fuzz.cpp). Each harness defines LLVMFuzzerTestOneInput: it
// feeds the bytes to one reader and catches only the error type that reader documents (InputError, TraceError,
// JsonParseError). Anything else -- another exception, a crash, a hang, a sanitizer report -- is a finding.
// The harnesses link either with libFuzzer (clang -fsanitize=fuzzer, scripts/fuzz.sh) or with the
// deterministic driver replay_main.cpp (ctest -L fuzz).

#include <unistd.h>

#include <cstddef>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <exception>
#include <filesystem>
#include <fstream>
#include <string>
#include <string_view>

namespace gputwin::fuzz {

// Inputs that the reader accepted (no error): the driver reports it as a measure of how deep mutations reach.
inline uint64_t accepted_inputs = 0;

// The bytes as a string view.
inline std::string_view as_text(const uint8_t* data, size_t size)
{
  return {reinterpret_cast<const char*>(data), size};
}

// A finding that is not a crash: print it and abort, so that libFuzzer saves the input and the driver reports it.
[[noreturn]] inline void fail(const std::string& what)
{
  std::fprintf(stderr, "fuzz finding: %s\n", what.c_str());
  std::fflush(stderr);
  std::abort();
}

// Documented errors whose message spans several lines, and the first of them. ARCHITECTURE.md promises one-line
// messages (the CLI prints them after "error: "), but the YAML readers embed raw keys, values and yaml-cpp's own
// messages, which can hold a newline (tests/fuzz/README: known findings). Counted and reported, not a failure,
// unless GPUTWIN_FUZZ_STRICT_MESSAGES=1 (then it aborts like any finding).
inline uint64_t multiline_messages = 0;
inline std::string first_multiline_message;

// A documented error must carry a non-empty message, of one line (see above).
inline void check_error_message(const std::exception& e)
{
  static const bool strict = [] {
    const char* value = std::getenv("GPUTWIN_FUZZ_STRICT_MESSAGES");
    return value != nullptr && std::string_view(value) == "1";
  }();
  const std::string_view message = e.what();
  if (message.empty())
    fail("documented error with an empty message");
  if (message.find('\n') == std::string_view::npos)
    return;
  if (strict)
    fail("documented error message spans several lines: " + std::string(message));
  if (multiline_messages++ == 0) {
    first_multiline_message = message;
    std::fprintf(stderr, "fuzz note: an error message spans several lines (counted, not a failure): %s\n",
                 first_multiline_message.c_str());
  }
}

// A directory of this process for the files of its inputs, removed at exit: under /dev/shm where there is one (a file
// rewritten per execution: 10-20x faster than a disk-backed /tmp), else $TMPDIR or /tmp.
inline const std::filesystem::path& scratch_dir()
{
  static const std::filesystem::path dir = [] {
    const char* tmp = std::getenv("TMPDIR");
    std::error_code error;
    const std::string base = std::filesystem::is_directory("/dev/shm", error) && access("/dev/shm", W_OK) == 0
                                 ? "/dev/shm"
                                 : std::string(tmp && *tmp ? tmp : "/tmp");
    std::string pattern = base + "/gputwin-fuzz-XXXXXX";
    if (mkdtemp(pattern.data()) == nullptr) {
      std::perror("gputwin fuzz: mkdtemp");
      std::abort();
    }
    static const std::filesystem::path made = pattern;
    std::atexit([] {
      std::error_code ignored;
      std::filesystem::remove_all(made, ignored);
    });
    return made;
  }();
  return dir;
}

// The path of a file holding `bytes`, for the readers that take a path, in scratch_dir(); `name` is the file's name
// (readers look at its extension, and name things after it).
inline std::string input_file(std::string_view bytes, const std::string& name)
{
  const std::filesystem::path path = scratch_dir() / name;
  std::ofstream out(path, std::ios::binary | std::ios::trunc);
  out.write(bytes.data(), static_cast<std::streamsize>(bytes.size()));
  out.close();
  if (!out) {
    std::perror("gputwin fuzz: writing the input file");
    std::abort();
  }
  return path.string();
}

} // namespace gputwin::fuzz
