#include "gputwin/traces/output_file.hpp"

#include <atomic>
#include <cerrno>
#include <cstring>
#include <fcntl.h>
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

} // namespace

void write_file_atomically(const std::string& path, const std::function<void(std::ostream&)>& writer,
                           const std::string& label)
{
  if (path.empty())
    throw OutputError(failure(label, path, "empty file name"));
  struct stat existing {};
  const bool exists = ::lstat(path.c_str(), &existing) == 0;
  if (exists && S_ISDIR(existing.st_mode))
    fail(label, path, EISDIR);
  if (exists && !S_ISREG(existing.st_mode)) {
    write_special(path, writer, label);
    return;
  }

  // Exclusively created in the same directory (so the rename stays on one file system) with the mode a new
  // file gets (0666 less the umask), or the mode of the file it replaces.
  std::string temporary;
  int fd = -1;
  for (int attempt = 0; attempt < 100 && fd < 0; ++attempt) {
    temporary = path + ".tmp." + std::to_string(::getpid()) + "." + std::to_string(temporary_counter++);
    fd = ::open(temporary.c_str(), O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC, 0666);
    if (fd < 0 && errno != EEXIST)
      fail(label, path, errno);
  }
  if (fd < 0)
    fail(label, path, EEXIST);
  if (exists)
    (void)::fchmod(fd, existing.st_mode & 07777);

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
    fail(label, path, error);
  }
}

void write_file_atomically(const std::string& path, std::string_view content, const std::string& label)
{
  write_file_atomically(
      path, [content](std::ostream& out) { out.write(content.data(), static_cast<std::streamsize>(content.size())); },
      label);
}

} // namespace gputwin
