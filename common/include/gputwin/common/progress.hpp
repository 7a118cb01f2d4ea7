#pragma once
// A progress bar on stderr for the long commands (search, sweep; simulate may reuse it): count done/total, rate,
// elapsed time and time left, redrawn in place ("\r", erase to the end of the line). It is drawn only for a
// person: when stderr is a terminal and the command's output is not machine-readable (the caller passes
// `enabled = !json`), so `--json` pipelines, redirected stderr and CI stay silent.
//
//   ProgressBar bar("sweep points", !json);
//   for (...) { ...; bar.update(++done, total); }
//   bar.finish();               // ends the line (also done by the destructor)
//
// Everything that decides what is drawn can be injected (the stream, the clock, "is this a terminal"), and the
// text of one line is a pure function (render_progress), so both are unit-tested. Not thread-safe: callers that
// update from several threads serialise the calls (sim::rank_plans does).

#include <cstddef>
#include <functional>
#include <ostream>
#include <string>

namespace gputwin {

// "4s", "1m05s", "2h03m".
std::string format_duration(double seconds);

// One line: "label [#########...............] 3/8  0.42/s  elapsed 7s  ETA 12s". The rate is per second, or
// "N.N s each" when slower than one a second; the ETA (total - done) / rate is left out before the first item is
// done and once all are. `bar_width` 0 leaves the bar out.
std::string render_progress(const std::string& label, size_t done, size_t total, double elapsed_s, int bar_width = 24);

// Whether stderr is a terminal (isatty).
bool stderr_is_terminal();

class ProgressBar {
public:
  using Clock = std::function<double()>; // seconds, monotonic

  struct Options {
    double delay_s = 0;          // draw nothing until this long after the start (a 1-second `simulate` stays silent)
    double min_interval_s = 0.1; // redraw at most this often, except when the count reaches the total
    int bar_width = 24;
  };

  // The real one: draws on stderr when `enabled` and stderr is a terminal, timed by the steady clock.
  ProgressBar(std::string label, bool enabled);
  ProgressBar(std::string label, bool enabled, Options options);
  // Injected (tests, or another stream): draws on `out` exactly when `draw` is true, timed by `clock`.
  ProgressBar(std::string label, std::ostream& out, bool draw, Clock clock, Options options);
  ProgressBar(const ProgressBar&) = delete;
  ProgressBar& operator=(const ProgressBar&) = delete;
  ~ProgressBar();

  // `done` of `total` items are finished. Redraws (subject to min_interval_s and delay_s).
  void update(size_t done, size_t total);
  // Redraws the last count with the current elapsed time: call it while a long item runs.
  void tick();
  // Prints `line` (a warning) on its own line without mixing it into the bar: clears the bar, writes the line and
  // a newline, and lets the next update redraw. Written even when the bar is not drawn (to the same stream).
  void message(const std::string& line);
  // Ends the bar's line with a newline if anything was drawn; draws nothing afterwards.
  void finish();

  bool enabled() const { return draw_; }
  // Whether a bar has been drawn and not yet finished.
  bool drawn() const { return shown_; }

private:
  void draw(bool force);

  std::string label_;
  std::ostream& out_;
  bool draw_;
  Clock clock_;
  Options options_;
  double start_s_ = 0, last_draw_s_ = -1;
  size_t done_ = 0, total_ = 0;
  bool shown_ = false, finished_ = false;
};

} // namespace gputwin
