#include "gputwin/models/host_memory.hpp"

#include <algorithm>
#include <fstream>
#include <string>
#include <unistd.h>

namespace gputwin {

namespace {

// The first integer of a file such as /sys/fs/cgroup/memory.max ("max" or absent: no limit, -1).
int64_t read_limit(const char* path)
{
  std::ifstream in(path);
  std::string text;
  if (!(in >> text) || text == "max")
    return -1;
  try {
    const long long value = std::stoll(text);
    return value > 0 ? static_cast<int64_t>(value) : -1;
  } catch (const std::exception&) {
    return -1;
  }
}

// The cgroup's memory limit and usage (v2, else v1); -1 where there is none. v1 reports "no limit" as a huge
// number, which the caller's min() absorbs.
void cgroup_memory(int64_t& limit, int64_t& usage)
{
  limit = read_limit("/sys/fs/cgroup/memory.max");
  usage = read_limit("/sys/fs/cgroup/memory.current");
  if (limit < 0) {
    limit = read_limit("/sys/fs/cgroup/memory/memory.limit_in_bytes");
    usage = read_limit("/sys/fs/cgroup/memory/memory.usage_in_bytes");
  }
}

int64_t pages(int name)
{
  const long count = sysconf(name);
  const long size = sysconf(_SC_PAGESIZE);
  return count > 0 && size > 0 ? static_cast<int64_t>(count) * size : 0;
}

} // namespace

int64_t host_physical_memory_bytes()
{
  int64_t physical = pages(_SC_PHYS_PAGES);
  int64_t limit = 0, usage = 0;
  cgroup_memory(limit, usage);
  if (limit > 0)
    physical = physical > 0 ? std::min(physical, limit) : limit;
  return physical;
}

int64_t host_available_memory_bytes()
{
  int64_t available = 0;
  std::ifstream meminfo("/proc/meminfo");
  std::string key;
  int64_t kib = 0;
  std::string unit;
  while (meminfo >> key >> kib) {
    std::getline(meminfo, unit);
    if (key == "MemAvailable:") {
      available = kib * 1024;
      break;
    }
  }
  if (available <= 0)
    available = pages(_SC_AVPHYS_PAGES);
  int64_t limit = 0, usage = 0;
  cgroup_memory(limit, usage);
  if (limit > 0 && usage >= 0) {
    const int64_t left = std::max<int64_t>(0, limit - usage);
    available = available > 0 ? std::min(available, left) : left;
  }
  return available;
}

} // namespace gputwin
