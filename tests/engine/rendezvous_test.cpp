// The multi-process run's plain-C++ parts, without a GPU: the file rendezvous (publish/read between threads
// and processes, the timeout, stale files of another run), the rank from the environment (launcher and
// mpirun variables, every error naming its variable) and the rank report rank 0 merges.
#include "gputwin/engine/comm/communicator.hpp"
#include "gputwin/engine/comm/file_rendezvous.hpp"
#include "gputwin/engine/comm/process_rank.hpp"
#include "gputwin/common/input_error.hpp"
#include "train/rank_report.hpp"

#include <gtest/gtest.h>

#include <cstdlib>
#include <filesystem>
#include <map>
#include <sys/wait.h>
#include <thread>
#include <unistd.h>

namespace gputwin::engine {
namespace {

using namespace std::chrono_literals;

// A fresh directory under the test's temporary directory.
std::string fresh_directory()
{
  std::string pattern = ::testing::TempDir() + "rendezvous-XXXXXX";
  if (::mkdtemp(pattern.data()) == nullptr)
    throw std::runtime_error("mkdtemp failed");
  return pattern;
}

// The message of the exception `fn` throws, checked to be of type E.
template <typename E, typename Fn>
std::string error_of(Fn&& fn)
{
  try {
    fn();
  } catch (const E& e) {
    return e.what();
  }
  ADD_FAILURE() << "expected an exception";
  return "";
}

TEST(Rendezvous, ReaderWaitsForTheBlobPublishedByAnotherThread)
{
  const FileRendezvous rendezvous(fresh_directory(), "run-1", 5000ms);
  std::vector<char> id(128);
  for (size_t i = 0; i < id.size(); ++i)
    id[i] = static_cast<char>(i * 7);
  std::thread publisher([&] {
    std::this_thread::sleep_for(50ms);
    rendezvous.publish("nccl-id", id);
  });
  const std::vector<char> read = rendezvous.read("nccl-id");
  publisher.join();
  EXPECT_EQ(read, id);
  EXPECT_EQ(rendezvous.path("nccl-id"), rendezvous.directory() + "/run-1.nccl-id");
  // Nothing but the blob is left (the temporary file was renamed).
  EXPECT_EQ(std::distance(std::filesystem::directory_iterator(rendezvous.directory()), {}), 1);
}

TEST(Rendezvous, ReaderGetsTheBlobOfAnotherProcess)
{
  const FileRendezvous rendezvous(fresh_directory(), "run-2", 5000ms);
  const pid_t child = ::fork();
  ASSERT_GE(child, 0);
  if (child == 0) {
    std::this_thread::sleep_for(20ms);
    rendezvous.publish("rank-1.report", {'h', 'e', 'l', 'l', 'o'});
    ::_exit(0);
  }
  EXPECT_EQ(rendezvous.read("rank-1.report"), (std::vector<char>{'h', 'e', 'l', 'l', 'o'}));
  int status = 0;
  ::waitpid(child, &status, 0);
  EXPECT_TRUE(WIFEXITED(status) && WEXITSTATUS(status) == 0);
}

TEST(Rendezvous, TimeoutNamesTheFileAndTheLimit)
{
  const FileRendezvous rendezvous(fresh_directory(), "run-3", 100ms);
  const auto start = std::chrono::steady_clock::now();
  const std::string message = error_of<CommError>([&] { rendezvous.read("nccl-id"); });
  EXPECT_LT(std::chrono::steady_clock::now() - start, 5s);
  EXPECT_NE(message.find(rendezvous.path("nccl-id")), std::string::npos) << message;
  EXPECT_NE(message.find("did not appear within 100 ms"), std::string::npos) << message;
  EXPECT_NE(message.find("GPUTWIN_RENDEZVOUS_TIMEOUT_S"), std::string::npos) << message;
}

TEST(Rendezvous, AStaleFileOfAnotherRunIsNotRead)
{
  const std::string directory = fresh_directory();
  FileRendezvous(directory, "run-old", 100ms).publish("nccl-id", {'o', 'l', 'd'});
  const FileRendezvous current(directory, "run-new", 100ms);
  EXPECT_THROW(current.read("nccl-id"), CommError);
}

TEST(Rendezvous, MissingDirectoryAndBadRunIdAreNamed)
{
  const FileRendezvous nowhere("/nonexistent/gputwin", "run-4", 100ms);
  const std::string read_error = error_of<CommError>([&] { nowhere.read("nccl-id"); });
  EXPECT_NE(read_error.find("the directory /nonexistent/gputwin"), std::string::npos) << read_error;
  const std::string write_error = error_of<CommError>([&] { nowhere.publish("nccl-id", {'x'}); });
  EXPECT_NE(write_error.find("/nonexistent/gputwin/run-4.nccl-id"), std::string::npos) << write_error;
  const std::string id_error = error_of<InputError>([] { FileRendezvous("/tmp", "../evil", 100ms); });
  EXPECT_NE(id_error.find("run id"), std::string::npos) << id_error;
}

TEST(Rendezvous, TimeoutFromTheEnvironment)
{
  ::unsetenv("GPUTWIN_RENDEZVOUS_TIMEOUT_S");
  EXPECT_EQ(rendezvous_timeout_from_environment(), 300s);
  ::setenv("GPUTWIN_RENDEZVOUS_TIMEOUT_S", "7", 1);
  EXPECT_EQ(rendezvous_timeout_from_environment(), 7s);
  ::setenv("GPUTWIN_RENDEZVOUS_TIMEOUT_S", "soon", 1);
  const std::string message = error_of<InputError>([] { rendezvous_timeout_from_environment(); });
  EXPECT_NE(message.find("GPUTWIN_RENDEZVOUS_TIMEOUT_S: expected a positive whole number of seconds, got 'soon'"),
            std::string::npos)
      << message;
  ::unsetenv("GPUTWIN_RENDEZVOUS_TIMEOUT_S");
}

// An environment made of `variables` only.
EnvironmentLookup environment(std::map<std::string, std::string> variables)
{
  return [variables](const std::string& name) -> std::optional<std::string> {
    const auto it = variables.find(name);
    return it == variables.end() ? std::nullopt : std::optional<std::string>(it->second);
  };
}

const std::map<std::string, std::string> launched = {{"GPUTWIN_RANK", "2"},
                                                     {"GPUTWIN_WORLD_SIZE", "4"},
                                                     {"GPUTWIN_LOCAL_RANK", "2"},
                                                     {"GPUTWIN_RENDEZVOUS_DIR", "/shared/rv"},
                                                     {"GPUTWIN_RUN_ID", "run-17-abc"}};

TEST(ProcessRank, FromTheLaunchersEnvironment)
{
  const ProcessRank p = process_rank_from_environment(std::nullopt, environment(launched));
  EXPECT_EQ(p.rank, 2);
  EXPECT_EQ(p.world_size, 4);
  EXPECT_EQ(p.local_rank, 2);
  EXPECT_EQ(p.rendezvous_dir, "/shared/rv");
  EXPECT_EQ(p.run_id, "run-17-abc");
  EXPECT_EQ(p.launched_by, Launcher::GputwinLaunch);
  EXPECT_EQ(process_rank_from_environment(std::string("/other"), environment(launched)).rendezvous_dir, "/other");
}

TEST(ProcessRank, FromMpirunsEnvironment)
{
  const ProcessRank p = process_rank_from_environment(
      std::string("/lustre/rv"), environment({{"OMPI_COMM_WORLD_RANK", "5"},
                                              {"OMPI_COMM_WORLD_SIZE", "8"},
                                              {"OMPI_COMM_WORLD_LOCAL_RANK", "1"},
                                              {"PMIX_NAMESPACE", "prterun-node1-4242@1"}}));
  EXPECT_EQ(p.rank, 5);
  EXPECT_EQ(p.world_size, 8);
  EXPECT_EQ(p.local_rank, 1);
  EXPECT_EQ(p.run_id, "mpi-prterun-node1-4242_1");
  EXPECT_EQ(p.launched_by, Launcher::Mpirun);
}

// process_rank_from_environment's InputError for `variables` (and the --rendezvous `directory`).
std::string rank_error(std::map<std::string, std::string> variables,
                       std::optional<std::string> directory = std::nullopt)
{
  return error_of<InputError>([&] { process_rank_from_environment(directory, environment(variables)); });
}

TEST(ProcessRank, ErrorsNameTheVariableAndWhatWasExpected)
{
  const std::string none = rank_error({});
  EXPECT_NE(none.find("GPUTWIN_RANK"), std::string::npos) << none;
  EXPECT_NE(none.find("OMPI_COMM_WORLD_RANK"), std::string::npos) << none;
  EXPECT_NE(none.find("gputwin-engine launch --nproc N"), std::string::npos) << none;

  auto with = [](std::string name, std::optional<std::string> value) {
    std::map<std::string, std::string> v = launched;
    if (value)
      v[name] = *value;
    else
      v.erase(name);
    return v;
  };
  EXPECT_NE(rank_error(with("GPUTWIN_RANK", "two")).find("GPUTWIN_RANK: expected an integer (this process's rank), "
                                                          "got 'two'"),
            std::string::npos);
  EXPECT_NE(rank_error(with("GPUTWIN_RANK", "4")).find("GPUTWIN_RANK: expected this process's rank in [0, 3], got 4"),
            std::string::npos);
  EXPECT_NE(rank_error(with("GPUTWIN_WORLD_SIZE", std::nullopt)).find("GPUTWIN_WORLD_SIZE: not set"),
            std::string::npos);
  EXPECT_NE(rank_error(with("GPUTWIN_WORLD_SIZE", "0")).find("GPUTWIN_WORLD_SIZE: expected the number of ranks in [1"),
            std::string::npos);
  EXPECT_NE(rank_error(with("GPUTWIN_LOCAL_RANK", "-1")).find("GPUTWIN_LOCAL_RANK: expected"), std::string::npos);
  EXPECT_NE(rank_error(with("GPUTWIN_RENDEZVOUS_DIR", std::nullopt)).find("GPUTWIN_RENDEZVOUS_DIR: not set"),
            std::string::npos);
  EXPECT_NE(rank_error(with("GPUTWIN_RUN_ID", "a/b")).find("GPUTWIN_RUN_ID: expected letters"), std::string::npos);
  EXPECT_NE(rank_error(with("GPUTWIN_RUN_ID", std::nullopt)).find("GPUTWIN_RUN_ID: not set"), std::string::npos);

  const std::map<std::string, std::string> mpi = {{"OMPI_COMM_WORLD_RANK", "0"}, {"OMPI_COMM_WORLD_SIZE", "2"}};
  EXPECT_NE(rank_error(mpi).find("--rendezvous DIR"), std::string::npos) << rank_error(mpi);
  EXPECT_NE(rank_error(mpi, "/shared").find("GPUTWIN_RUN_ID: not set and no PMIX_NAMESPACE"), std::string::npos);
}

TEST(RankReport, RoundTripsAndRejectsTruncatedBytes)
{
  RankReport report;
  report.rank = 3;
  report.weighted_loss = {0.0, 1.25, 2.5};
  report.iteration_seconds = {0.5, 0.25, 0.125};
  report.memory.rank = 3;
  report.memory.coords = RankCoords{1, 1, 1};
  report.memory.peak_bytes[0] = 4096;
  report.memory.peak_total_bytes = 8192;
  report.memory.saved_bytes_per_layer_min = 100;
  report.memory.saved_bytes_per_layer_max = 200;
  report.started_ns = 123456789;
  traces::Op op;
  op.id = 7;
  op.kind = traces::OpKind::Recv;
  op.name = "pp.recv.activation";
  op.phase = traces::Phase::Backward;
  op.layer = 2;
  op.micro_batch = 1;
  op.stream = 3;
  op.bytes = 1024;
  op.gemm = traces::GemmShape{4, 5, 6, 2};
  op.peer = 1;
  op.sequence = 9;
  op.deps = {3, 5};
  op.start_ns = 123456999;
  op.duration_ns = 42;
  report.program.rank = 3;
  report.program.ops = {op, op};

  const std::vector<char> bytes = encode_rank_report(report);
  const RankReport back = decode_rank_report(bytes, "test");
  EXPECT_EQ(back.rank, 3);
  EXPECT_EQ(back.weighted_loss, report.weighted_loss);
  EXPECT_EQ(back.iteration_seconds, report.iteration_seconds);
  EXPECT_EQ(back.memory.coords.pp, 1);
  EXPECT_EQ(back.memory.peak_bytes, report.memory.peak_bytes);
  EXPECT_EQ(back.memory.saved_bytes_per_layer_max, 200);
  EXPECT_EQ(back.started_ns, 123456789);
  ASSERT_EQ(back.program.ops.size(), 2u);
  const traces::Op& o = back.program.ops[1];
  EXPECT_EQ(o.name, op.name);
  EXPECT_EQ(o.kind, op.kind);
  EXPECT_EQ(o.gemm, op.gemm);
  EXPECT_EQ(o.deps, op.deps);
  EXPECT_EQ(o.sequence, 9);
  EXPECT_EQ(o.start_ns, op.start_ns);

  const std::vector<char> truncated(bytes.begin(), bytes.begin() + static_cast<std::ptrdiff_t>(bytes.size() / 2));
  const std::string message = error_of<CommError>([&] { decode_rank_report(truncated, "rv/run.rank-3.report"); });
  EXPECT_NE(message.find("rv/run.rank-3.report: truncated or corrupt"), std::string::npos) << message;
}

} // namespace
} // namespace gputwin::engine
