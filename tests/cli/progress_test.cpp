// The progress bar of search and sweep (sim/cli/progress.hpp): the text of one line, and when it is drawn, with
// the stream, the clock and the "is a terminal" decision injected.
#include "gputwin/common/progress.hpp"

#include <gtest/gtest.h>

#include <sstream>
#include <string>

namespace gputwin::cli {
namespace {

TEST(Progress, FormatsDurations)
{
  EXPECT_EQ(format_duration(0), "0s");
  EXPECT_EQ(format_duration(-3), "0s");
  EXPECT_EQ(format_duration(4.4), "4s");
  EXPECT_EQ(format_duration(59.6), "1m00s");
  EXPECT_EQ(format_duration(65), "1m05s");
  EXPECT_EQ(format_duration(3599), "59m59s");
  EXPECT_EQ(format_duration(2 * 3600 + 3 * 60 + 10), "2h03m");
}

TEST(Progress, RendersCountBarRateElapsedAndEta)
{
  // 3 of 8 in 6 s: 0.5/s is slower than one a second, shown as 2.0 s each; 5 left at 2 s each: ETA 10 s.
  EXPECT_EQ(render_progress("sweep points", 3, 8, 6.0, 16),
            "sweep points [######..........] 3/8  2.0 s each  elapsed 6s  ETA 10s");
  // 120 of 400 in 10 s: 12.0/s, 280 left: ETA 23 s.
  EXPECT_EQ(render_progress("estimating plans", 120, 400, 10.0, 8),
            "estimating plans [##......] 120/400  12.0/s  elapsed 10s  ETA 23s");
  // Nothing done yet: no rate and no ETA; all done: no ETA.
  EXPECT_EQ(render_progress("x", 0, 4, 1.0, 4), "x [....] 0/4  elapsed 1s");
  EXPECT_EQ(render_progress("x", 4, 4, 8.0, 4), "x [####] 4/4  2.0 s each  elapsed 8s");
  // No bar; an empty total counts as complete.
  EXPECT_EQ(render_progress("x", 1, 2, 90.0, 0), "x 1/2  90.0 s each  elapsed 1m30s  ETA 1m30s");
  EXPECT_EQ(render_progress("x", 0, 0, 0.0, 2), "x [##] 0/0  elapsed 0s");
}

struct FakeClock {
  double now = 100;
  ProgressBar::Clock clock()
  {
    return [this] { return now; };
  }
};

TEST(Progress, DrawsInPlaceAndEndsTheLine)
{
  std::ostringstream out;
  FakeClock t;
  {
    ProgressBar bar("points", out, true, t.clock(), ProgressBar::Options{0, 0.1, 4});
    bar.update(0, 2);
    t.now += 2;
    bar.update(1, 2);
    EXPECT_TRUE(bar.drawn());
    t.now += 2;
    bar.update(2, 2);
  } // the destructor finishes the line
  EXPECT_EQ(out.str(), "\r"
                       "points [....] 0/2  elapsed 0s\033[K"
                       "\r"
                       "points [##..] 1/2  2.0 s each  elapsed 2s  ETA 2s\033[K"
                       "\r"
                       "points [####] 2/2  2.0 s each  elapsed 4s\033[K"
                       "\n");
}

TEST(Progress, SilentWhenNotDrawn)
{
  // Not a terminal, or --json: nothing at all, not even the final newline.
  std::ostringstream out;
  FakeClock t;
  ProgressBar bar("points", out, false, t.clock(), {});
  bar.update(1, 2);
  bar.tick();
  bar.update(2, 2);
  bar.finish();
  EXPECT_EQ(out.str(), "");
  EXPECT_FALSE(bar.enabled());
}

TEST(Progress, TheRealBarIsSilentWhenDisabledOrNotATerminal)
{
  // Under ctest stderr is a pipe or a file, so even an enabled bar draws nothing; a disabled one never does.
  ProgressBar disabled("points", false);
  EXPECT_FALSE(disabled.enabled());
  ProgressBar enabled("points", true);
  EXPECT_EQ(enabled.enabled(), stderr_is_terminal());
}

TEST(Progress, ThrottlesRedrawsButAlwaysDrawsTheLast)
{
  std::ostringstream out;
  FakeClock t;
  ProgressBar bar("p", out, true, t.clock(), ProgressBar::Options{0, 1.0, 0});
  bar.update(1, 3); // drawn: the first
  t.now += 0.5;
  bar.update(2, 3); // within 1 s of the last draw: skipped
  bar.tick();       // likewise
  t.now += 0.1;
  bar.update(3, 3); // the total reached: drawn whatever the interval
  bar.finish();
  bar.update(3, 3); // after finish: nothing
  EXPECT_EQ(out.str(), "\rp 1/3  elapsed 0s\033[K\rp 3/3  5.0/s  elapsed 1s\033[K\n");
}

TEST(Progress, TickRedrawsTheElapsedTimeOfALongItem)
{
  std::ostringstream out;
  FakeClock t;
  ProgressBar bar("p", out, true, t.clock(), ProgressBar::Options{0, 1.0, 0});
  bar.update(0, 1);
  t.now += 75;
  bar.tick();
  EXPECT_EQ(out.str(), "\rp 0/1  elapsed 0s\033[K\rp 0/1  elapsed 1m15s\033[K");
  bar.finish();
}

TEST(Progress, DelayKeepsShortRunsSilent)
{
  // Options::delay_s: a simulation shorter than the delay draws nothing (for `simulate`'s "longer than ~2 s").
  std::ostringstream out;
  FakeClock t;
  ProgressBar bar("simulating", out, true, t.clock(), ProgressBar::Options{2.0, 0.1, 0});
  bar.update(1, 4);
  t.now += 1.5;
  bar.update(4, 4);
  bar.finish();
  EXPECT_EQ(out.str(), "");

  std::ostringstream slow_out;
  FakeClock slow;
  ProgressBar slow_bar("simulating", slow_out, true, slow.clock(), ProgressBar::Options{2.0, 0.1, 0});
  slow_bar.update(1, 4);
  slow.now += 3;
  slow_bar.update(2, 4);
  slow_bar.finish();
  EXPECT_EQ(slow_out.str(), "\rsimulating 2/4  1.5 s each  elapsed 3s  ETA 3s\033[K\n");
}

TEST(Progress, MessagesDoNotMixWithTheBar)
{
  std::ostringstream out;
  FakeClock t;
  ProgressBar bar("p", out, true, t.clock(), ProgressBar::Options{0, 0.1, 0});
  bar.update(1, 2);
  bar.message("warning: skipped");
  bar.finish();
  EXPECT_EQ(out.str(), "\rp 1/2  elapsed 0s\033[K\r\033[Kwarning: skipped\n\rp 1/2  elapsed 0s\033[K\n");

  std::ostringstream quiet;
  ProgressBar off("p", quiet, false, t.clock(), {});
  off.message("warning: skipped");
  EXPECT_EQ(quiet.str(), "warning: skipped\n") << "a message is written even when the bar is not drawn";
}

} // namespace
} // namespace gputwin::cli
