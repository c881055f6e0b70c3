// ParamLayout; see params.h.
#include "core/params.h"

#include <fmt/format.h>

#include "core/check.h"

namespace fedpar {

size_t ParamLayout::add(std::string name, std::vector<int64_t> shape) {
  for (const auto& v : views_) FEDPAR_CHECK(v.name != name) << "duplicate parameter " << name;
  size_t size = 1;
  for (int64_t d : shape) {
    FEDPAR_CHECK(d > 0) << "bad dimension in " << name;
    size *= size_t(d);
  }
  views_.push_back({std::move(name), std::move(shape), total_, size});
  total_ += size;
  return views_.back().offset;
}

const ParamView& ParamLayout::find(const std::string& name) const {
  for (const auto& v : views_)
    if (v.name == name) return v;
  throw Error(fmt::format("no parameter named '{}'", name));
}

}  // namespace fedpar
