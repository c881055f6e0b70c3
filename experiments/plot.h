// Line plots for reports, drawn by gnuplot (svg terminal): each plot titled and labelled so it
// stands alone. The data and the gnuplot script are kept beside the SVG, so a reader can restyle.
#pragma once

#include <filesystem>
#include <string>
#include <vector>

namespace fedpar {

struct Series {
  std::string label;
  std::vector<double> x, y;
  std::vector<double> lo, hi;  // optional: a shaded band around y (e.g. min and max over seeds)
  bool points_only = false;    // large points, no line: a few values among a dense series'
};

struct LinePlot {
  std::string title, xlabel, ylabel;  // the title may have line breaks
  bool log_x = false, log_y = false;
  std::vector<Series> series;
};

// Writes `svg` (and svg.dat, svg.gp beside it). Returns false, with `why`, when gnuplot is
// missing or fails; the report then says so instead of showing the plot.
bool draw_line_plot(const std::filesystem::path& svg, const LinePlot& plot, std::string* why);

// Draws `plot` into RUN/plots/FILE for a results folder's README and returns the markdown that
// shows it ("![WHAT by BY](plots/FILE)"), or that says why it is missing and how to draw it.
std::string readme_plot(const std::filesystem::path& run_dir, const std::string& file,
                        const std::string& what, const std::string& by, const LinePlot& plot);

}  // namespace fedpar
