#pragma once
// A measured GEMM throughput table of one GPU and one data type: achieved FLOP/s of (batch, m, n, k) products
// on a full grid per batch, and the interpolation that generalises it to shapes nobody measured.
//
// File (CSV; '#' lines are comments and say where the numbers come from):
//   batch,m,n,k,flops_per_s
//   1,256,256,256,6452775384615
// Every row is b independent m x n x k products (2 b m n k FLOPs) and the FLOP/s they achieved. For each batch
// the rows must cover the full grid of that batch's distinct m, n and k values (multilinear interpolation
// needs every corner); every batch must use the same grid.
//
// Interpolation (flops_per_s): multilinear in log2 m, log2 n, log2 k of the achieved FLOP/s within one batch
// slice, then linear in log2 batch between the two slices around the batch. It reproduces every table point
// exactly and stays between the corner values of its cell (no overshoot).
// Batches above the table's largest, b > B: the b products run as B products of m b / B rows each -- the same
// output tiles and the same k, which is what a batched GEMM's throughput depends on (in the public H100 table
// b 2 x m 1024 and b 1 x m 2048 agree within 0.1%, b 4 x m 1024 and b 1 x m 4096 within 0.5%).
// Outside the grid (m, n or k beyond its ends) the table is read at the nearest grid edge (`edge`); the GPU
// compute model then scales that value by its analytic curve's ratio between the shape and the edge
// (gpu_compute_model.hpp), so the table and the curve agree at the edge.

#include "gputwin/traces/op_graph.hpp"

#include <istream>
#include <memory>
#include <string>
#include <vector>

namespace gputwin {

// A GEMM problem in table coordinates: real-valued, as batch folding and clamping produce.
struct GemmPoint {
  double m = 0, n = 0, k = 0, batch = 0;
};

class GemmTable {
public:
  // Parses a table; `source` names it in errors. Throws InputError "SOURCE:LINE: FIELD: ..." for a bad row,
  // a duplicate, a missing grid point or an empty table.
  static GemmTable parse(std::istream& in, const std::string& source);

  // Reads and parses the file at `path`. Throws InputError when it cannot be read or is invalid.
  static GemmTable load(const std::string& path);

  // The point inside the table's range that stands for `shape`: batch folded into m above the largest
  // batch, then every coordinate clamped to the grid's ends. Equal to the shape (as doubles) inside the grid.
  GemmPoint edge(const traces::GemmShape& shape) const;

  // Interpolated achieved FLOP/s at `p`. REQUIRES: p inside the table's range (as edge() returns).
  double flops_per_s(const GemmPoint& p) const;

  // The highest achieved FLOP/s of the table: its large, well-shaped GEMMs.
  double max_flops_per_s() const { return max_flops_per_s_; }

  const std::vector<double>& batches() const { return batches_; }
  const std::vector<double>& ms() const { return ms_; }
  const std::vector<double>& ns() const { return ns_; }
  const std::vector<double>& ks() const { return ks_; }
  const std::string& source() const { return source_; }

private:
  double slice(size_t batch_index, const GemmPoint& p) const; // multilinear in one batch slice
  double at(size_t b, size_t im, size_t in, size_t ik) const;

  std::string source_;
  std::vector<double> batches_, ms_, ns_, ks_; // ascending grid values
  std::vector<double> flops_per_s_;            // [b][m][n][k], row-major
  double max_flops_per_s_ = 0;
};

// A table built into the binary by name ("h100": bf16 GEMMs measured on an H100 SXM, models/compute/data/
// h100_gemm_table.csv), parsed once; nullptr for an unknown name.
std::shared_ptr<const GemmTable> builtin_gemm_table(const std::string& name);

// The names builtin_gemm_table knows, "h100|...", for error messages.
std::string builtin_gemm_table_names();

} // namespace gputwin
