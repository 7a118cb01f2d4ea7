#include "gputwin/common/output_file.hpp"

#include <atomic>
#include <cstdlib>
#include <cerrno>
#include <climits>
#include <csignal>
#include <cstring>
#include <fcntl.h>
#include <mutex>
#include <streambuf>
#include <sys/stat.h>
#include <unistd.h>
#include <vector>

namespace gputwin {

namespace {

// A stream buffer over a file descriptor that remembers the first write error (errno), so the message can
// say why ("No space left on device") instead of only that the stream failed.
class FdStreamBuf : public std::streambuf {
public:
  explicit FdStreamBuf(int fd) : fd_(fd), buffer_(1 << 16) { setp(buffer_.data(), buffer_.data() + buffer_.size()); }

  int error() const { return error_; }

  // Writes out what is buffered; false (and error() set) on failure.
  bool drain()
  {
    if (error_ != 0)
      return false;
    const char* p = pbase();
    while (p < pptr()) {
      const ssize_t n = ::write(fd_, p, static_cast<size_t>(pptr() - p));
      if (n < 0) {
        if (errno == EINTR)
          continue;
        error_ = errno;
        return false;
      }
      if (n == 0) {
        error_ = EIO;
        return false;
      }
      p += n;
    }
    setp(buffer_.data(), buffer_.data() + buffer_.size());
    return true;
  }

protected:
  int_type overflow(int_type c) override
  {
    if (!drain())
      return traits_type::eof();
    if (!traits_type::eq_int_type(c, traits_type::eof())) {
      *pptr() = traits_type::to_char_type(c);
      pbump(1);
    }
    return traits_type::not_eof(c);
  }

