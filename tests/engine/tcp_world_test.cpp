// The TCP communicator (comm/tcp_world.hpp), each rank its own TcpWorld (threads of this test, or a forked
// process): collectives give exactly the bytes the in-process communicator gives, point-to-point messages match
// by tag and carry the sender's sequence, large messages sent both ways before receiving do not deadlock, and a
// peer that dies, never comes or never sends makes the waiting call throw CommError quickly instead of hanging.
#include "gputwin/engine/comm/in_process_world.hpp"
#include "gputwin/engine/comm/tcp_world.hpp"

#include <gtest/gtest.h>

#include <atomic>
#include <chrono>
#include <csignal>
#include <cstdlib>
#include <cstring>
#include <exception>
#include <functional>
#include <mutex>
#include <random>
#include <sys/wait.h>
#include <thread>
#include <unistd.h>

namespace gputwin::engine {
namespace {

using Clock = std::chrono::steady_clock;

std::string fresh_directory()
{
  std::string pattern = ::testing::TempDir() + "tcp-world-XXXXXX";
  if (::mkdtemp(pattern.data()) == nullptr)
    throw std::runtime_error("mkdtemp failed");
  return pattern;
}

// Runs body(rank) on n threads; rethrows the first failure.
void run_ranks(int n, const std::function<void(int)>& body)
{
  std::mutex mutex;
  std::exception_ptr failure;
  std::vector<std::thread> threads;
  for (int r = 0; r < n; ++r)
    threads.emplace_back([&, r] {
      try {
        body(r);
      } catch (...) {
        std::lock_guard<std::mutex> lock(mutex);
        if (!failure)
          failure = std::current_exception();
      }
    });
  for (std::thread& t : threads)
    t.join();
  if (failure)
    std::rethrow_exception(failure);
}

// Everything one rank computes with its communicators, as raw bytes, to compare between implementations.
using Outputs = std::vector<std::vector<char>>;

template <typename T>
std::vector<char> bytes_of(const std::vector<T>& v)
{
  const char* p = reinterpret_cast<const char*>(v.data());
  return std::vector<char>(p, p + v.size() * sizeof(T));
}

// Values whose fp32 sum depends on the order in which they are added.
std::vector<float> values(int rank, size_t count, unsigned salt)
{
  std::mt19937 random(static_cast<unsigned>(rank) * 7919u + salt);
  std::uniform_real_distribution<float> uniform(-1.0f, 1.0f);
  std::vector<float> v(count);
  for (size_t i = 0; i < count; ++i)
    v[i] = uniform(random) * (i % 3 == 0 ? 1e7f : 1.0f);
  return v;
}

std::vector<uint16_t> to_bf16(const std::vector<float>& v)
{
  std::vector<uint16_t> b(v.size());
  for (size_t i = 0; i < v.size(); ++i)
    b[i] = float_to_bf16(v[i]);
  return b;
}

// The same calls over `world` (all 3 ranks) and `pair` (ranks {2, 0}, in that member order).
Outputs exercise(Communicator& world, Communicator& pair, int rank)
{
  Outputs out;
  constexpr size_t count = 1000;
  std::vector<float> f = values(rank, count * 3, 1);
  world.all_reduce(f.data(), static_cast<int64_t>(f.size()), DType::F32, ReduceOp::Sum);
  out.push_back(bytes_of(f));
  std::vector<float> m = values(rank, count, 2);
  world.all_reduce(m.data(), static_cast<int64_t>(m.size()), DType::F32, ReduceOp::Max);
  out.push_back(bytes_of(m));
  std::vector<uint16_t> b = to_bf16(values(rank, count, 3));
  world.all_reduce(b.data(), static_cast<int64_t>(b.size()), DType::BF16, ReduceOp::Sum);
  out.push_back(bytes_of(b));
  const std::vector<uint16_t> mine = to_bf16(values(rank, 37, 4));
  std::vector<uint16_t> gathered(37 * 3);
  world.all_gather(mine.data(), gathered.data(), 37, DType::BF16);
  out.push_back(bytes_of(gathered));
  const std::vector<float> whole = values(rank, 3 * count, 5);
  std::vector<float> part(count);
  world.reduce_scatter(whole.data(), part.data(), static_cast<int64_t>(count), DType::F32);
  out.push_back(bytes_of(part));
  const std::vector<uint16_t> whole16 = to_bf16(values(rank, 3 * count, 6));
  std::vector<uint16_t> part16(count);
  world.reduce_scatter(whole16.data(), part16.data(), static_cast<int64_t>(count), DType::BF16);
  out.push_back(bytes_of(part16));
  world.barrier();
  if (rank != 1) {
    std::vector<float> p = values(rank, count, 7);
    pair.all_reduce(p.data(), static_cast<int64_t>(p.size()), DType::F32, ReduceOp::Sum);
    out.push_back(bytes_of(p));
    const std::vector<float> w = values(rank, 2 * count, 8);
    std::vector<float> half(count);
    pair.reduce_scatter(w.data(), half.data(), static_cast<int64_t>(count), DType::F32);
    out.push_back(bytes_of(half));
  }
  return out;
}

TEST(TcpWorld, CollectivesGiveTheInProcessBytes)
{
  constexpr int n = 3;
  std::vector<Outputs> threads(n), tcp(n);
  InProcessWorld in_process(n, std::chrono::seconds(10));
  run_ranks(n, [&](int r) {
    auto world = in_process.communicator({0, 1, 2}, r);
    std::unique_ptr<Communicator> pair = r != 1 ? in_process.communicator({2, 0}, r) : nullptr;
    threads[static_cast<size_t>(r)] = exercise(*world, *(pair ? pair : world), r);
  });
  const FileRendezvous rendezvous(fresh_directory(), "collectives", std::chrono::seconds(10));
  run_ranks(n, [&](int r) {
    TcpWorld tcp_world(r, n, rendezvous, std::chrono::seconds(10));
    auto world = tcp_world.communicator({0, 1, 2});
    std::unique_ptr<Communicator> pair = r != 1 ? tcp_world.communicator({2, 0}) : nullptr;
    EXPECT_EQ(world->rank(), r);
    if (pair) {
      EXPECT_EQ(pair->rank(), r == 2 ? 0 : 1);
    }
    EXPECT_TRUE(world->reaches(Device::Cpu));
    tcp[static_cast<size_t>(r)] = exercise(*world, *(pair ? pair : world), r);
    tcp_world.close();
  });
  for (int r = 0; r < n; ++r) {
    ASSERT_EQ(tcp[static_cast<size_t>(r)].size(), threads[static_cast<size_t>(r)].size());
    for (size_t i = 0; i < tcp[static_cast<size_t>(r)].size(); ++i)
      EXPECT_TRUE(tcp[static_cast<size_t>(r)][i] == threads[static_cast<size_t>(r)][i])
          << "rank " << r << ", call " << i << ": the bytes differ from the in-process communicator's";
  }
  // Every member holds the same all-reduce result.
  EXPECT_TRUE(tcp[0][0] == tcp[1][0] && tcp[1][0] == tcp[2][0]);
}

TEST(TcpWorld, MessagesMatchByTagCarryTheSequenceAndCheckTheSize)
{
  const FileRendezvous rendezvous(fresh_directory(), "messages", std::chrono::seconds(10));
  run_ranks(2, [&](int r) {
    TcpWorld tcp_world(r, 2, rendezvous, std::chrono::seconds(10));
    auto comm = tcp_world.communicator({0, 1});
    if (r == 0) {
      const int32_t a = 11, b = 22, c = 33;
      comm->send(&a, sizeof a, 1, /*tag*/ 7, /*sequence*/ 100);
      comm->send(&b, sizeof b, 1, 8, 101);
      comm->send(&c, sizeof c, 1, 7, 102);
      comm->send(&c, sizeof c, 1, 9, 103);
    } else {
      int32_t x = 0;
      EXPECT_EQ(comm->recv(&x, sizeof x, 0, 8), 101); // tag 8 first, though tag 7 came before it
      EXPECT_EQ(x, 22);
      EXPECT_EQ(comm->recv(&x, sizeof x, 0, 7), 100); // in order within a tag
      EXPECT_EQ(x, 11);
      EXPECT_EQ(comm->recv(&x, sizeof x, 0, 7), 102);
      EXPECT_EQ(x, 33);
      int64_t wrong = 0;
      try {
        comm->recv(&wrong, sizeof wrong, 0, 9);
        ADD_FAILURE() << "a recv of the wrong size must throw";
      } catch (const CommError& e) {
        EXPECT_NE(std::string(e.what()).find("recv from rank 0 (tag 9): expected 8 bytes, got 4"), std::string::npos)
            << e.what();
      }
    }
    comm->barrier();
    tcp_world.close();
  });
}

TEST(TcpWorld, LargeMessagesBothWaysBeforeReceivingDoNotDeadlock)
{
  const FileRendezvous rendezvous(fresh_directory(), "large", std::chrono::seconds(20));
  constexpr size_t bytes = 32u << 20; // far more than the sockets buffer
  run_ranks(2, [&](int r) {
    TcpWorld tcp_world(r, 2, rendezvous, std::chrono::seconds(20));
    auto comm = tcp_world.communicator({0, 1});
    std::vector<char> out(bytes, static_cast<char>(r + 1)), in(bytes, 0);
    comm->send(out.data(), static_cast<int64_t>(bytes), 1 - r, 5, r);
    comm->send(out.data(), 16, 1 - r, 6, r);
    EXPECT_EQ(comm->recv(in.data(), static_cast<int64_t>(bytes), 1 - r, 5), 1 - r);
    EXPECT_EQ(in.front(), static_cast<char>(2 - r));
    EXPECT_EQ(in.back(), static_cast<char>(2 - r));
    EXPECT_EQ(comm->recv(in.data(), 16, 1 - r, 6), 1 - r);
    tcp_world.close();
  });
}

TEST(TcpWorld, AMessageThatNeverComesTimesOut)
{
  const FileRendezvous rendezvous(fresh_directory(), "silent", std::chrono::seconds(10));
  std::atomic<bool> done{false};
  run_ranks(2, [&](int r) {
    TcpWorld tcp_world(r, 2, rendezvous, std::chrono::milliseconds(300));
    auto comm = tcp_world.communicator({0, 1});
    if (r == 1) {
      int32_t x = 0;
      const Clock::time_point start = Clock::now();
      try {
        comm->recv(&x, sizeof x, 0, 3);
        ADD_FAILURE() << "nothing was sent: expected CommError";
      } catch (const CommError& e) {
        EXPECT_NE(std::string(e.what()).find("recv from rank 0 (tag 3): waited 300 ms for rank 0"), std::string::npos)
            << e.what();
      }
      EXPECT_LT(Clock::now() - start, std::chrono::seconds(3));
      done = true;
    }
    while (!done) // rank 0 stays connected meanwhile
      std::this_thread::sleep_for(std::chrono::milliseconds(5));
  });
}

TEST(TcpWorld, ARankThatNeverComesIsNamed)
{
  const FileRendezvous rendezvous(fresh_directory(), "absent", std::chrono::milliseconds(300));
  try {
    TcpWorld tcp_world(1, 2, rendezvous, std::chrono::milliseconds(300));
    FAIL() << "rank 0 never came: expected CommError";
  } catch (const CommError& e) {
    EXPECT_NE(std::string(e.what()).find("rank(s) 0"), std::string::npos) << e.what();
  }
}

// Rank 1 is a forked process that connects and is killed; rank 0's collective throws, naming rank 1 and the call.
TEST(TcpWorld, APeerThatDiesMakesTheWaitingCallThrowQuickly)
{
  const FileRendezvous rendezvous(fresh_directory(), "dies", std::chrono::seconds(10));
  const pid_t child = ::fork();
  ASSERT_GE(child, 0);
  if (child == 0) {
    try {
      TcpWorld tcp_world(1, 2, rendezvous, std::chrono::seconds(10));
      std::this_thread::sleep_for(std::chrono::milliseconds(100));
      ::raise(SIGKILL); // dies with its connections open
    } catch (...) {
    }
    ::_exit(3);
  }
  TcpWorld tcp_world(0, 2, rendezvous, std::chrono::seconds(30));
  auto comm = tcp_world.communicator({0, 1});
  std::vector<float> x(1000, 1.0f);
  const Clock::time_point start = Clock::now();
  try {
    comm->all_reduce(x.data(), static_cast<int64_t>(x.size()), DType::F32, ReduceOp::Sum);
    ADD_FAILURE() << "the peer died: expected CommError";
  } catch (const CommError& e) {
    const std::string what = e.what();
    EXPECT_NE(what.find("all_reduce(sum) over ranks 0,1: rank 1 "), std::string::npos) << what;
  }
  EXPECT_LT(Clock::now() - start, std::chrono::seconds(5)) << "a dead peer must not wait for the timeout";
  int status = 0;
  ::waitpid(child, &status, 0);
  EXPECT_TRUE(WIFSIGNALED(status));
}

} // namespace
} // namespace gputwin::engine
