#pragma once
// Chakra execution traces (MLCommons Chakra, schema traces/chakra/et_def.proto, version 0.0.4) from an op
// graph: one file per rank program, `<prefix>.<rank>.et`, each a sequence of length-delimited protobuf
// messages (a varint size, then the message): one GlobalMetadata, then one Node per op, in op order. This is
// the form ASTRA-sim's Chakra feeder reads. The mapping is documented in sim/README.md ("Chakra export").
// Plain C++ + libprotobuf: no SimGrid, no models (compute durations come in through a callback).

#include "gputwin/traces/op_graph.hpp"

#include <cstddef>
#include <cstdint>
#include <filesystem>
#include <functional>
#include <iosfwd>
#include <optional>
#include <string>
#include <vector>

namespace gputwin::chakra {

inline constexpr const char* chakra_schema_version = "0.0.4";

// GlobalMetadata attribute (string) naming the convention the file's communicators and collective sizes follow
// (sim/README.md "Chakra export"). "astra-sim": pg_name = group index + 1 (ASTRA-sim reserves 0 for all ranks)
// and an all-gather's comm_size is each rank's share. A file without it (an export of an earlier gputwin): pg_name
// = group index and every comm_size the nccl-tests byte count.
inline constexpr const char* chakra_convention_attr = "comm_convention";
inline constexpr const char* chakra_astra_sim_convention = "astra-sim";

// comm_size of a collective as ASTRA-sim reads it, from its nccl-tests bytes over `group_size` ranks: an
// all-gather's share (ASTRA-sim's ring multiplies it by the group size), every other collective unchanged.
// REQUIRES: group_size > 0.
inline double astra_sim_comm_bytes(CollectiveOp op, double nccl_tests_bytes, size_t group_size)
{
  return op == CollectiveOp::AllGather ? nccl_tests_bytes / static_cast<double>(group_size) : nccl_tests_bytes;
}

// The inverse of astra_sim_comm_bytes: nccl-tests bytes of a collective read from an ASTRA-sim comm_size.
inline double nccl_tests_bytes_from_astra_sim(CollectiveOp op, double comm_size, size_t group_size)
{
  return op == CollectiveOp::AllGather ? comm_size * static_cast<double>(group_size) : comm_size;
}

struct ChakraExportOptions {
  std::string prefix = "workload"; // files are <prefix>.<rank>.et
  // Duration of a compute or memcpy op, seconds (the simulator's compute model); empty: duration_micros 0.
  std::function<double(const traces::Op&)> compute_duration_s;
  // Per-rank weights of an uneven all-to-all (a MoE token exchange under load imbalance: models/token_exchange.hpp);
  // nullopt or empty: an even all-to-all, one ALL_TO_ALL node. Chakra's ALL_TO_ALL has one comm_size, so an uneven
  // one is written as an all-to-all-v: a send to and a receive from every other rank of its group, each of its pair's
  // bytes (traces' all_to_all_pair_bytes).
  std::function<std::optional<AllToAllWeights>(const traces::Op&)> all_to_all_weights;
};

struct ChakraExportSummary {
  std::vector<std::filesystem::path> files; // one per rank program, in the graph's rank order
  std::filesystem::path comm_groups_file;   // <prefix>.comm_groups.json: pg_name -> ranks
  int64_t nodes = 0;                        // Node messages written, all files (a ring exchange is two, an
                                            // all-to-all-v 2 (n - 1))
  int64_t collectives = 0;                  // of which COMM_COLL_NODE
};

// Writes one rank program as a Chakra ET stream. Throws traces::TraceError "chakra export: rank R op ID 'NAME': ..."
// for an op Chakra cannot express (a send/recv collective outside a ring of two ranks or more, an all-to-all-v whose
// weights are not one per rank of a group of two or more) and for what the file
// would not give back as it is (chakra_reader.hpp reads it): a rank or peer from 2^24, a stream from 1024, a layer,
// micro-batch or chunk from 2^24, an id from 2^62, FLOPs or bytes from 2^63, a duration above 2^40 us, a message
// sequence from 2^24, a ring exchange's from 2^30 - 2^24, an all-to-all-v's from 2^30 - 1 (their comm_tags), a name
// or metadata that is not UTF-8 (proto3 strings).
void write_chakra_rank(std::ostream& out, const traces::OpGraph& graph, const traces::RankProgram& program,
                       const ChakraExportOptions& options);

// The Chakra nodes write_chakra_rank writes for `program` (a ring exchange is two, an all-to-all-v 2 (n - 1)).
int64_t chakra_node_count(const traces::OpGraph& graph, const traces::RankProgram& program,
                          const ChakraExportOptions& options);

// Creates `dir` (and parents) if needed and writes every rank program of `graph` plus the communicator file.
// Throws traces::TraceError naming the path when the directory cannot be created or a file cannot be written, and
// write_chakra_rank's errors (checked for every rank before the first file is written, durations apart).
ChakraExportSummary write_chakra_traces(const traces::OpGraph& graph, const std::filesystem::path& dir,
                                        const ChakraExportOptions& options);

// The communicators as ASTRA-sim's --comm-group-configuration JSON: {"<pg_name>": [ranks...], ...}, pg_name =
// group index + 1; groups without ranks are left out.
void write_chakra_comm_groups(std::ostream& out, const traces::OpGraph& graph);

} // namespace gputwin::chakra
