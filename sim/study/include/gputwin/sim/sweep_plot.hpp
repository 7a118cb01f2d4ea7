#pragma once
// `gputwin sweep --plot FILE`: throughput, MFU, time to train (else iteration time) and cost (else GPU-hours, else
// GPU-seconds per iteration) against the GPU count, one line per (cluster, model), drawn by gnuplot as PNG or SVG.

#include "gputwin/sim/sweep_csv.hpp"

#include <string>
#include <vector>

namespace gputwin::sim {

// The gnuplot script of the plot of `rows` (time to train and cost where the first row has them): one data block per
// (cluster, model) series, then the four panels, the image (`svg`, else PNG) on standard output.
std::string sweep_plot_script(const std::vector<SweepRow>& rows, bool svg);

// Runs gnuplot on `script` (its standard input) and returns what it wrote on standard output: the image. No shell
// and no files under a name: gnuplot dies with this process (PR_SET_PDEATHSIG; Ctrl-C kills it through
// common/interrupt.hpp), and what it was given and wrote vanishes with it. Throws OutputError "--plot: ..." when
// gnuplot cannot be started, fails (its first line of errors) or writes nothing.
std::string run_gnuplot(const std::string& script);

// The plot of `rows` drawn by gnuplot (run_gnuplot) and written to `path` atomically: SVG for a path ending in .svg,
// else PNG.
void write_sweep_plot(const std::string& path, const std::vector<SweepRow>& rows);

} // namespace gputwin::sim
