#pragma once
// A training launch line as a shell would split it: the text of a launch script such as
//
//   # GPT-3 175B, 8 nodes
//   export CUDA_DEVICE_MAX_CONNECTIONS=1
//   torchrun --nnodes 8 --nproc-per-node 8 pretrain_gpt.py --num-layers 96 --hidden-size=12288 ...
//
// read into the environment it sets, the launcher's options and the training script's arguments. Quotes ('...',
// "..."), backslash escapes and continuations, `#` comments and $NAME / ${NAME} of variables the file assigns are
// understood; nothing is executed.

#include <cstdint>
#include <map>
#include <optional>
#include <string>
#include <vector>

namespace gputwin::cli {

// One `--name` with the words after it up to the next `--name` (`--name=value`: the one value).
struct LaunchArgument {
  std::string name;                // "--num-layers"
  std::vector<std::string> values; // {"96"}; empty for a switch
  int line = 0;                    // 1-based line of the name in the file
};

struct LaunchLine {
  std::map<std::string, std::string> env;     // NAME=value assignments (with or without `export`)
  std::string launcher;                       // the words before the script: "torchrun", "python -m ..."; or ""
  std::vector<LaunchArgument> launcher_args;  // the launcher's --options (torchrun --nnodes ...)
  std::string script;                         // "pretrain_gpt.py"; empty when the file holds the arguments alone
  std::vector<LaunchArgument> script_args;    // the training script's arguments, in order
};

// Splits `text` (the contents of the file `path`, named in errors). The one command that is not an assignment is
// the launch: the words before its first `*.py` word are the launcher, those after it the script's arguments; a
// command that starts with `--` is the script's arguments alone. Throws InputError "PATH:LINE: ..." on an
// unterminated quote, a variable the file does not assign, a second command, or a word where an argument was
// expected.
LaunchLine parse_launch_line(const std::string& text, const std::string& path);

// How many processes the launch starts: torchrun (or python -m torch.distributed.run/launch) starts --nnodes x
// --nproc-per-node (each 1 by default); otherwise a WORLD_SIZE= assignment; otherwise nullopt. Throws InputError
// "PATH:LINE: --nnodes: expected a positive integer, got ..." on a count that is not one.
struct WorldSize {
  int64_t processes = 0;
  std::string source; // "8 nodes x 8 processes" or "WORLD_SIZE"
};
std::optional<WorldSize> world_size(const LaunchLine& launch, const std::string& path);

// `text` for a one-line message: control characters (a quoted word may span lines) written as \n, \t or \xNN.
std::string printable(const std::string& text);

} // namespace gputwin::cli
