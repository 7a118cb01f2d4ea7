#include "gputwin/engine/comm/file_rendezvous.hpp"

#include "gputwin/engine/comm/communicator.hpp"
#include "gputwin/common/input_error.hpp"

#include <algorithm>
#include <cctype>
#include <cerrno>
#include <cstdlib>
#include <cstring>
#include <fstream>
#include <iterator>
#include <sys/stat.h>
#include <thread>
#include <unistd.h>

namespace gputwin::engine {

namespace {
constexpr int64_t default_timeout_seconds = 300;

bool is_directory(const std::string& path)
{
  struct stat info {};
  return ::stat(path.c_str(), &info) == 0 && S_ISDIR(info.st_mode);
}

std::string describe(std::chrono::milliseconds timeout)
{
  const int64_t ms = timeout.count();
  return ms % 1000 == 0 ? std::to_string(ms / 1000) + " s" : std::to_string(ms) + " ms";
}

bool valid_run_id(const std::string& id)
{
  if (id.empty())
    return false;
  for (const char c : id)
    if (!(std::isalnum(static_cast<unsigned char>(c)) || c == '.' || c == '_' || c == '-'))
      return false;
  return id != "." && id != "..";
}
} // namespace

std::chrono::milliseconds rendezvous_timeout_from_environment()
{
  const char* text = std::getenv("GPUTWIN_RENDEZVOUS_TIMEOUT_S");
  if (text == nullptr)
    return std::chrono::seconds(default_timeout_seconds);
  char* end = nullptr;
  errno = 0;
  const long long seconds = std::strtoll(text, &end, 10);
  if (*text == '\0' || *end != '\0' || errno != 0 || seconds <= 0 || seconds > 86400 * 365)
    throw InputError(std::string("GPUTWIN_RENDEZVOUS_TIMEOUT_S: expected a positive whole number of seconds, got '") +
                     text + "'");
  return std::chrono::seconds(seconds);
}

FileRendezvous::FileRendezvous(std::string directory, std::string run_id, std::chrono::milliseconds timeout)
    : directory_(std::move(directory)), run_id_(std::move(run_id)), timeout_(timeout)
{
  if (directory_.empty())
    throw InputError("rendezvous directory: expected a directory path, got an empty string");
  if (!valid_run_id(run_id_))
    throw InputError("rendezvous run id: expected letters, digits, '.', '_' or '-', got '" + run_id_ + "'");
}

std::string FileRendezvous::path(const std::string& name) const
{
  return directory_ + "/" + run_id_ + "." + name;
}

void FileRendezvous::publish(const std::string& name, const std::vector<char>& bytes) const
{
  const std::string final_path = path(name);
  // A temporary name no reader looks for, unique to this process.
  const std::string temporary = final_path + ".tmp." + std::to_string(::getpid());
  {
    std::ofstream out(temporary, std::ios::binary | std::ios::trunc);
    if (!out)
      throw CommError("rendezvous: cannot write " + temporary + " (does the directory " + directory_ +
                      " exist and is it writable?)");
    out.write(bytes.data(), static_cast<std::streamsize>(bytes.size()));
    out.flush();
    if (!out)
      throw CommError("rendezvous: writing " + temporary + " failed");
  }
  if (std::rename(temporary.c_str(), final_path.c_str()) != 0) {
    const int error = errno;
    std::remove(temporary.c_str());
    throw CommError("rendezvous: renaming " + temporary + " to " + final_path + " failed: " + std::strerror(error));
  }
}

std::vector<char> FileRendezvous::read(const std::string& name) const
{
  const std::string file = path(name);
  if (!is_directory(directory_))
    throw CommError("rendezvous: the directory " + directory_ + " (for " + file +
                    ") does not exist; it must be on a filesystem every rank sees");
  const auto deadline = std::chrono::steady_clock::now() + timeout_;
  std::chrono::milliseconds pause(1);
  for (;;) {
    std::ifstream in(file, std::ios::binary);
    if (in) // complete: the publisher renamed it into place after writing all of it
      return std::vector<char>(std::istreambuf_iterator<char>(in), {});
    if (std::chrono::steady_clock::now() >= deadline)
      throw CommError("rendezvous: " + file + " did not appear within " + describe(timeout_) +
                      " (GPUTWIN_RENDEZVOUS_TIMEOUT_S; did rank 0 start, and do all ranks share the directory?)");
    std::this_thread::sleep_for(pause);
    pause = std::min(pause * 2, std::chrono::milliseconds(50));
  }
}

} // namespace gputwin::engine
