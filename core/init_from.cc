// model.init_from; see init_from.h.
#include "core/init_from.h"

#include <fmt/format.h>

#include <cmath>

#include "core/check.h"
#include "core/safetensors.h"

namespace fedpar {

std::filesystem::path init_from_file(const std::string& init_from) {
  const std::filesystem::path p(init_from);
  if (std::filesystem::is_directory(p)) {
    const auto file = p / "model.safetensors";
    if (!std::filesystem::exists(file))
      throw Error(fmt::format(
          "model.init_from: {} holds no model.safetensors (a run writes it when it finishes; a "
          "snapshot under params/ serves too)",
          p.string()));
    return file;
  }
  if (!std::filesystem::exists(p))
    throw Error(fmt::format(
        "model.init_from: {} does not exist (give a .safetensors file or a results folder "
        "holding model.safetensors)",
        p.string()));
  return p;
}

std::string started_from_line(const std::string& init_from, const std::string& hash) {
  return fmt::format(
      "- started from the parameters in `{}` (`model.init_from`, hash {}), not from a random "
      "init: its steps, learning-rate schedule and optimizer state begin anew\n",
      init_from, hash);
}

void init_model(Model& model, const ModelSpec& spec, uint64_t seed) {
  if (spec.init_from.empty()) {
    model.init(seed);
    return;
  }
  const auto file = init_from_file(spec.init_from);
  // fedpar writes the model's name beside its tensors: a mismatch is said in those words
  // rather than as the first tensor that does not fit.
  const TensorFile saved = load_safetensors(file);
  if (const auto it = saved.metadata.find("model");
      it != saved.metadata.end() && it->second != spec.name)
    throw Error(fmt::format("model.init_from: {} holds a '{}' model; this one is '{}'",
                            file.string(), it->second, spec.name));
  const std::vector<float> params = load_params(saved, file, model.layout());
  // a diverged model (fedpar train before it stopped at the first NaN saved one) would fail the
  // first round with a cause far from here
  for (const auto& v : model.layout().views())
    for (size_t i = 0; i < v.size; ++i)
      if (!std::isfinite(params[v.offset + i]))
        throw Error(fmt::format(
            "model.init_from: {} holds a value that is not finite ({}) in tensor '{}' at index "
            "{}: a diverged model cannot be trained on; start from another",
            file.string(), params[v.offset + i], v.name, i));
  model.set_params_host(params);
}

}  // namespace fedpar
