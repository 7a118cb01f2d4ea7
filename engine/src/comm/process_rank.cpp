#include "gputwin/engine/comm/process_rank.hpp"

#include "gputwin/common/input_error.hpp"

#include <cctype>
#include <cerrno>
#include <cstdlib>

namespace gputwin::engine {

namespace {

// `name`'s value as an integer in [low, high]; InputError naming the variable otherwise.
int integer_variable(const EnvironmentLookup& environment, const std::string& name, long long low, long long high,
                     const std::string& meaning)
{
  const std::optional<std::string> text = environment(name);
  if (!text)
    throw InputError(name + ": not set; expected " + meaning);
  char* end = nullptr;
  errno = 0;
  const long long value = std::strtoll(text->c_str(), &end, 10);
  if (text->empty() || *end != '\0' || errno != 0)
    throw InputError(name + ": expected an integer (" + meaning + "), got '" + *text + "'");
  if (value < low || value > high)
    throw InputError(name + ": expected " + meaning + " in [" + std::to_string(low) + ", " + std::to_string(high) +
                     "], got " + std::to_string(value));
  return static_cast<int>(value);
}

// A job id made usable in a file name: anything but letters, digits, '.', '_' and '-' becomes '_'.
std::string file_name_safe(std::string text)
{
  for (char& c : text)
    if (!(std::isalnum(static_cast<unsigned char>(c)) || c == '.' || c == '_' || c == '-'))
      c = '_';
  return text;
}

constexpr long long max_world_size = 1 << 20;

} // namespace

std::optional<std::string> process_environment(const std::string& name)
{
  const char* value = std::getenv(name.c_str());
  return value ? std::optional<std::string>(value) : std::nullopt;
}

std::string to_string(Launcher launcher)
{
  return launcher == Launcher::Mpirun ? "mpirun" : "gputwin-engine launch";
}

ProcessRank process_rank_from_environment(const std::optional<std::string>& rendezvous_dir,
                                          const EnvironmentLookup& environment)
{
  ProcessRank p;
  // The variables of the launcher, or of Open MPI's mpirun.
  std::string rank_name = "GPUTWIN_RANK", size_name = "GPUTWIN_WORLD_SIZE", local_name = "GPUTWIN_LOCAL_RANK";
  if (environment(rank_name)) {
    p.launched_by = Launcher::GputwinLaunch;
  } else if (environment("OMPI_COMM_WORLD_RANK")) {
    rank_name = "OMPI_COMM_WORLD_RANK";
    size_name = "OMPI_COMM_WORLD_SIZE";
    local_name = "OMPI_COMM_WORLD_LOCAL_RANK";
    p.launched_by = Launcher::Mpirun;
  } else {
    throw InputError("--comm nccl/tcp: no rank in the environment; expected GPUTWIN_RANK and GPUTWIN_WORLD_SIZE (run it "
                     "under `gputwin-engine launch --nproc N -- ...`) or OMPI_COMM_WORLD_RANK (under mpirun)");
  }
  p.world_size = integer_variable(environment, size_name, 1, max_world_size, "the number of ranks");
  p.rank = integer_variable(environment, rank_name, 0, p.world_size - 1, "this process's rank");
  if (environment(local_name))
    p.local_rank = integer_variable(environment, local_name, 0, p.world_size - 1, "this process's rank on its node");
  else
    p.local_rank = p.rank; // one node

  if (rendezvous_dir)
    p.rendezvous_dir = *rendezvous_dir;
  else if (const std::optional<std::string> dir = environment("GPUTWIN_RENDEZVOUS_DIR"))
    p.rendezvous_dir = *dir;
  if (p.rendezvous_dir.empty())
    throw InputError("GPUTWIN_RENDEZVOUS_DIR: not set; expected a directory every rank sees (" +
                     std::string(p.launched_by == Launcher::Mpirun ? "give --rendezvous DIR on a shared filesystem"
                                                           : "gputwin-engine launch sets it") +
                     ")");

  if (const std::optional<std::string> id = environment("GPUTWIN_RUN_ID")) {
    p.run_id = *id;
    for (const char c : p.run_id)
      if (!(std::isalnum(static_cast<unsigned char>(c)) || c == '.' || c == '_' || c == '-'))
        throw InputError("GPUTWIN_RUN_ID: expected letters, digits, '.', '_' or '-', got '" + *id + "'");
    if (p.run_id.empty())
      throw InputError("GPUTWIN_RUN_ID: expected a non-empty run id");
  } else if (p.launched_by == Launcher::Mpirun) {
    for (const char* name : {"PMIX_NAMESPACE", "OMPI_MCA_ess_base_jobid", "OMPI_MCA_orte_ess_jobid"})
      if (const std::optional<std::string> job = environment(name); job && !job->empty()) {
        p.run_id = "mpi-" + file_name_safe(*job);
        break;
      }
    if (p.run_id.empty())
      throw InputError("GPUTWIN_RUN_ID: not set and no PMIX_NAMESPACE or OMPI_MCA_ess_base_jobid to take a run id "
                       "from; expected one that differs between runs (mpirun -x GPUTWIN_RUN_ID=...)");
  } else {
    throw InputError("GPUTWIN_RUN_ID: not set; expected the run id gputwin-engine launch sets");
  }
  return p;
}

} // namespace gputwin::engine
