// partition_svg; see plot_svg.h.
#include "partitioners/plot_svg.h"

#include <fmt/format.h>

#include <algorithm>
#include <cmath>

namespace fedpar {
namespace {

// White to dark blue as the share goes from 0 to 1.
std::string shade(double share) {
  const double t = std::clamp(share, 0.0, 1.0);
  auto mix = [&](int hi, int lo) { return int(std::lround(hi + (lo - hi) * t)); };
  return fmt::format("#{:02x}{:02x}{:02x}", mix(255, 8), mix(255, 48), mix(255, 107));
}

std::string text(double x, double y, const std::string& s, const char* anchor = "middle",
                 int size = 12, const char* extra = "") {
  return fmt::format(
      "<text x='{:.1f}' y='{:.1f}' font-size='{}' text-anchor='{}' "
      "font-family='sans-serif'{}>{}</text>\n",
      x, y, size, anchor, extra, s);
}

}  // namespace

std::string partition_svg(const Manifest& m, const std::string& title) {
  const double W = 960, H = 460;
  std::string svg = fmt::format(
      "<svg xmlns='http://www.w3.org/2000/svg' width='{}' height='{}' viewBox='0 0 {} {}'>\n"
      "<rect width='100%' height='100%' fill='white'/>\n",
      W, H, W, H);
  svg += text(W / 2, 24, title, "middle", 16, " font-weight='bold'");

  // Left: heatmap, rows = clients, columns = labels.
  const size_t N = m.clients.size(), L = N ? m.clients[0].label_histogram.size() : 0;
  const double x0 = 70, y0 = 60, pw = 400, ph = 340;
  const double cw = L ? pw / double(L) : pw, rh = N ? ph / double(N) : ph;
  for (size_t c = 0; c < N; ++c) {
    const auto& cl = m.clients[c];
    const double size = double(cl.indices.size());
    for (size_t l = 0; l < L; ++l) {
      const double share = size > 0 ? double(cl.label_histogram[l]) / size : 0;
      if (share == 0) continue;
      svg += fmt::format("<rect x='{:.2f}' y='{:.2f}' width='{:.2f}' height='{:.2f}' fill='{}'/>\n",
                         x0 + double(l) * cw, y0 + double(c) * rh, cw, rh, shade(share));
    }
  }
  svg += fmt::format("<rect x='{}' y='{}' width='{}' height='{}' fill='none' stroke='black'/>\n",
                     x0, y0, pw, ph);
  for (size_t l = 0; l < L; ++l)
    svg += text(x0 + (double(l) + 0.5) * cw, y0 + ph + 16, std::to_string(l));
  svg += text(x0 + pw / 2, y0 + ph + 36, "label");
  svg += text(x0 - 8, y0 + 10, "0", "end");
  svg += text(x0 - 8, y0 + ph, std::to_string(N ? N - 1 : 0), "end");
  svg += fmt::format(
      "<text x='{}' y='{}' font-size='12' text-anchor='middle' font-family='sans-serif' "
      "transform='rotate(-90 {} {})'>client</text>\n",
      x0 - 40, y0 + ph / 2, x0 - 40, y0 + ph / 2);
  svg += text(x0 + pw / 2, y0 - 8, "share of each client's samples per label (white 0, dark 1)",
              "middle", 11);

  // Right: histogram of client sizes.
  const double hx = 560, hy = 60, hw = 360, hh = 340;
  size_t lo = SIZE_MAX, hi = 0;
  for (const auto& c : m.clients)
    lo = std::min(lo, c.indices.size()), hi = std::max(hi, c.indices.size());
  // clients of one size (iid, shards): one bar over that size, not a sliver at a 20-bin edge
  const int bins = hi > lo ? 20 : 1;
  std::vector<int> count(bins, 0);
  for (const auto& c : m.clients) {
    const int b =
        hi > lo ? int(double(c.indices.size() - lo) / double(hi - lo) * (bins - 1e-9)) : 0;
    ++count[size_t(std::clamp(b, 0, bins - 1))];
  }
  const int top = std::max(1, *std::max_element(count.begin(), count.end()));
  for (int b = 0; b < bins; ++b) {
    const double bh = hh * count[size_t(b)] / top;
    svg += fmt::format(
        "<rect x='{:.2f}' y='{:.2f}' width='{:.2f}' height='{:.2f}' fill='#4a7ab5' "
        "stroke='white'/>\n",
        hx + b * hw / bins, hy + hh - bh, hw / bins, bh);
  }
  svg += fmt::format("<rect x='{}' y='{}' width='{}' height='{}' fill='none' stroke='black'/>\n",
                     hx, hy, hw, hh);
  if (bins > 1) {
    svg += text(hx, hy + hh + 16, std::to_string(lo), "start");
    svg += text(hx + hw, hy + hh + 16, std::to_string(hi), "end");
  } else {
    svg += text(hx + hw / 2, hy + hh + 16, std::to_string(N ? lo : 0));
  }
  svg += text(hx + hw / 2, hy + hh + 36, "samples per client");
  svg += text(hx - 6, hy + 10, std::to_string(top), "end");
  svg += text(hx - 6, hy + hh, "0", "end");
  svg += text(hx + hw / 2, hy - 8,
              bins > 1 ? std::string("clients per size bin (20 bins)")
                       : fmt::format("every client holds {} samples", N ? lo : 0),
              "middle", 11);
  svg += text(W / 2, H - 8,
              fmt::format("scheme {} | seed {} | manifest hash {}", m.scheme, m.seed, m.hash),
              "middle", 11);
  return svg + "</svg>\n";
}

}  // namespace fedpar