  int sync() override { return drain() ? 0 : -1; }

private:
  int fd_;
  std::vector<char> buffer_;
  int error_ = 0;
};

std::string failure(const std::string& label, const std::string& path, const std::string& reason)
{
  return (label.empty() ? "" : label + ": ") + "cannot write '" + path + "': " + reason;
}

[[noreturn]] void fail(const std::string& label, const std::string& path, int error)
{
  throw OutputError(failure(label, path, std::strerror(error)));
}

// Runs the writer on `fd`, flushes, and returns 0 or the errno of the first failure (EIO when the stream
// failed without one). The writer's own exceptions propagate.
int write_through(int fd, const std::function<void(std::ostream&)>& writer)
{
  FdStreamBuf buffer(fd);
  std::ostream stream(&buffer);
  writer(stream);
  stream.flush();
  if (buffer.error() != 0)
    return buffer.error();
  if (!stream)
    return EIO;
  return 0;
}

// Closes `fd`, retrying nothing (POSIX leaves the descriptor closed after EINTR on Linux); 0 or errno.
int close_checked(int fd)
{
  return ::close(fd) == 0 ? 0 : errno;
}

// A path that exists and is not a regular file: written in place, every step checked.
void write_special(const std::string& path, const std::function<void(std::ostream&)>& writer, const std::string& label)
{
  const int fd = ::open(path.c_str(), O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0666);
  if (fd < 0)
    fail(label, path, errno);
  int error = 0;
  try {
    error = write_through(fd, writer);
  } catch (...) {
    ::close(fd);
    throw;
  }
  const int close_error = close_checked(fd);
  if (error == 0)
    error = close_error;
  if (error != 0)
    fail(label, path, error);
}

std::atomic<unsigned> temporary_counter{0};

// The temporary files being written, for the SIGINT/SIGTERM handler to remove: fixed slots (no allocation in
// the handler), 0 free, 1 being filled, 2 live.
struct LiveTemporary {
  std::atomic<int> state{0};
  char path[PATH_MAX] = {};
};
LiveTemporary live_temporaries[64];
std::mutex handler_mutex;
int handler_users = 0;
struct sigaction previous_int {}, previous_term {};

// Removes the live temporary files, puts the previous handler back and raises the signal again: it is delivered
// to that handler (SimGrid's, the default one) once this one returns.
extern "C" void remove_temporaries_and_reraise(int sig)
{
  for (LiveTemporary& t : live_temporaries)
    if (t.state.load() == 2)
      ::unlink(t.path);
  ::sigaction(sig, sig == SIGINT ? &previous_int : &previous_term, nullptr);
  ::raise(sig);
}

// While a temporary file exists: registered, and the handler installed for SIGINT and SIGTERM (the first
// registration installs it, the last one out restores what was there).
class TemporaryGuard {
public:
  explicit TemporaryGuard(const std::string& path)
  {
    if (path.size() >= sizeof(LiveTemporary::path))
      return;
    for (LiveTemporary& t : live_temporaries) {
      int expected = 0;
      if (t.state.compare_exchange_strong(expected, 1)) {
        std::memcpy(t.path, path.c_str(), path.size() + 1);
        t.state.store(2);
        slot_ = &t;
        break;
      }
    }
    const std::lock_guard<std::mutex> lock(handler_mutex);
    if (handler_users++ == 0) {
      struct sigaction action {};
      action.sa_handler = remove_temporaries_and_reraise;
      sigemptyset(&action.sa_mask);
      ::sigaction(SIGINT, &action, &previous_int);
      ::sigaction(SIGTERM, &action, &previous_term);
    }
  }
  ~TemporaryGuard()
  {
    {
      const std::lock_guard<std::mutex> lock(handler_mutex);
      if (--handler_users == 0) {
        ::sigaction(SIGINT, &previous_int, nullptr);
        ::sigaction(SIGTERM, &previous_term, nullptr);
      }
    }
    if (slot_ != nullptr)
      slot_->state.store(0);
  }
  TemporaryGuard(const TemporaryGuard&) = delete;
  TemporaryGuard& operator=(const TemporaryGuard&) = delete;

private:
  LiveTemporary* slot_ = nullptr;
};

// The file a symbolic link finally points to (relative targets taken from the link's directory); `path` itself
// when it is not a link. ELOOP after 40 links.
std::string resolve_links(const std::string& path, const std::string& label)
{
  std::string current = path;
  for (int hops = 0; hops < 40; ++hops) {
    struct stat st {};
    if (::lstat(current.c_str(), &st) != 0 || !S_ISLNK(st.st_mode))
      return current;
    std::vector<char> target(PATH_MAX + 1);
    const ssize_t n = ::readlink(current.c_str(), target.data(), PATH_MAX);
    if (n < 0)
      fail(label, path, errno);
    std::string next(target.data(), static_cast<size_t>(n));
    const size_t slash = current.rfind('/');
    if (!next.empty() && next[0] != '/' && slash != std::string::npos)
      next = current.substr(0, slash + 1) + next;
    current = next;
  }
  fail(label, path, ELOOP);
}

// Writes the regular file `path` (`existing`: its stat, null when it does not exist yet) through a temporary file
// renamed over it; `shown` is the name in error messages (the link the user gave).
void write_regular(const std::string& path, const struct stat* existing,
                   const std::function<void(std::ostream&)>& writer, const std::string& label, const std::string& shown)
{
  // Exclusively created in the same directory (so the rename stays on one file system) with the mode a new
  // file gets (0666 less the umask), or the mode of the file it replaces.
  std::string temporary;
  int fd = -1;
  for (int attempt = 0; attempt < 100 && fd < 0; ++attempt) {
    temporary = path + ".tmp." + std::to_string(::getpid()) + "." + std::to_string(temporary_counter++);
    fd = ::open(temporary.c_str(), O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC, 0666);
    if (fd < 0 && errno != EEXIST)
      fail(label, shown, errno);
  }
  if (fd < 0)
    fail(label, shown, EEXIST);
  const TemporaryGuard guard(temporary); // removed on SIGINT/SIGTERM while it exists
  if (existing != nullptr)
    (void)::fchmod(fd, existing->st_mode & 07777);

  int error = 0;
  try {
    error = write_through(fd, writer);
  } catch (...) {
    ::close(fd);
    ::unlink(temporary.c_str());
    throw;
  }
  if (error == 0 && ::fsync(fd) != 0)
    error = errno;
  const int close_error = close_checked(fd);
  if (error == 0)
    error = close_error;
  if (error == 0 && ::rename(temporary.c_str(), path.c_str()) != 0)
    error = errno;
  if (error != 0) {
    ::unlink(temporary.c_str());
    fail(label, shown, error);
  }
}

} // namespace

void write_file_atomically(const std::string& path, const std::function<void(std::ostream&)>& writer,
                           const std::string& label)
{
  if (path.empty())
    throw OutputError(failure(label, path, "empty file name"));
  // A symbolic link is followed: its final target is replaced atomically (temporary file and rename in the
  // target's directory), the link stays. A special file, also through links (/dev/stdout), is written in place.
  struct stat existing {};
  const bool exists = ::stat(path.c_str(), &existing) == 0;
  if (exists && S_ISDIR(existing.st_mode))
    fail(label, path, EISDIR);
  if (exists && !S_ISREG(existing.st_mode)) {
    write_special(path, writer, label);
    return;
  }
  write_regular(resolve_links(path, label), exists ? &existing : nullptr, writer, label, path);
}

void write_file_atomically(const std::string& path, std::string_view content, const std::string& label)
{
  write_file_atomically(
      path, [content](std::ostream& out) { out.write(content.data(), static_cast<std::streamsize>(content.size())); },
      label);
}

namespace {

// The directory that holds `path` ("." for a bare name).
std::string directory_of(const std::string& path)
{
  const size_t slash = path.rfind('/');
  if (slash == std::string::npos)
    return ".";
  return slash == 0 ? "/" : path.substr(0, slash);
}

// One file's identity for the two-outputs check: the canonical directory and the name (the target's, for a
// link), so "x.csv", "./x.csv" and a link to x.csv compare equal.
std::string output_identity(const std::string& target)
{
  std::vector<char> resolved(PATH_MAX + 1);
  const std::string dir = directory_of(target);
  const std::string name = target.substr(target.rfind('/') == std::string::npos ? 0 : target.rfind('/') + 1);
  if (::realpath(dir.c_str(), resolved.data()) == nullptr)
    return target;
  return std::string(resolved.data()) + "/" + name;
}

} // namespace

void check_output_paths(const std::vector<std::pair<std::string, std::string>>& outputs)
{
  std::vector<std::pair<std::string, std::string>> seen; // (identity, label)
  for (const auto& [label, path] : outputs) {
    if (path.empty())
      throw OutputError(failure(label, path, "empty file name"));
    struct stat st {};
    if (::stat(path.c_str(), &st) == 0) {
      if (S_ISDIR(st.st_mode))
        fail(label, path, EISDIR);
      if (!S_ISREG(st.st_mode))
        continue; // a device or FIFO (also through links): written in place, checked as it is written
    }
    const std::string target = resolve_links(path, label);
    const std::string dir = directory_of(target);
    struct stat dir_st {};
    if (::stat(dir.c_str(), &dir_st) != 0)
      fail(label, path, errno);
    if (!S_ISDIR(dir_st.st_mode))
      fail(label, path, ENOTDIR);
    if (::access(dir.c_str(), W_OK | X_OK) != 0)
      fail(label, path, errno);
    const std::string identity = output_identity(target);
    for (const auto& [other, other_label] : seen)
      if (other == identity)
        throw OutputError(label + ": '" + path + "' is also the file of " + other_label +
                          " (give each output a file of its own)");
    seen.emplace_back(identity, label);
  }
}

} // namespace gputwin
