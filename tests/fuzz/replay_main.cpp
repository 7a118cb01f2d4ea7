// The deterministic fuzz driver: a main() for the harnesses of tests/fuzz when they are not linked with libFuzzer
// (the ordinary gcc build; `ctest -L fuzz`). It runs LLVMFuzzerTestOneInput on every file of the corpus, then on
// N mutations of the corpus made by a fixed-seed generator: the same arguments run the same inputs on every
// machine. A finding (an exception the harness does not accept, a crash, a sanitizer report, an input that runs
// longer than --timeout) is printed with the input's file, which is saved for replay:
//
//   fuzz_trace_json [--mutations N] [--seed S] [--timeout SECONDS] [--max-len BYTES] [--dict FILE]...
//                   [--artifacts DIR] PATH...        (PATH: a corpus directory or a file, e.g. a saved finding)
//
// Exit status 0 when nothing was found, 1 on a finding, 2 on bad arguments.

#include "fuzz_support.hpp"

#include <cxxabi.h>
#include <fcntl.h>
#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <chrono>
#include <csignal>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <exception>
#include <filesystem>
#include <fstream>
#include <sstream>
#include <stdexcept>
#include <string>
#include <thread>
#include <typeinfo>
#include <vector>

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size);
extern "C" int LLVMFuzzerInitialize(int* argc, char*** argv) __attribute__((weak));
// Sanitizer runtimes (gcc's and clang's) call this before they end the process on a report.
extern "C" void __sanitizer_set_death_callback(void (*callback)(void)) __attribute__((weak));

namespace {

// splitmix64: a tiny generator whose sequence is the same everywhere (std:: distributions are not).
class Rng {
public:
  explicit Rng(uint64_t seed) : state_(seed) {}
  uint64_t next()
  {
    uint64_t z = (state_ += 0x9e3779b97f4a7c15ULL);
    z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ULL;
    z = (z ^ (z >> 27)) * 0x94d049bb133111ebULL;
    return z ^ (z >> 31);
  }
  size_t below(size_t n) { return n == 0 ? 0 : static_cast<size_t>(next() % n); }

private:
  uint64_t state_;
};

const char* const interesting_numbers[] = {"0", "-0", "1", "-1", "2", "3", "7", "8", "64", "127", "128", "255", "256",
                                           "1023", "1024", "65535", "65536", "2147483647", "2147483648",
                                           "-2147483648", "-2147483649", "4294967295", "4294967296",
                                           "9223372036854775807", "9223372036854775808", "-9223372036854775808",
                                           "-9223372036854775809", "18446744073709551615", "18446744073709551616",
                                           "1e308", "1.8e308", "-1e308", "1e-308", "4.9e-324", "1e-400", "1e400",
                                           "0.5", "1.5", "-0.0", "1e9", "1e15", "1e18", "1e19", "1e20", "nan",
                                           "NaN", "inf", "-inf", ".inf", "-.inf", ".nan", "0x10", "1_000", "00",
                                           "1.", ".5", "+1", "1e", "1e+", "-", "999999999999999999999999999999"};
const char interesting_bytes[] = {'\0', '\x01', '\x7f', '\x80', '\xff', '\xc3', '\xef', '"', '\'', '\\', '{',  '}',
                                  '[',  ']',    ':',    ',',    '\n',   '\r',   '\t',   ' ', '-',  '#',  '0',  '9',
                                  'e',  '.',    '&',    '*',    '!',    '|',    '>',    '?', '%',  '@',  '`',  'u'};

struct Mutator {
  const std::vector<std::string>& corpus;
  const std::vector<std::string>& dictionary;
  size_t max_len;
  Rng rng;

  size_t position(const std::string& s) { return rng.below(s.size() + 1); }

  void insert(std::string& s, size_t at, const std::string& text)
  {
    if (s.size() + text.size() <= max_len)
      s.insert(std::min(at, s.size()), text);
  }

  // Start and length of a random line of `s` (without its newline).
  std::pair<size_t, size_t> line_at(const std::string& s, size_t at)
  {
    at = std::min(at, s.size());
    const size_t start = at == 0 ? 0 : s.rfind('\n', at - 1) == std::string::npos ? 0 : s.rfind('\n', at - 1) + 1;
    const size_t end = std::min(s.find('\n', at), s.size());
    return {start, end - start};
  }

