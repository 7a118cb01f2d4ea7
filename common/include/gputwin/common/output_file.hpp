#pragma once
// Every file the tools write (timelines, traces, fitted models and clusters, reports) goes through here, so
// that no output is ever lost silently or left truncated under its final name.
//
// `write_file_atomically(path, writer)` runs `writer` on a stream into a temporary file next to `path`
// (`PATH.tmp.<pid>.<n>`, created exclusively), flushes it, checks every write, fsync and close, then renames
// it over `path`: a reader sees the old file or the complete new one, never a part. On any failure (the
// writer throws, the disk is full, the directory is missing or read-only) the temporary file is removed and
// nothing under `path` changes. An interrupted run (Ctrl-C, a crash) can leave only a `PATH.tmp.*` file.
//
// Special files: when `path` exists and is not a regular file (/dev/full, /dev/stdout, a FIFO), it is written
// directly, still checking every write and the close, so `--timeline /dev/full` is an error.
//
// Symbolic links are followed: the file a link finally points to is replaced atomically (the temporary file
// and the rename in that file's directory), the link itself stays a link to it; a dangling link creates its
// target. (Writing through the link in place would destroy the target on a failed or killed write.)
//
// SIGINT and SIGTERM while a temporary file exists remove it, then the signal goes on to the handler that was
// there before (the default one ends the process).
//
// Lives in `common` because that library depends on nothing: every other library and tool can use it.

#include <functional>
#include <ostream>
#include <stdexcept>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

namespace gputwin {

// An output file could not be written. Its message is one line naming the file and the reason
// ("--timeline: cannot write 'out.json': No space left on device"); the CLI prints it and exits 2.
class OutputError : public std::runtime_error {
public:
  explicit OutputError(const std::string& message) : std::runtime_error(message) {}
};

// Writes `path` with what `writer` puts on the stream, atomically as described above. `label` prefixes the
// error message (a flag such as "--timeline"; empty: no prefix). Throws OutputError; an exception thrown by
// `writer` propagates unchanged, after the temporary file is removed.
void write_file_atomically(const std::string& path, const std::function<void(std::ostream&)>& writer,
                           const std::string& label = "");

// The same for content already in memory.
void write_file_atomically(const std::string& path, std::string_view content, const std::string& label = "");

// Checks, before any work, that each (label, path) output could be written: the path is not empty and not a
// directory, and its directory (the link target's, for a symbolic link) exists and is writable -- or the path is
// an existing special file. Two outputs that name one file (also through links) are refused. Throws OutputError
// naming the flag and the path ("--csv: cannot write '/no/x.csv': No such file or directory").
void check_output_paths(const std::vector<std::pair<std::string, std::string>>& outputs);

} // namespace gputwin
