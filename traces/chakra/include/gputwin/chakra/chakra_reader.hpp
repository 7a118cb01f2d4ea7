#pragma once
// Chakra execution traces read into an op graph (traces/chakra/README.md, "Import"), in two forms:
//   - the PyTorch / Chakra host execution trace, JSON (`torch.profiler.ExecutionTraceObserver`, schema
//     "1.0.2-chakra.0.0.4" and its neighbours): one rank's operator tree. The host ET records what ran and on
//     which tensors, not how long it took, so compute ops carry a duration only when a node has `dur`; the
//     others carry FLOPs (recognised GEMM-like aten ops, from their tensor shapes) or bytes (other kernels on
//     CUDA tensors) for the GPU compute model. Collectives come from the c10d / record_param_comms nodes.
//   - Chakra protobuf ET (`.et`, schema et_def.proto 0.0.4, what `gputwin simulate --chakra` writes): one file
//     per rank, read with its sibling rank files and the `<prefix>.comm_groups.json` next to it.
// What each node became (timed by duration, by FLOPs, by bytes; collective; ignored and why) is counted in
// ChakraImportStats so that `gputwin replay` can say it. Plain C++ + libprotobuf (no SimGrid, no models).

#include "gputwin/traces/op_graph.hpp"

#include <cstdint>
#include <map>
#include <string>
#include <string_view>

namespace gputwin::chakra {

enum class ChakraInput { PytorchHostJson, ProtobufEt };

std::string to_string(ChakraInput input); // "pytorch-et-json", "chakra-et"

// How the nodes of the file(s) were used. Every node is counted once: as an op, as a dependency-only node
// (`waits`), as structure (roots, annotations, ops whose children were read instead), or as ignored.
struct ChakraImportStats {
  int64_t nodes = 0;             // nodes in the file(s)
  int64_t timed_by_duration = 0; // compute/memcpy ops with a recorded duration (`dur`, `duration_micros`)
  int64_t timed_by_flops = 0;    // recognised GEMM-like ops: FLOPs, GEMM shape and bytes from tensor shapes
  int64_t timed_by_bytes = 0;    // other kernels: bytes of their tensors (ET JSON) or `tensor_size` (.et)
  int64_t memcpys = 0;           // host<->device copies (of the ops above)
  int64_t collectives = 0;
  int64_t sends = 0, recvs = 0;
  int64_t waits = 0;           // waits on a collective: dependencies of the compute after them
  int64_t structure = 0;       // roots, annotations, wrappers whose children were read
  double flops = 0;            // over all compute ops
  double collective_bytes = 0; // over all collectives (nccl-tests sizes)
  // reason -> node name -> count: everything that became no op.
  std::map<std::string, std::map<std::string, int64_t>> ignored;

  int64_t ignored_nodes() const;
  int64_t compute_ops() const { return timed_by_duration + timed_by_flops + timed_by_bytes; }
};

struct ChakraTrace {
  std::string source;
  ChakraInput input = ChakraInput::PytorchHostJson;
  std::string schema; // "1.0.2-chakra.0.0.4" (ET JSON `schema`), "0.0.4" (.et GlobalMetadata version)
  int32_t rank = 0;   // the rank the (first) file describes
  int32_t world_size = 1;
  // One program per rank file read (ET JSON: one). Groups list their full membership: a member without a
  // program is not simulated (its side of a collective is taken to arrive with the simulated members', as
  // in a folded workload), so the graph validates only over the ranks it has (sim::check_chakra_graph).
  // Compute ops: stream 0; collectives: stream 1; sends/receives: stream 2 (a .et written by gputwin keeps
  // its own streams). Ops without a recorded duration have duration_ns -1.
  traces::OpGraph graph;
  ChakraImportStats stats;
};

// True when `text` is a JSON object that looks like a PyTorch execution trace: a "schema" member in its first
// 4 KiB (the observer writes it first; a gputwin op graph has none).
bool is_pytorch_et_json(std::string_view text);

// True when `path` names a Chakra protobuf ET (ends in ".et").
bool is_chakra_et_path(std::string_view path);

// Parses a PyTorch / Chakra host execution trace. Throws traces::TraceError "SOURCE: ..." naming what is
// missing (no nodes array, a node without id/name/ctrl_deps, malformed inputs) or "SOURCE:LINE:COLUMN: ..."
// for JSON syntax.
ChakraTrace parse_pytorch_et(std::string_view json_text, const std::string& source);

// Parses one Chakra protobuf ET stream (a GlobalMetadata, then Nodes, each length-delimited) as rank
// `default_rank` unless its metadata names a rank. `comm_groups` maps pg_name to ranks (empty: every
// collective on the world group {rank}). Throws traces::TraceError "SOURCE: ..." on a truncated stream, an
// unknown node type or collective type, a missing attribute, a dependency on no node, a cycle.
ChakraTrace parse_chakra_et(std::string_view bytes, const std::string& source, int32_t default_rank,
                            const std::map<std::string, std::vector<int32_t>>& comm_groups = {});

// Reads `path` (`DIR/<prefix>.<rank>.et`) with every sibling `DIR/<prefix>.<r>.et` and `DIR/<prefix>.comm_groups.json`
// when present: one program per file, groups from the communicator file (a pg_name it does not list: all the
// ranks read). `text`: the content of `path` already read (empty: read it). Throws traces::TraceError.
ChakraTrace read_chakra_et(const std::string& path, std::string_view text = {});

} // namespace gputwin::chakra
