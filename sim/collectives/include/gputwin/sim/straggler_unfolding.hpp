#pragma once
// A folded workload unfolded just as far as stragglers need. Folding runs one program per pipeline stage for
// its t TP ranks x d DP replicas because they do identical work at identical times; a slow GPU breaks that.
// The ranks that still behave identically are the orbits of the symmetries the slowdowns leave: permuting
// the DP replicas whose slow ranks (position and factor) are the same, and permuting the TP indices likewise
// (every coupling -- TP group (stage, replica), DP group (stage, tp index), pipeline message (stage -> stage
// +- 1, same replica and tp index), tied-embedding pair -- is invariant under both). So each stage gets one
// program per (replica class, tp class); e.g. one slow GPU gives 2 x 2 programs per stage (its replica or
// another, its tp index or another), a slow node holding whole TP groups 2 per stage. Each program runs at
// its ranks' speed; its TP collectives meet only the programs of its replica class, its DP collectives
// every replica class of its tp class, its pipeline messages its own classes of the next stage; each class
// communicator puts the flows of every copy it stands for on the links, as comm_expansion does for the
// whole stage (a copy on a node with a faulted cable among them, as there). Without stragglers there is one
// class per stage and nothing changes. Plain C++, no SimGrid.

#include "gputwin/models/stragglers.hpp"
#include "gputwin/models/workload.hpp"
#include "gputwin/sim/comm_source.hpp"
#include "gputwin/topologies/cluster_graph.hpp"

#include <cstdint>
#include <map>
#include <tuple>
#include <vector>

namespace gputwin::sim {

// The classes of DP replicas and of TP indices that the slowdowns leave interchangeable: each class's indices
// ascending, classes ordered by their first index (so the class of index 0 comes first).
struct StragglerClasses {
  std::vector<std::vector<int64_t>> replicas;
  std::vector<std::vector<int64_t>> tp_indices;
};

// REQUIRES: every rank of `speeds` is a rank of `plan`.
StragglerClasses straggler_classes(const ParallelPlan& plan, const RankSpeeds& speeds);

// The unfolded programs' communicators and the flows behind their communication.
class StragglerUnfolding : public CommSource {
public:
  // Ranks are GPUs (rank r on GPU r of `graph`). REQUIRES: graph.spec().gpus() >= plan.gpus().
  StragglerUnfolding(const topo::ClusterGraph& graph, const Workload& workload, const RankSpeeds& speeds);

  // Programs per stage: replica classes x tp classes.
  size_t programs_per_stage() const { return classes_.replicas.size() * classes_.tp_indices.size(); }
  size_t program_count() const { return programs_per_stage() * static_cast<size_t>(workload_.plan.pp); }
  // Program p stands for stage p / programs_per_stage(), replica class (p % per stage) / tp classes, tp class
  // p % tp classes; it runs as the class's first rank. Program 0 is rank 0's.
  int64_t stage_of(size_t program) const;
  int32_t rank_of(size_t program) const;
  double speed_of(size_t program) const;  // its ranks' compute speed (1 = normal)
  int64_t ranks_of(size_t program) const; // how many ranks it stands for
  const StragglerClasses& classes() const { return classes_; }

  // The programs of every class, from each stage's folded program (stage_program()): the same ops with the
  // class's rank, communicators and pipeline peers.
  std::vector<traces::RankProgram> unfold(const std::vector<traces::RankProgram>& stage_programs) const;
  // A per-stage list (host programs) repeated for each class of the stage.
  template <class T>
  std::vector<T> per_program(const std::vector<T>& per_stage) const
  {
    std::vector<T> out;
    out.reserve(program_count());
    for (size_t p = 0; p < program_count(); ++p)
      out.push_back(per_stage.at(static_cast<size_t>(stage_of(p))));
    return out;
  }
  // The class communicators unfold() refers to (each with every rank it stands for).
  const std::vector<traces::CommGroup>& groups() const { return groups_; }

  const CommWork& collective(const traces::Op& op) override;
  const CommWork& message(int32_t src_rank, const traces::Op& send) override;
  // A TP class collective, when no other TP class's copies share a link with its copies.
  bool may_run_alone(const traces::Op& op) const override;

private:
  enum class Kind { Tp, Dp, Embedding };
  struct ClassGroup {
    Kind kind = Kind::Tp;
    std::vector<std::vector<int32_t>> copies; // the physical communicators it stands for, its own first
  };
  int32_t new_group(int32_t old_group, int64_t stage, size_t replica_class, size_t tp_class) const;
  int32_t representative(int64_t stage, size_t replica_class, size_t tp_class) const;
  CommWork copies_work(CollectiveOp op, const std::vector<std::vector<int32_t>>& copies, double bytes) const;
  bool within_one_domain(const std::vector<int32_t>& ranks) const; // all in one NVLink domain
  // As CommExpander's: a copy inside one NVLink domain with no faulted cable on its nodes (timed as the first).
  bool represented_by_first(const std::vector<int32_t>& ranks) const;
  void find_exclusive_tp_groups(const topo::ClusterGraph& graph);

  const topo::ClusterSpec& cluster_;
  const topo::ClusterGraph& graph_;
  const Workload& workload_;
  RankSpeeds speeds_;
  StragglerClasses classes_;
  std::vector<size_t> replica_class_of_, tp_class_of_;     // index -> class
  std::map<int32_t, std::pair<Kind, int64_t>> old_groups_; // workload group -> (kind, stage)
  std::vector<ClassGroup> class_groups_;
  std::vector<traces::CommGroup> groups_;
  std::vector<bool> alone_; // per class group: may run alone
  std::map<std::tuple<int32_t, int, double>, CommWork> collectives_;
  std::map<std::tuple<int64_t, size_t, size_t, int64_t, double>, CommWork> messages_;
};

} // namespace gputwin::sim
