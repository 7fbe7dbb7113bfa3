// axiom graph --config P: the graph of one training step of a preset, drawn (autograd/graph.h).
// The forward pass of the model's loss on a batch of random images, which is the graph that the
// step's backward pass walks: every op a box (a fused op one box), every parameter an ellipse under
// its module's name. With --gradient, the graph of the loss's gradient as well (recorded with
// create_graph, its ops filled orange): what a second derivative differentiates. With --collapse 1,
// each Transformer block is one box (the models record each in a NameScope of its module name).
#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <iostream>

#include "apps/commands.h"
#include "autograd/factory.h"
#include "autograd/graph.h"
#include "core/error.h"
#include "models/config.h"
#include "models/image_model.h"

namespace axiom::apps {

namespace {

// The loss of one batch of random images, with a graph: a scalar.
Tensor loss_of_a_batch(const models::ImageModel& model, const models::ImageModelConfig& config, int64_t batch,
                       Generator& gen) {
  const Shape shape = config.channels == 1 ? Shape{batch, config.height, config.width}
                                           : Shape{batch, config.channels, config.height, config.width};
  return model.loss(randint(shape, 0, 256, gen).to(Dtype::uint8), gen);
}

// The picture's format, from the file's name: "" for DOT text, else what `dot -T` is given.
std::string format_of(const std::string& path) {
  const std::string extension = std::filesystem::path(path).extension().string();
  if (extension == ".dot" || extension == ".gv") return "";
  if (extension == ".svg" || extension == ".png" || extension == ".pdf") return extension.substr(1);
  throw Error("graph", "--out '", path, "': name a .dot, .gv, .svg, .png or .pdf file");
}

void write_graph(const std::string& dot, const std::string& path) {
  if (path.empty()) {
    std::cout << dot;
    return;
  }
  if (std::filesystem::exists(path)) throw Error("graph", "'", path, "' exists; axiom writes a new file only");
  const std::string format = format_of(path);
  if (format.empty()) {
    std::ofstream out(path);
    if (!(out << dot) || !out.flush()) throw Error("graph", "cannot write '", path, "'");
    return;
  }
  // The path reaches dot through the environment, never through the shell's parsing: a name
  // with quotes or `$(...)` in it is a name, not a command.
  ::setenv("AXIOM_GRAPH_OUT", path.c_str(), 1);
  const std::string command = "dot -T" + format + " -o \"$AXIOM_GRAPH_OUT\"";
  FILE* dot_program = ::popen(command.c_str(), "w");
  if (!dot_program) throw Error("graph", "cannot start Graphviz's dot (apt-get install graphviz)");
  const bool written = std::fwrite(dot.data(), 1, dot.size(), dot_program) == dot.size();
  const int status = ::pclose(dot_program);
  if (!written || status != 0) {
    throw Error("graph", "Graphviz's dot could not draw '", path, "' (exit status ", status,
                "; dot's own message is above; without dot: apt-get install graphviz)");
  }
}

}  // namespace

int graph(const GraphCommand& command) {
  const models::ImageModelConfig config = models::load_config(command.config);
  Generator gen(command.seed);
  const std::unique_ptr<models::ImageModel> model = models::make_image_model(config, gen);
  const Tensor loss = loss_of_a_batch(*model, config, command.batch, gen);
  const nn::NamedParameters parameters = model->named_parameters();
  std::vector<Tensor> drawn = {loss};
  if (command.gradient) {
    std::vector<Tensor> weights;
    for (const auto& [name, parameter] : parameters) weights.push_back(parameter);
    drawn = grad({loss}, weights, {}, {.create_graph = true, .allow_unused = true});
    std::erase_if(drawn, [](const Tensor& g) { return !g.defined(); });
  }
  write_graph(to_dot(drawn, parameters, {.collapse = command.collapse}), command.out);
  if (!command.out.empty()) std::fprintf(stderr, "graph: wrote %s\n", command.out.c_str());
  return 0;
}

}  // namespace axiom::apps
