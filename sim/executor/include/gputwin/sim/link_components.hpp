#pragma once
// The flows of one run grouped by shared links (a ring's hops, an all-to-all's pairs): union-find over the links of
// their routes. The flow runner and the platform-free stream timing make one flow set of each group.

#include <cstddef>
#include <cstdint>
#include <vector>

namespace gputwin::sim {

namespace detail {
inline int32_t find_root(std::vector<int32_t>& parent, int32_t i)
{
  while (parent[static_cast<size_t>(i)] != i) {
    parent[static_cast<size_t>(i)] = parent[static_cast<size_t>(parent[static_cast<size_t>(i)])];
    i = parent[static_cast<size_t>(i)];
  }
  return i;
}
} // namespace detail

// For each of `flows` flows, the index of one flow of its group (the same for every flow that shares a link with
// it, directly or through others). `links_of(i)` gives flow i's links (ids < first_on_link.size()); `first_on_link`
// is scratch, every entry -1 on entry and on return.
template <class LinksOf>
std::vector<int32_t> link_components(size_t flows, LinksOf&& links_of, std::vector<int32_t>& first_on_link)
{
  std::vector<int32_t> parent(flows);
  for (size_t i = 0; i < flows; ++i)
    parent[i] = static_cast<int32_t>(i);
  for (size_t i = 0; i < flows; ++i)
    for (const int link : links_of(i)) {
      int32_t& first = first_on_link[static_cast<size_t>(link)];
      if (first < 0)
        first = static_cast<int32_t>(i);
      else
        parent[static_cast<size_t>(detail::find_root(parent, static_cast<int32_t>(i)))] =
            detail::find_root(parent, first);
    }
  for (size_t i = 0; i < flows; ++i)
    for (const int link : links_of(i))
      first_on_link[static_cast<size_t>(link)] = -1;
  for (size_t i = 0; i < flows; ++i)
    parent[i] = detail::find_root(parent, static_cast<int32_t>(i));
  return parent;
}

} // namespace gputwin::sim
