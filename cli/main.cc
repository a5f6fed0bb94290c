// The `tessera` executable: argument parsing only; each command's work and
// printing lives in its own file. CLI11 is included here and nowhere else
// (it costs ~4 s per translation unit).
#include <CLI/CLI.hpp>
#include <iostream>

#include "cli/inspect.h"
#include "cli/output.h"

namespace {

constexpr const char* kInspectExamples = R"(
Examples:
  tessera inspect models/zoo/resnet50.onnx
  tessera inspect models/zoo/bert_base.onnx --input input_ids=1x128 --json
  tessera inspect models/zoo/gpt2.onnx --batch 8
  tessera inspect models/zoo/resnet50.onnx --dot resnet50.dot && dot -Tsvg -O resnet50.dot

Exit codes: 0 success, 2 bad input (the message names the file and what is
wrong), 1 internal error.)";

void AddInspect(CLI::App& app, tessera::cli::InspectArgs& args) {
  CLI::App* cmd = app.add_subcommand(
      "inspect",
      "Describe an ONNX model: nodes, edges, operators, inputs, "
      "outputs, weights and shapes");
  cmd->footer(kInspectExamples);
  cmd->add_option("model", args.model, "ONNX model file")->required();
  cmd->add_option("--input", args.inputs,
                  "Bind an input's shape, NAME=DxDxD (repeatable)")
      ->type_name("NAME=DIMS");
  cmd->add_option("--batch", args.batch,
                  "Set the leading (batch) dimension of the batched inputs")
      ->type_name("N");
  cmd->add_flag("--json", args.json, "Print one JSON object on stdout");
  cmd->add_option("--dot", args.dot,
                  "Write the graph as Graphviz DOT to FILE ('-': stdout)")
      ->type_name("FILE");
}

}  // namespace

int main(int argc, char** argv) {
  CLI::App app{
      "tessera: split ML models across the residual capacity of "
      "shared GPU clusters"};
  app.set_version_flag("--version", "tessera 0.1.0");
  app.require_subcommand(1);
  app.footer(
      "\nRun 'tessera COMMAND --help' for a command's options and "
      "examples.");
  tessera::cli::InspectArgs inspect;
  AddInspect(app, inspect);
  try {
    app.parse(argc, argv);
  } catch (const CLI::ParseError& e) {
    const int code = app.exit(e);
    return code == 0 ? 0 : tessera::ExitCodeFor(tessera::ErrorCode::kBadInput);
  }
  try {
    if (app.got_subcommand("inspect")) return tessera::cli::RunInspect(inspect);
  } catch (const std::exception& e) {
    return tessera::cli::ReportError(
        tessera::Internal(std::string("unexpected failure: ") + e.what()));
  }
  return 0;
}
