// `fedpar models`: the model presets and their layers and parameter counts on a given input.
#include <fmt/format.h>
#include <fmt/ranges.h>

#include "core/backend.h"
#include "core/check.h"
#include "core/layer_stack.h"
#include "core/model.h"
#include "core/stage.h"
#include "core/tensor_shard.h"
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
      fmt::print("{}{}:\n{}\n", name,
                 name == "mlp" ? " (shown with one hidden layer of 100; it has no default widths: "
                                 "give them, --set model.hidden=[200,200] or fedpar train "
                                 "--hidden 200,200)"
                               : "",
                 m.summary());
      // how the model-parallel topologies may split it (docs/pipeline.md)
      const LayerStack stack = build_layer_stack(spec, {28, 28, 1}, 10);
      std::vector<std::string> starts;
      for (size_t i : stage_starts(stack)) starts.push_back(stack.names[i]);
      fmt::print(
          "  pipeline: a stage may start at {} (pipeline.split names the starts after the "
          "first; 1 to {} stages)\n",
          fmt::join(starts, ", "), starts.size());
      try {
        fmt::print("  tensor, 2 ways: {}\n",
                   fmt::join(tensor_split(spec, {28, 28, 1}, 10, 2), "; "));
      } catch (const Error& e) {
        fmt::print("  tensor: {}\n", e.what());
      }
      fmt::print("\n");
    }
    return 0;
  };
}

}  // namespace fedpar
