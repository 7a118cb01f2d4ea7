#pragma once
// Who this process is in a multi-process run (one rank per process, one GPU per rank): its rank, the world
// size, its rank on this node (which GPU it takes) and where the ranks meet (a shared directory and a run id).
// `gputwin-engine launch` sets GPUTWIN_RANK / GPUTWIN_WORLD_SIZE / GPUTWIN_LOCAL_RANK / GPUTWIN_RENDEZVOUS_DIR /
// GPUTWIN_RUN_ID; under Open MPI's `mpirun` the rank comes from OMPI_COMM_WORLD_RANK / _SIZE / _LOCAL_RANK, the
// directory from --rendezvous (or GPUTWIN_RENDEZVOUS_DIR) and the run id from GPUTWIN_RUN_ID, PMIX_NAMESPACE
// or OMPI_MCA_ess_base_jobid.

#include <functional>
#include <optional>
#include <string>

namespace gputwin::engine {

// What started the process: `gputwin-engine launch` or Open MPI's mpirun (which variables name its rank).
enum class Launcher { GputwinLaunch, Mpirun };
std::string to_string(Launcher launcher); // "gputwin-engine launch", "mpirun"

struct ProcessRank {
  int rank = 0;
  int world_size = 1;
  int local_rank = 0;          // rank among the processes of this node: the GPU index it takes
  std::string rendezvous_dir;  // shared by every rank
  std::string run_id;          // letters, digits, '.', '_', '-': the prefix of this run's rendezvous files
  Launcher launched_by = Launcher::GputwinLaunch;
};

// An environment variable's value, nullopt when unset (the process environment, or a test's map).
using EnvironmentLookup = std::function<std::optional<std::string>(const std::string& name)>;
std::optional<std::string> process_environment(const std::string& name);

// Reads this process's rank from `environment`; `rendezvous_dir` (--rendezvous) overrides
// GPUTWIN_RENDEZVOUS_DIR. Throws InputError naming the variable and what was expected when the launcher's and
// mpirun's variables are both absent, or a value is missing, not an integer or out of range
// (0 <= rank < world size, 0 <= local rank < world size).
ProcessRank process_rank_from_environment(const std::optional<std::string>& rendezvous_dir,
                                          const EnvironmentLookup& environment = process_environment);

} // namespace gputwin::engine
