// Ctrl-C and kills through the real binary (common/interrupt.hpp): SIGINT to the process group, as a terminal sends
// it, ends `gputwin` with one line and exit status 130 and leaves none of its processes (sweep's point runs,
// gnuplot) behind; a killed `sweep --plot` takes gnuplot with it and leaves no temporary directory; a failing
// gnuplot is a one-line error. A fake gnuplot (a shell script first on PATH) stands for the real one where the
// test needs it slow or failing.
#include "test_temp_path.hpp"

#include <gtest/gtest.h>

#include <fcntl.h>
#include <signal.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cerrno>
#include <chrono>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <functional>
#include <sstream>
#include <string>
#include <thread>

namespace gputwin::testing {
namespace {

namespace fs = std::filesystem;

// `gputwin` started in a process group of its own (so that a SIGINT to the group is what Ctrl-C sends), with
// stdout discarded and stderr captured.
struct Running {
  pid_t pid = -1;
  int stderr_fd = -1;
};

// Starts GPUTWIN_CLI with `arguments` (shell words); `environment` is prepended to its environment ("PATH=...").
Running start_gputwin(const std::string& arguments, const std::string& environment = "")
{
  int fds[2];
  if (pipe(fds) != 0)
    return {};
  const pid_t pid = fork();
  if (pid == 0) {
    setpgid(0, 0);
    signal(SIGINT, SIG_DFL); // a test runner may have started us with SIGINT ignored
    dup2(fds[1], STDERR_FILENO);
    const int null = open("/dev/null", O_WRONLY);
    dup2(null, STDOUT_FILENO);
    close(fds[0]);
    const std::string command = environment + " exec '" GPUTWIN_CLI "' " + arguments;
    execl("/bin/sh", "sh", "-c", command.c_str(), static_cast<char*>(nullptr));
    _exit(127);
  }
  close(fds[1]);
  setpgid(pid, pid); // also here, so that the group exists before the test signals it
  return {pid, fds[0]};
}

// Waits for the process to end: its exit status (-signal when killed) and what it wrote on stderr.
std::pair<int, std::string> finish(const Running& r)
{
  std::string err;
  char buffer[4096];
  for (ssize_t n; (n = read(r.stderr_fd, buffer, sizeof buffer)) != 0;) {
    if (n < 0 && errno == EINTR)
      continue;
    if (n < 0)
      break;
    err.append(buffer, static_cast<size_t>(n));
  }
  close(r.stderr_fd);
  int status = 0;
  while (waitpid(r.pid, &status, 0) < 0 && errno == EINTR) {
  }
  return {WIFEXITED(status) ? WEXITSTATUS(status) : -WTERMSIG(status), err};
}

// Polls `condition` every 20 ms for up to `seconds`.
bool eventually(const std::function<bool()>& condition, double seconds)
{
  const auto until = std::chrono::steady_clock::now() + std::chrono::duration<double>(seconds);
  while (std::chrono::steady_clock::now() < until) {
    if (condition())
      return true;
    std::this_thread::sleep_for(std::chrono::milliseconds(20));
  }
  return condition();
}

bool has_children(pid_t pid)
{
  std::ifstream children("/proc/" + std::to_string(pid) + "/task/" + std::to_string(pid) + "/children");
  std::string first;
  return static_cast<bool>(children >> first);
}

// True while a process `pid` exists and is not a zombie.
bool alive(pid_t pid)
{
  std::ifstream stat("/proc/" + std::to_string(pid) + "/stat");
  std::string line;
  if (!std::getline(stat, line))
    return false;
  const size_t close_paren = line.rfind(')');
  return close_paren != std::string::npos && close_paren + 2 < line.size() && line[close_paren + 2] != 'Z';
}

bool group_gone(pid_t group)
{
  return kill(-group, 0) != 0 && errno == ESRCH;
}

// A fresh directory holding `gnuplot`, a shell script with `body`, that answers `--version` (sweep's check).
fs::path fake_gnuplot(const std::string& body)
{
  const fs::path dir = test_temp_path("fake-gnuplot");
  fs::remove_all(dir);
  fs::create_directories(dir);
  std::ofstream(dir / "gnuplot") << "#!/bin/sh\nif [ \"$1\" = --version ]; then echo 'gnuplot 5.4'; exit 0; fi\n"
                                 << body << "\n";
  fs::permissions(dir / "gnuplot", fs::perms::owner_all);
  return dir;
}

// A one-row sweep CSV as `sweep --csv` writes it, for --merge --plot.
std::string one_row_csv()
{
  const std::string path = test_temp_path("one-row.csv");
  std::ofstream(path)
      << "# gputwin sweep 0123456789abcdef shard 1/1 of 1 points: --model gpt-22b --gpus 8\n"
         "cluster,gpus,tp,pp,dp,micro_batch,iteration_time_s,tokens_per_s,mfu,time_to_train_s,gpu_hours,cost,model,"
         "schedule,chunks,recompute,peak_memory_bytes,scaling_efficiency,point,attention,cp,fp8,tp_comm_overlap,"
         "overlap_grad_reduce,overlap_param_gather,ep,etp,sp,zero\n"
         "dgx-a100,8,8,1,1,1,0.5,65536,0.5,,,,gpt-22b,1f1b,1,selective,1000000,1,0,unfused,1,0,0,0,0,1,8,1,0\n";
  return path;
}

void expect_interrupt_line(const std::string& err, const std::string& command)
{
  EXPECT_EQ(err, "gputwin " + command + ": interrupted (Ctrl-C); stopped\n") << "one line, no error of a child";
}

TEST(InterruptCli, CtrlCDuringASweepStopsItsPointRunsAndExits130)
{
  const Running r = start_gputwin("sweep --model gpt3-175b --cluster dgx-a100 --gpus 64:1024:x2 --global-batch 1024 "
                                  "--jobs 2");
  ASSERT_TRUE(eventually([&] { return has_children(r.pid); }, 60)) << "the sweep started no point process";
  std::this_thread::sleep_for(std::chrono::milliseconds(300));
  ASSERT_EQ(kill(-r.pid, SIGINT), 0);
  const auto [code, err] = finish(r);
  EXPECT_EQ(code, 130) << err;
  expect_interrupt_line(err, "sweep");
  EXPECT_TRUE(eventually([&] { return group_gone(r.pid); }, 5)) << "a point process outlived the sweep";
}

TEST(InterruptCli, CtrlCDuringASimulationExits130)
{
  // With every shortcut off (GPUTWIN_EXACT: the whole iteration, every flow in SimGrid's network model) gpt-1t's
  // iteration takes SimGrid well over 8 s (about 5 s with the shortcuts, too close to the 4 s below): the interrupt
  // arrives while the simulation runs, where SimGrid's own handler would end the process with status 1 and no message.
  const Running r = start_gputwin("simulate --model gpt-1t --plan paper --cluster dgx-a100", "GPUTWIN_EXACT=1");
  std::this_thread::sleep_for(std::chrono::seconds(4));
  ASSERT_EQ(kill(-r.pid, SIGINT), 0);
  const auto [code, err] = finish(r);
  EXPECT_EQ(code, 130) << err;
  expect_interrupt_line(err, "simulate");
}

// Runs `sweep --merge --plot` with a gnuplot that records its pid and sleeps; returns the run and gnuplot's pid.
std::pair<Running, pid_t> plot_with_a_sleeping_gnuplot(const std::string& tmpdir)
{
  const std::string pid_file = test_temp_path("gnuplot.pid");
  std::remove(pid_file.c_str());
  const fs::path bin = fake_gnuplot("echo $$ > '" + pid_file + "'\nexec sleep 30");
  const Running r = start_gputwin("sweep --merge '" + one_row_csv() + "' --plot '" + test_temp_path("plot.png") + "'",
                                  "PATH='" + bin.string() + "':\"$PATH\" TMPDIR='" + tmpdir + "'");
  pid_t gnuplot = -1;
  eventually(
      [&] {
        std::ifstream in(pid_file);
        return static_cast<bool>(in >> gnuplot);
      },
      30);
  return {r, gnuplot};
}

TEST(InterruptCli, AKilledPlotTakesGnuplotWithItAndLeavesNoTemporaryDirectory)
{
  const std::string tmpdir = test_temp_path("tmpdir");
  fs::remove_all(tmpdir);
  fs::create_directories(tmpdir);
  const auto [r, gnuplot] = plot_with_a_sleeping_gnuplot(tmpdir);
  ASSERT_GT(gnuplot, 0) << "the fake gnuplot did not start";
  ASSERT_EQ(kill(r.pid, SIGTERM), 0);
  finish(r);
  EXPECT_TRUE(eventually([&] { return !alive(gnuplot); }, 5)) << "gnuplot outlived the killed sweep";
  EXPECT_TRUE(fs::is_empty(tmpdir)) << "a temporary directory was left in " << tmpdir;
  if (alive(gnuplot))
    kill(gnuplot, SIGKILL);
}

TEST(InterruptCli, CtrlCDuringThePlotStopsGnuplotAndExits130)
{
  const std::string tmpdir = test_temp_path("tmpdir");
  fs::remove_all(tmpdir);
  fs::create_directories(tmpdir);
  const auto [r, gnuplot] = plot_with_a_sleeping_gnuplot(tmpdir);
  ASSERT_GT(gnuplot, 0) << "the fake gnuplot did not start";
  ASSERT_EQ(kill(-r.pid, SIGINT), 0);
  const auto [code, err] = finish(r);
  EXPECT_EQ(code, 130) << err;
  expect_interrupt_line(err, "sweep");
  EXPECT_FALSE(alive(gnuplot)) << "gnuplot outlived the interrupted sweep";
  EXPECT_TRUE(fs::is_empty(tmpdir));
  if (alive(gnuplot))
    kill(gnuplot, SIGKILL);
}

TEST(InterruptCli, AFailingGnuplotIsOneLineWithItsFirstError)
{
  const fs::path bin = fake_gnuplot("echo '' >&2\necho 'line 3: unknown or ambiguous terminal type' >&2\nexit 1");
  const std::string png = test_temp_path("failed.png");
  std::remove(png.c_str());
  const Running r = start_gputwin("sweep --merge '" + one_row_csv() + "' --plot '" + png + "'",
                                  "PATH='" + bin.string() + "':\"$PATH\"");
  const auto [code, err] = finish(r);
  EXPECT_EQ(code, 2) << err;
  EXPECT_EQ(err, "gputwin sweep: error: --plot: gnuplot failed (exit status 1): line 3: unknown or ambiguous "
                 "terminal type\n");
  EXPECT_FALSE(fs::exists(png));
  const fs::path killed = fake_gnuplot("kill -9 $$");
  const auto [killed_code, killed_err] = finish(start_gputwin(
      "sweep --merge '" + one_row_csv() + "' --plot '" + png + "'", "PATH='" + killed.string() + "':\"$PATH\""));
  EXPECT_EQ(killed_code, 2) << killed_err;
  EXPECT_EQ(killed_err, "gputwin sweep: error: --plot: gnuplot failed (killed by signal 9)\n");
}

} // namespace
} // namespace gputwin::testing
