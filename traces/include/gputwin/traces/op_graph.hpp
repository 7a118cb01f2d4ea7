#pragma once
// The op graph: THE intermediate form of a training iteration, shared by the workload generator (ops without
// timings), the engine's tracer (the same ops with measured start and duration) and the simulator (which
// executes either). A run is one program per rank: ops in issue order, each on a stream (ops on one stream
// run in order), with explicit dependencies across streams, FLOPs and bytes for the compute model, and
// communication matched across ranks (a collective by group + sequence number, a send with its receive by
// peer + sequence number). Dependency-free: the engine builds it on a GPU machine with nothing but CUDA.

#include "gputwin/traces/collective_op.hpp"
#include "gputwin/traces/interned_name.hpp"

#include <cstdint>
#include <map>
#include <optional>
#include <string>
#include <vector>

namespace gputwin::traces {

inline constexpr int op_graph_format_version = 1;

enum class OpKind { Compute, Collective, Send, Recv, Memcpy };
enum class Phase { Forward, Backward, Recompute, Optimizer };

// Operand format of a GEMM (and of a plan's linear layers), as Transformer Engine's recipes quantize them:
//   Bf16:  2-byte operands, the bf16 tensor-core peak.
//   Fp8:   1-byte E4M3/E5M2 operands with one scale per tensor (TE DelayedScaling), the FP8 peak.
//   Mxfp8: 1-byte E4M3 operands with one E8M0 (1-byte) scale per 32 consecutive elements (TE MXFP8BlockScaling,
//          Blackwell block-scaled tensor cores), the FP8 peak.
//   Nvfp4: 4-bit E2M1 operands with one E4M3 (1-byte) scale per 16 consecutive elements plus one FP32 scale per
//          tensor (TE NVFP4BlockScaling, Blackwell), the FP4 peak.
enum class GemmPrecision : uint8_t { Bf16, Fp8, Mxfp8, Nvfp4 };

// "bf16", "fp8", "mxfp8", "nvfp4".
std::string to_string(GemmPrecision p);
// The spelling above back to the value; nullopt for anything else.
std::optional<GemmPrecision> parse_gemm_precision(const std::string& text);
// Bytes of one element of an operand in this precision, scales included: 2, 1, 1 + 1/32, 1/2 + 1/16 (the NVFP4
// per-tensor FP32 scale, 4 bytes per tensor, is left out: nothing in a layer is small enough for it to count).
double quantized_element_bytes(GemmPrecision p);

// C(m, n) = A(m, k) B(k, n), `batch` independent products (attention scores are batched over heads).
struct GemmShape {
  int64_t m = 0, n = 0, k = 0, batch = 1;
  // Operand precision (Transformer Engine linear layers): FP8 and MXFP8 timed at the GPU's FP8 peak, NVFP4 at its
  // FP4 peak, bf16 at the bf16 peak.
  GemmPrecision precision = GemmPrecision::Bf16;
  // SMs held back from the GEMM for communication kernels for its whole duration (Transformer Engine's userbuffers
  // overlap with set_sm_margin: the GEMM is launched on sm_count - num_comm_sm SMs); 0: every SM.
  int32_t comm_sms = 0;
  // One kernel per product instead of one grid (Transformer Engine's GroupedLinear: a cuBLAS GEMM per local expert
  // over a few streams), so each of the `batch` products pays a kernel's fixed cost; false: one batched kernel.
  bool grouped = false;
  bool operator==(const GemmShape&) const = default;
};

struct Op {
  int64_t id = 0; // unique within its rank, increasing in issue order
  OpKind kind = OpKind::Compute;
  InternedName name; // "qkv.fwd", "attn.softmax.fwd", "tp.reduce_scatter", "pp.send", "adam" ... (interned_name.hpp)
  Phase phase = Phase::Forward;
  int32_t layer = -1;       // transformer layer (global index); -1 for embedding, loss, optimizer
  int32_t micro_batch = -1; // -1 for once-per-iteration ops (optimizer, DP gradient reduction)
  int32_t chunk = 0;        // model chunk of the stage (interleaved schedule)
  int32_t stream = 0;       // ops on one stream run one after another in id order
  double flops = 0;         // floating-point operations of a compute op
  double bytes = 0;         // compute: HBM bytes read + written; communication: the nccl-tests size
  GemmShape gemm;           // set for GEMMs (m, n, k > 0)
  // Communication ops.
  CollectiveOp collective = CollectiveOp::AllReduce; // Collective only
  int32_t group = -1;                                // Collective: index into OpGraph::groups
  int32_t peer = -1;                                 // Send/Recv: the other rank
  int64_t sequence = -1;     // Collective: n-th op of its group on this rank; Send/Recv: n-th of this (src, dst)
  std::vector<int64_t> deps; // ids of earlier ops of this rank (other streams) that must finish first
  // Measured (engine traces); -1 when not measured.
  int64_t start_ns = -1;
  int64_t duration_ns = -1;

  bool is_communication() const { return kind == OpKind::Collective || kind == OpKind::Send || kind == OpKind::Recv; }
};

// Ranks that take part in one communicator, in rank order of the communicator.
struct CommGroup {
  std::string kind; // "tp", "dp", "pp", "world", ...
  std::vector<int32_t> ranks;
};

struct RankProgram {
  int32_t rank = 0;
  std::vector<Op> ops;
};

struct OpGraph {
  int format_version = op_graph_format_version;
  // What produced the graph: model and plan ("hidden", "tp", "schedule", ...), device, tool version.
  std::map<std::string, std::string> metadata;
  std::vector<CommGroup> groups;
  std::vector<RankProgram> ranks;
  std::vector<double> measured_iteration_s; // engine traces: each measured iteration's wall time
};

std::string to_string(OpKind k); // "compute", "collective", "send", "recv", "memcpy"
std::string to_string(Phase p);  // "forward", "backward", "recompute", "optimizer"
std::optional<OpKind> parse_op_kind(const std::string& text);
std::optional<Phase> parse_phase(const std::string& text);

} // namespace gputwin::traces
