// `fedpar models`: the model presets and their layers and parameter counts on a given input.
#include <fmt/format.h>

#include "core/backend.h"
#include "core/model.h"
#include "experiments/cli/commands.h"

namespace fedpar {

Action add_models_command(CLI::App& app) {
  auto* cmd =
      app.add_subcommand("models", "list model presets with their layers and sizes (MNIST input)");
  return [cmd] {
    (void)cmd;
    auto be = make_backend("cpu");
    for (const auto& name : model_names()) {
      ModelSpec spec{name, name == "mlp" ? std::vector<int>{100} : std::vector<int>{}};
      Model m(*be, spec, {28, 28, 1}, 10);
      fmt::print("{}{}:\n{}\n\n", name,
                 name == "mlp" ? " (hidden 100; set with --set model.hidden=[200,200], or fedpar "
                                 "train --hidden 200,200)"
                               : "",
                 m.summary());
    }
    return 0;
  };
}

}  // namespace fedpar
