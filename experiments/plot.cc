// draw_line_plot; see plot.h.
#include "experiments/plot.h"

#include <fmt/format.h>

#include <algorithm>
#include <cmath>
#include <cstdlib>
#include <fstream>

namespace fedpar {
namespace {

// gnuplot strings are single-quoted; a quote inside is doubled.
std::string quoted(const std::string& s) {
  std::string out = "'";
  for (char c : s) out += c == '\'' ? std::string("''") : std::string(1, c);
  return out + "'";
}

// A title may span lines ('\n'): a double-quoted gnuplot string, where \n is a line break.
std::string title_string(const std::string& s) {
  std::string out = "\"";
  for (char c : s)
    out += c == '\n'               ? std::string("\\n")
           : c == '"' || c == '\\' ? std::string("\\") + c
                                   : std::string(1, c);
  return out + "\"";
}

}  // namespace

bool draw_line_plot(const std::filesystem::path& svg, const LinePlot& plot, std::string* why) {
  const std::filesystem::path dat = svg.string() + ".dat", gp = svg.string() + ".gp";
  {
    std::ofstream d(dat);
    for (const auto& s : plot.series) {  // one block per series, two blank lines apart
      d << "# " << s.label << "\n";
      const bool band = s.lo.size() == s.y.size() && s.hi.size() == s.y.size();
      for (size_t i = 0; i < s.x.size() && i < s.y.size(); ++i) {
        if (!std::isfinite(s.x[i]) || !std::isfinite(s.y[i])) continue;  // a value not measured
        d << s.x[i] << " " << s.y[i];
        if (band) d << " " << s.lo[i] << " " << s.hi[i];
        d << "\n";
      }
      d << "\n\n";
    }
  }
  // The script names its files relative to its own folder (it runs there), so it still works after
  // the results folder is moved or renamed.
  std::ofstream g(gp);
  g << "set terminal svg size 800,500 dynamic enhanced font 'sans,12' background rgb 'white'\n"
    << "set output " << quoted(svg.filename().string()) << "\n"
    << "set title " << title_string(plot.title) << " noenhanced\n"
    << "set xlabel " << quoted(plot.xlabel) << " noenhanced\n"
    << "set ylabel " << quoted(plot.ylabel) << " noenhanced\n"
    << "set grid\n";
  // a long label beside the plot would squeeze it to half its width: long ones go below it
  size_t longest = 0;
  for (const Series& s : plot.series) longest = std::max(longest, s.label.size());
  g << (longest > 24 ? "set key below noenhanced\n" : "set key outside right top noenhanced\n");
  // colour-blind-safe colours that show on white (gnuplot's fifth default is a pale yellow)
  const char* colours[] = {"#0072b2", "#d55e00", "#009e73", "#cc79a7",
                           "#e69f00", "#56b4e9", "#000000", "#8c564b"};
  for (int i = 0; i < 8; ++i)
    g << "set linetype " << i + 1 << " lc rgb '" << colours[i] << "' lw 1.5\n";
  g << "set linetype cycle 8\n";
  if (plot.log_x) g << "set logscale x\n";
  // whole x values (rounds, steps) over a short range: gnuplot would tick at 1.5, 2.5, ...
  double lo = 0, hi = 0;
  bool whole = true, any = false;
  for (const Series& s : plot.series)
    for (double x : s.x) {
      whole = whole && x == std::floor(x);
      lo = any ? std::min(lo, x) : x, hi = any ? std::max(hi, x) : x, any = true;
    }
  if (any && whole && !plot.log_x && hi - lo < 10) g << "set xtics 1\n";
  // samples or bytes in the hundreds of thousands: 6-digit tick labels ran into each other
  if (any && !plot.log_x && std::max(std::abs(lo), std::abs(hi)) >= 1e5)
    g << "set format x '%.1s%c'\n";
  if (plot.log_y) g << "set logscale y\n";
  g << "plot ";
  for (size_t i = 0; i < plot.series.size(); ++i) {
    const Series& s = plot.series[i];
    const std::string data = fmt::format("{} index {}", quoted(dat.filename().string()), i);
    if (i) g << ", ";
    if (!s.lo.empty() && s.lo.size() == s.y.size())
      g << data << " using 1:3:4 with filledcurves fs transparent solid 0.2 noborder lc " << i + 1
        << " notitle, ";
    // gnuplot cycles 8 colours; each series has its own dash and point shape as well, so one
    // drawn over another (two runs that trained alike) still shows. The shapes shift by one
    // every 8 series: no two of the first 64 have both colour and shape alike.
    const int points[] = {7, 5, 9, 11, 13, 4, 6, 8};
    if (s.points_only)
      g << data << " using 1:2 with points pt 7 ps 1.2 lc " << i + 1;
    else
      g << data << " using 1:2 with linespoints pt " << points[(i + i / 8) % 8] << " ps 0.5 lc "
        << i + 1 << " dt " << i % 5 + 1;
    g << " title " << quoted(s.label);
  }
  g << "\n";
  g.close();
  const std::string cmd = fmt::format(
      "cd {} && gnuplot {} 2>{}.err", quoted(std::filesystem::absolute(svg).parent_path().string()),
      quoted(gp.filename().string()), quoted(svg.filename().string()));
  if (std::system("command -v gnuplot >/dev/null 2>&1") != 0) {
    if (why) *why = "gnuplot is not installed (scripts/setup.sh installs gnuplot-nox)";
    return false;
  }
  if (std::system(cmd.c_str()) != 0) {
    if (why) *why = fmt::format("gnuplot failed; see {}.err", svg.string());
    return false;
  }
  std::filesystem::remove(svg.string() + ".err");
  return true;
}

std::string readme_plot(const std::filesystem::path& run_dir, const std::string& file,
                        const std::string& what, const std::string& by, const LinePlot& plot) {
  std::string why;  // the data and script stay: gnuplot, once installed, draws them there
  return draw_line_plot(run_dir / "plots" / file, plot, &why)
             ? fmt::format("![{} by {}](plots/{})\n\n", what, by, file)
             : fmt::format("(no plot of the {}: {}; then `cd plots && gnuplot {}.gp` draws it)\n\n",
                           what, why, file);
}

}  // namespace fedpar
