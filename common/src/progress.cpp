#include "gputwin/common/progress.hpp"

#include <unistd.h>

#include <algorithm>
#include <chrono>
#include <cmath>
#include <cstdio>
#include <iostream>

namespace gputwin {

std::string format_duration(double seconds)
{
  const long long s = std::isfinite(seconds) && seconds > 0 ? std::llround(seconds) : 0;
  char text[32];
  if (s < 60)
    std::snprintf(text, sizeof text, "%llds", s);
  else if (s < 3600)
    std::snprintf(text, sizeof text, "%lldm%02llds", s / 60, s % 60);
  else
    std::snprintf(text, sizeof text, "%lldh%02lldm", s / 3600, s % 3600 / 60);
  return text;
}

std::string render_progress(const std::string& label, size_t done, size_t total, double elapsed_s, int bar_width)
{
  std::string line = label;
  if (bar_width > 0) {
    const size_t width = static_cast<size_t>(bar_width);
    const size_t filled = total == 0 ? width : std::min(width, done * width / total);
    line += " [" + std::string(filled, '#') + std::string(width - filled, '.') + "]";
  }
  char text[160];
  std::snprintf(text, sizeof text, " %zu/%zu", done, total);
  line += text;
  const bool timed = std::isfinite(elapsed_s) && elapsed_s > 0;
  if (done > 0 && timed) {
    const double rate = static_cast<double>(done) / elapsed_s;
    if (rate >= 1)
      std::snprintf(text, sizeof text, "  %.1f/s", rate);
    else
      std::snprintf(text, sizeof text, "  %.1f s each", elapsed_s / static_cast<double>(done));
    line += text;
  }
  line += "  elapsed " + format_duration(timed ? elapsed_s : 0);
  if (done > 0 && done < total && timed)
    line += "  ETA " + format_duration(static_cast<double>(total - done) * elapsed_s / static_cast<double>(done));
  return line;
}

bool stderr_is_terminal()
{
  return isatty(STDERR_FILENO) != 0;
}

namespace {

double steady_seconds()
{
  return std::chrono::duration<double>(std::chrono::steady_clock::now().time_since_epoch()).count();
}

} // namespace

ProgressBar::ProgressBar(std::string label, bool enabled) : ProgressBar(std::move(label), enabled, Options{}) {}

ProgressBar::ProgressBar(std::string label, bool enabled, Options options)
    : ProgressBar(std::move(label), std::cerr, enabled && stderr_is_terminal(), steady_seconds, options)
{
}

ProgressBar::ProgressBar(std::string label, std::ostream& out, bool draw, Clock clock, Options options)
    : label_(std::move(label)), out_(out), draw_(draw), clock_(std::move(clock)), options_(options)
{
  if (!clock_)
    clock_ = steady_seconds;
  start_s_ = clock_();
}

ProgressBar::~ProgressBar()
{
  try {
    finish();
  } catch (...) { // a destructor must not throw; a failed write to stderr leaves nothing to do
  }
}

void ProgressBar::draw(bool force)
{
  if (!draw_ || finished_)
    return;
  const double now = clock_();
  if (now - start_s_ < options_.delay_s)
    return;
  if (!force && last_draw_s_ >= 0 && now - last_draw_s_ < options_.min_interval_s)
    return;
  std::string line(1, '\r');
  line += render_progress(label_, done_, total_, now - start_s_, options_.bar_width);
  line += "\033[K"; // erase what a longer previous line left
  out_ << line;
  out_.flush();
  shown_ = true;
  last_draw_s_ = now;
}

void ProgressBar::update(size_t done, size_t total)
{
  done_ = done;
  total_ = total;
  draw(done == total);
}

void ProgressBar::tick()
{
  draw(false);
}

void ProgressBar::message(const std::string& line)
{
  const bool was_shown = shown_;
  if (shown_)
    out_ << "\r\033[K";
  out_ << line << "\n";
  out_.flush();
  shown_ = false;
  if (was_shown)
    draw(true);
}

void ProgressBar::finish()
{
  if (finished_)
    return;
  finished_ = true;
  if (shown_) {
    out_ << "\n";
    out_.flush();
    shown_ = false;
  }
}

} // namespace gputwin
