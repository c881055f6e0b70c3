// draw_line_plot; see plot.h.
#include "experiments/plot.h"

#include <cstdlib>
#include <fstream>

#include <fmt/format.h>

namespace fedpar {
namespace {

// gnuplot strings are single-quoted; a quote inside is doubled.
std::string quoted(const std::string& s) {
  std::string out = "'";
  for (char c : s) out += c == '\'' ? std::string("''") : std::string(1, c);
  return out + "'";
}

}  // namespace

bool draw_line_plot(const std::filesystem::path& svg, const LinePlot& plot, std::string* why) {
  const std::filesystem::path dat = svg.string() + ".dat", gp = svg.string() + ".gp";
  {
    std::ofstream d(dat);
    for (const auto& s : plot.series) {  // one block per series, two blank lines apart
      d << "# " << s.label << "\n";
      for (size_t i = 0; i < s.x.size() && i < s.y.size(); ++i) d << s.x[i] << " " << s.y[i] << "\n";
      d << "\n\n";
    }
  }
  std::ofstream g(gp);
  g << "set terminal svg size 800,500 dynamic enhanced font 'sans,12' background rgb 'white'\n"
    << "set output " << quoted(svg.string()) << "\n"
    << "set title " << quoted(plot.title) << " noenhanced\n"
    << "set xlabel " << quoted(plot.xlabel) << " noenhanced\n"
    << "set ylabel " << quoted(plot.ylabel) << " noenhanced\n"
    << "set grid\nset key outside right top noenhanced\n";
  if (plot.log_x) g << "set logscale x\n";
  g << "plot ";
  for (size_t i = 0; i < plot.series.size(); ++i)
    g << (i ? ", " : "") << quoted(dat.string()) << " index " << i << " using 1:2 with linespoints pt 7 ps 0.4 title "
      << quoted(plot.series[i].label);
  g << "\n";
  g.close();
  const std::string cmd = fmt::format("gnuplot {} 2>{}.err", quoted(gp.string()), quoted(svg.string()));
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

}  // namespace fedpar