  void mutate_once(std::string& s)
  {
    switch (rng.below(14)) {
    case 0: // flip a bit
      if (!s.empty())
        s[rng.below(s.size())] ^= static_cast<char>(1u << rng.below(8));
      break;
    case 1: // a random byte
      if (!s.empty())
        s[rng.below(s.size())] = static_cast<char>(rng.next());
      break;
    case 2: // an interesting byte, replacing or inserted
      if (!s.empty() && rng.below(2))
        s[rng.below(s.size())] = interesting_bytes[rng.below(sizeof interesting_bytes)];
      else
        insert(s, position(s), std::string(1, interesting_bytes[rng.below(sizeof interesting_bytes)]));
      break;
    case 3: { // delete a range
      if (s.empty())
        break;
      const size_t at = rng.below(s.size());
      s.erase(at, 1 + rng.below(std::min<size_t>(s.size() - at, rng.below(4) ? 8 : 256)));
      break;
    }
    case 4: { // insert random bytes
      std::string bytes(1 + rng.below(8), '\0');
      for (char& c : bytes)
        c = static_cast<char>(rng.next());
      insert(s, position(s), bytes);
      break;
    }
    case 5: { // copy a range elsewhere
      if (s.empty())
        break;
      const size_t from = rng.below(s.size());
      insert(s, position(s), s.substr(from, 1 + rng.below(std::min<size_t>(s.size() - from, 128))));
      break;
    }
    case 6: // a dictionary token
      if (!dictionary.empty())
        insert(s, position(s), dictionary[rng.below(dictionary.size())]);
      break;
    case 7: { // a number replaced by an interesting one (or one inserted)
      const std::string number = interesting_numbers[rng.below(std::size(interesting_numbers))];
      size_t at = s.empty() ? 0 : rng.below(s.size());
      const size_t digit = s.find_first_of("0123456789", at);
      if (digit == std::string::npos) {
        insert(s, at, number);
        break;
      }
      size_t begin = digit, end = digit;
      while (begin > 0 && std::strchr("0123456789.-+eE", s[begin - 1]) != nullptr && s[begin - 1] != '\0')
        --begin;
      while (end < s.size() && std::strchr("0123456789.-+eE", s[end]) != nullptr && s[end] != '\0')
        ++end;
      s.replace(begin, end - begin, number);
      if (s.size() > max_len)
        s.resize(max_len);
      break;
    }
    case 8: { // splice a piece of another corpus input
      const std::string& other = corpus[rng.below(corpus.size())];
      if (other.empty())
        break;
      const size_t from = rng.below(other.size());
      const std::string piece = other.substr(from, 1 + rng.below(std::min<size_t>(other.size() - from, 512)));
      if (rng.below(2) && !s.empty()) {
        const size_t at = rng.below(s.size());
        s.replace(at, std::min(piece.size(), s.size() - at), piece);
      } else {
        insert(s, position(s), piece);
      }
      break;
    }
    case 9: // truncate
      if (!s.empty())
        s.resize(rng.below(s.size()));
      break;
    case 10: { // duplicate a line (duplicate keys, repeated rows)
      const auto [start, length] = line_at(s, position(s));
      const auto [to, unused] = line_at(s, position(s));
      (void)unused;
      insert(s, to, s.substr(start, length) + "\n");
      break;
    }
    case 11: { // delete a line
      if (s.empty())
        break;
      const auto [start, length] = line_at(s, rng.below(s.size()));
      s.erase(start, std::min(s.size() - start, length + 1));
      break;
    }
    case 12: { // a short token repeated many times (deep nesting, long lines, huge numbers)
      static const char* const tokens[] = {"[", "{", "- ", "[{", "{\"a\":", "9", "0", " ", "a:", "  ", "\"", ",", "&a ",
                                           "*a ", "!!", "? ", "\t", "\n"};
      const std::string token = tokens[rng.below(std::size(tokens))];
      const size_t count = 1 + rng.below(rng.below(2) ? 64 : 4096);
      std::string text;
      for (size_t i = 0; i < count && text.size() + token.size() + s.size() <= max_len; ++i)
        text += token;
      insert(s, position(s), text);
      break;
    }
    default: { // swap two bytes
      if (s.size() < 2)
        break;
      std::swap(s[rng.below(s.size())], s[rng.below(s.size())]);
      break;
    }
    }
  }

