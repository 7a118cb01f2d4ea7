#include "gputwin/traces/interned_name.hpp"

#include <mutex>
#include <ostream>
#include <unordered_set>

namespace gputwin::traces {

namespace {

// The process's names: nodes of an unordered_set never move, so a pointer to one stays valid.
struct NameTable {
  std::mutex mutex;
  std::unordered_set<std::string> names;
};

NameTable& table()
{
  static NameTable* t = new NameTable; // never destroyed: ops may outlive static destruction order
  return *t;
}

const std::string* intern(std::string_view text)
{
  NameTable& t = table();
  const std::lock_guard<std::mutex> lock(t.mutex);
  return &*t.names.emplace(text).first;
}

} // namespace

InternedName::InternedName()
{
  static const std::string* const empty = intern({}); // every default-constructed op: no lock
  text_ = empty;
}

InternedName::InternedName(std::string_view text) : text_(intern(text)) {}

std::ostream& operator<<(std::ostream& out, const InternedName& name)
{
  return out << name.str();
}

} // namespace gputwin::traces
