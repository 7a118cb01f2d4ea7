#pragma once
// Small blobs exchanged between the processes of one run through files in a shared directory: rank 0
// publishes the ncclUniqueId (128 bytes) there and the other ranks read it, and at the end every rank publishes
// its results for rank 0. Each blob is written to a temporary file and renamed into place, so a reader sees
// all of it or nothing; its file name starts with the run id, so a file left by an earlier run is never read.

#include <chrono>
#include <string>
#include <vector>

namespace gputwin::engine {

// How long a reader waits for a blob: GPUTWIN_RENDEZVOUS_TIMEOUT_S (whole seconds > 0) or 300 s. Throws
// InputError naming the variable when it is set but not a positive integer.
std::chrono::milliseconds rendezvous_timeout_from_environment();

class FileRendezvous {
public:
  // `directory` must exist (on a filesystem every rank sees) before publish or read; `run_id` is made of
  // letters, digits, '.', '_' and '-' (InputError otherwise).
  FileRendezvous(std::string directory, std::string run_id, std::chrono::milliseconds timeout);

  const std::string& directory() const { return directory_; }
  const std::string& run_id() const { return run_id_; }
  std::chrono::milliseconds timeout() const { return timeout_; }

  // The file that holds blob `name`: <directory>/<run_id>.<name>.
  std::string path(const std::string& name) const;
  // Writes `bytes` as blob `name` atomically (temporary file, then rename). Throws CommError naming the file.
  void publish(const std::string& name, const std::vector<char>& bytes) const;
  // Waits for blob `name` (polling) and returns its bytes. Throws CommError naming the file and the timeout
  // when it has not appeared within timeout(), or the directory when it does not exist.
  std::vector<char> read(const std::string& name) const;

private:
  std::string directory_, run_id_;
  std::chrono::milliseconds timeout_;
};

} // namespace gputwin::engine