  std::string next()
  {
    std::string s = corpus[rng.below(corpus.size())];
    const size_t count = 1 + rng.below(rng.below(4) ? 3 : 12);
    for (size_t i = 0; i < count; ++i)
      mutate_once(s);
    return s;
  }
};

// libFuzzer dictionary syntax: one "token" per line (optionally name="token"), \\ \" and \xNN escapes, # comments.
std::vector<std::string> read_dictionary(const std::string& path)
{
  std::ifstream in(path, std::ios::binary);
  if (!in)
    throw std::runtime_error(path + ": cannot read the dictionary");
  std::vector<std::string> tokens;
  std::string line;
  for (int number = 1; std::getline(in, line); ++number) {
    const size_t open = line.find('"');
    if (line.find_first_not_of(" \t") == std::string::npos || line[line.find_first_not_of(" \t")] == '#')
      continue;
    const size_t close = line.rfind('"');
    if (open == std::string::npos || close == open)
      throw std::runtime_error(path + ":" + std::to_string(number) + ": expected \"token\"");
    std::string token;
    for (size_t i = open + 1; i < close; ++i) {
      if (line[i] != '\\' || i + 1 >= close) {
        token += line[i];
      } else if (line[i + 1] == 'x' && i + 3 < close) {
        token += static_cast<char>(std::stoi(line.substr(i + 2, 2), nullptr, 16));
        i += 3;
      } else {
        token += line[++i];
      }
    }
    tokens.push_back(token);
  }
  return tokens;
}

std::string read_file(const std::filesystem::path& path)
{
  std::ifstream in(path, std::ios::binary);
  if (!in)
    throw std::runtime_error(path.string() + ": cannot read");
  std::ostringstream text;
  text << in.rdbuf();
  return text.str();
}

uint64_t fnv1a(const std::string& s)
{
  uint64_t h = 0xcbf29ce484222325ULL;
  for (const char c : s)
    h = (h ^ static_cast<unsigned char>(c)) * 0x100000001b3ULL;
  return h;
}

// What the crash handlers need, set before each execution.
std::string target_name = "fuzz";
std::string artifacts_dir = ".";
const std::string* current_input = nullptr;
std::atomic<int64_t> current_start_ns{0};
std::atomic<uint64_t> current_index{0};
char crash_path[4096];

int64_t now_ns()
{
  return std::chrono::duration_cast<std::chrono::nanoseconds>(std::chrono::steady_clock::now().time_since_epoch())
      .count();
}

std::string save_input(const std::string& kind, const std::string& input)
{
  char hash[17];
  std::snprintf(hash, sizeof hash, "%016llx", static_cast<unsigned long long>(fnv1a(input)));
  const std::string path = artifacts_dir + "/" + target_name + "-" + kind + "-" + hash;
  std::ofstream(path, std::ios::binary) << input;
  return path;
}

// A printable preview of the input for the log.
std::string preview(const std::string& input)
{
  std::string out;
  for (size_t i = 0; i < input.size() && i < 240; ++i) {
    const unsigned char c = static_cast<unsigned char>(input[i]);
    if (c == '\n')
      out += "\\n";
    else if (c == '\\')
      out += "\\\\";
    else if (c >= 0x20 && c < 0x7f)
      out += static_cast<char>(c);
    else {
      char hex[5];
      std::snprintf(hex, sizeof hex, "\\x%02x", c);
      out += hex;
    }
  }
  return out + (input.size() > 240 ? "..." : "");
}

// On a crash, a sanitizer report or a hang: write the input to `path` with async-signal-safe calls, and say where
// it is.
void write_input_to(const char* path)
{
  const std::string* input = current_input;
  if (input == nullptr)
    return;
  current_input = nullptr;
  const int fd = open(path, O_WRONLY | O_CREAT | O_TRUNC, 0644);
  if (fd >= 0) {
    size_t done = 0;
    while (done < input->size()) {
      const ssize_t n = write(fd, input->data() + done, input->size() - done);
      if (n <= 0)
        break;
      done += static_cast<size_t>(n);
    }
    close(fd);
  }
  const char prefix[] = "\nfuzz finding: the input is saved as ";
  [[maybe_unused]] ssize_t ignored = write(2, prefix, sizeof prefix - 1);
  ignored = write(2, path, std::strlen(path));
  ignored = write(2, "\n", 1);
}

// crash_path is prepared before each execution.
void write_crash_input() { write_input_to(crash_path); }

void on_signal(int signal)
{
  write_crash_input();
  std::signal(signal, SIG_DFL);
  std::raise(signal);
}

[[noreturn]] void usage(const std::string& message)
{
  std::fprintf(stderr,
               "%s: %s\nusage: %s [--mutations N] [--seed S] [--timeout SECONDS] [--max-len BYTES] [--dict FILE]... "
               "[--artifacts DIR] PATH...\n",
               target_name.c_str(), message.c_str(), target_name.c_str());
  std::exit(2);
}

std::string current_exception_type()
{
  const std::type_info* type = abi::__cxa_current_exception_type();
  if (type == nullptr)
    return "unknown";
  int status = 0;
  char* name = abi::__cxa_demangle(type->name(), nullptr, nullptr, &status);
  std::string result = status == 0 && name ? name : type->name();
  std::free(name);
  return result;
}

struct DriverOptions {
  uint64_t mutations = 0, seed = 17;
  double timeout_s = 25;
  size_t max_len = 0; // 0: twice the largest corpus input, at least 4096
  std::vector<std::string> dictionary, paths;
};

// The command line (see the top of this file); --artifacts sets artifacts_dir. Exits through usage() on bad
// arguments.
DriverOptions parse_arguments(int argc, char** argv)
{
  DriverOptions options;
  for (int i = 1; i < argc; ++i) {
    const std::string arg = argv[i];
    auto value = [&]() -> std::string {
      if (i + 1 >= argc)
        usage(arg + " needs a value");
      return argv[++i];
    };
    try {
      if (arg == "--mutations")
        options.mutations = std::stoull(value());
      else if (arg == "--seed")
        options.seed = std::stoull(value());
      else if (arg == "--timeout")
        options.timeout_s = std::stod(value());
      else if (arg == "--max-len")
        options.max_len = std::stoull(value());
      else if (arg == "--dict") {
        const std::vector<std::string> tokens = read_dictionary(value());
        options.dictionary.insert(options.dictionary.end(), tokens.begin(), tokens.end());
      } else if (arg == "--artifacts")
        artifacts_dir = value();
      else if (arg.rfind("--", 0) == 0)
        usage("unknown option " + arg);
      else
        options.paths.push_back(arg);
    } catch (const std::logic_error&) {
      usage("bad value for " + arg);
    } catch (const std::runtime_error& e) {
      usage(e.what());
    }
  }
  if (options.paths.empty())
    usage("no corpus given");
  return options;
}

struct Corpus {
  std::vector<std::string> names, inputs;
};

// Every regular file of the directories (sorted, hidden files left out), and the files named.
Corpus read_corpus(const std::vector<std::string>& paths)
{
  Corpus corpus;
  for (const std::string& path : paths) {
    std::vector<std::filesystem::path> files;
    if (std::filesystem::is_directory(path)) {
      for (const auto& entry : std::filesystem::directory_iterator(path))
        if (entry.is_regular_file() && entry.path().filename().string().front() != '.')
          files.push_back(entry.path());
      std::sort(files.begin(), files.end());
    } else if (std::filesystem::is_regular_file(path)) {
      files.push_back(path);
    } else {
      usage(path + ": not a file or directory");
    }
    for (const auto& file : files) {
      corpus.names.push_back(file.string());
      corpus.inputs.push_back(read_file(file));
    }
  }
  if (corpus.inputs.empty())
    usage("the corpus is empty");
  return corpus;
}

// The default --max-len: twice the largest corpus input, at least 4096 bytes.
size_t default_max_len_bytes(const std::vector<std::string>& corpus)
{
  size_t max_len = 4096;
  for (const std::string& input : corpus)
    max_len = std::max(max_len, 2 * input.size());
  return max_len;
}

void install_crash_handlers()
{
  for (const int signal : {SIGSEGV, SIGBUS, SIGFPE, SIGILL, SIGABRT})
    std::signal(signal, on_signal);
  if (__sanitizer_set_death_callback)
    __sanitizer_set_death_callback(write_crash_input);
}

// The watchdog: an execution running longer than the timeout is a hang.
void start_watchdog(double timeout_s)
{
  std::thread([timeout_s] {
    for (;;) {
      std::this_thread::sleep_for(std::chrono::milliseconds(200));
      const int64_t start = current_start_ns.load();
      if (start != 0 && static_cast<double>(now_ns() - start) > timeout_s * 1e9) {
        std::fprintf(stderr, "\nfuzz finding: hang: execution %llu ran longer than %g s\n",
                     static_cast<unsigned long long>(current_index.load()), timeout_s);
        std::string hang_path = crash_path;
        hang_path.replace(hang_path.size() - std::strlen("crash"), std::strlen("crash"), "hang");
        write_input_to(hang_path.c_str());
        std::_Exit(1);
      }
    }
  }).detach();
}

struct RunSummary {
  uint64_t executions = 0, findings = 0;
  double slowest_s = 0;
  std::string slowest_name;
};

struct Execution {
  bool finding = false;
  double seconds = 0;
};

// Runs the harness on `input` (called `name` in the log) with the crash handlers' state set; an exception it lets
// through is a finding (printed, input saved).
Execution run_one(uint64_t index, const std::string& input, const std::string& name)
{
  char hash[17];
  std::snprintf(hash, sizeof hash, "%016llx", static_cast<unsigned long long>(fnv1a(input)));
  std::snprintf(crash_path, sizeof crash_path, "%s/%s-%s-crash", artifacts_dir.c_str(), target_name.c_str(), hash);
  current_input = &input;
  current_index = index;
  const int64_t start = now_ns();
  current_start_ns = start;
  Execution execution;
  try {
    LLVMFuzzerTestOneInput(reinterpret_cast<const uint8_t*>(input.data()), input.size());
  } catch (...) {
    execution.finding = true;
    std::string what;
    try {
      throw;
    } catch (const std::exception& e) {
      what = e.what();
    } catch (...) {
    }
    std::fprintf(stderr, "fuzz finding: %s: %s: unexpected exception %s: %s\n  input saved as %s: \"%s\"\n",
                 target_name.c_str(), name.c_str(), current_exception_type().c_str(), what.c_str(),
                 save_input("exception", input).c_str(), preview(input).c_str());
  }
  current_start_ns = 0;
  current_input = nullptr;
  execution.seconds = static_cast<double>(now_ns() - start) * 1e-9;
  return execution;
}

// Every corpus input, then `options.mutations` mutations of the corpus.
RunSummary run_all(const Corpus& corpus, const DriverOptions& options, size_t max_len)
{
  Mutator mutator{corpus.inputs, options.dictionary, max_len, Rng(options.seed)};
  RunSummary summary;
  const uint64_t total = corpus.inputs.size() + options.mutations;
  for (uint64_t index = 0; index < total; ++index) {
    const bool from_corpus = index < corpus.inputs.size();
    const std::string input = from_corpus ? corpus.inputs[index] : mutator.next();
    const std::string name = from_corpus ? corpus.names[index]
                                         : "mutation " + std::to_string(index - corpus.inputs.size()) + " (seed " +
                                               std::to_string(options.seed) + ")";
    const Execution execution = run_one(index, input, name);
    if (execution.finding)
      ++summary.findings;
    if (execution.seconds > summary.slowest_s) {
      summary.slowest_s = execution.seconds;
      summary.slowest_name = name;
    }
    ++summary.executions;
  }
  return summary;
}

void print_summary(const RunSummary& summary, size_t corpus_files, const DriverOptions& options, double wall_s)
{
  std::printf("%s: %zu corpus files + %llu mutations (seed %llu) = %llu executions, %llu accepted by the reader, "
              "%llu findings, 0 hangs; %.2f s (%.0f exec/s), slowest %.3f s (%s)\n",
              target_name.c_str(), corpus_files, static_cast<unsigned long long>(options.mutations),
              static_cast<unsigned long long>(options.seed), static_cast<unsigned long long>(summary.executions),
              static_cast<unsigned long long>(gputwin::fuzz::accepted_inputs),
              static_cast<unsigned long long>(summary.findings), wall_s,
              static_cast<double>(summary.executions) / wall_s, summary.slowest_s, summary.slowest_name.c_str());
  if (gputwin::fuzz::multiline_messages > 0) {
    std::string first = gputwin::fuzz::first_multiline_message;
    for (size_t at = 0; (at = first.find('\n', at)) != std::string::npos;)
      first.replace(at, 1, "\\n");
    std::printf("%s: %llu error messages span several lines (not counted as findings; first: %s)\n",
                target_name.c_str(), static_cast<unsigned long long>(gputwin::fuzz::multiline_messages), first.c_str());
  }
}

} // namespace

int main(int argc, char** argv)
{
  target_name = std::filesystem::path(argv[0]).filename().string();
  if (LLVMFuzzerInitialize)
    LLVMFuzzerInitialize(&argc, &argv);
  const DriverOptions options = parse_arguments(argc, argv);
  const Corpus corpus = read_corpus(options.paths);
  const size_t max_len = options.max_len != 0 ? options.max_len : default_max_len_bytes(corpus.inputs);
  install_crash_handlers();
  start_watchdog(options.timeout_s);

  const int64_t begin = now_ns();
  const RunSummary summary = run_all(corpus, options, max_len);
  const double wall_s = static_cast<double>(now_ns() - begin) * 1e-9;
  print_summary(summary, corpus.inputs.size(), options, wall_s);
  return summary.findings == 0 ? 0 : 1;
}
