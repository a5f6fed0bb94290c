// ONNX shape inference, run so that it cannot take tessera down.
//
// ONNX 1.12's C++ shape inference crashes (SIGSEGV) on some corrupted models
// (fuzzing the zoo found, e.g., a Concat feeding Reshape a 10^14 extent, and
// unknown operators of the standard domain). Bad input must give an error or
// a warning, never a crash, so inference runs in a forked child that sends
// the inferred types back through a pipe; if the child dies, the model loads
// without inferred shapes and a warning says why. See docs/graph.md, step 4.
#include <sys/wait.h>
#include <unistd.h>

#include <cerrno>
#include <csignal>
#include <cstring>

#include <onnx/defs/schema.h>
#include <onnx/shape_inference/implementation.h>

#include "graph/onnx_internal.h"

namespace tessera::graph::internal {
namespace {

// Inference in this process: unknown operators hidden, and a second attempt
// without the file's stored shapes when they conflict with inferred ones
// (ONNX stops at the first merge conflict even in its lenient mode).
void InferInProcess(onnx::ModelProto* model,
                    std::vector<std::string>* warnings) {
  // error_mode 0 skips nodes whose inference fails; data propagation lets
  // Shape -> Gather -> Concat -> Reshape chains produce concrete shapes.
  const onnx::ShapeInferenceOptions options(/*check_type_val=*/false,
                                            /*strict_mode_val=*/0,
                                            /*data_prop_val=*/true);
  const UnknownOperators hidden(model);
  for (int attempt = 0; attempt < 2; ++attempt) {
    try {
      onnx::shape_inference::InferShapes(
          *model, onnx::OpSchemaRegistry::Instance(), options);
      return;
    } catch (const std::exception& e) {
      if (attempt == 1) {
        warnings->push_back(std::string("shape inference stopped early: ") +
                            e.what());
      }
      ClearInferredShapes(model->mutable_graph());
    }
  }
}

// Every graph of the model, main first, then subgraphs depth first in node
// and attribute order: the same order in parent and child.
void AllGraphs(onnx::GraphProto* g, std::vector<onnx::GraphProto*>* out) {
  out->push_back(g);
  for (auto& node : *g->mutable_node()) {
    for (auto& a : *node.mutable_attribute()) {
      if (a.has_g()) AllGraphs(a.mutable_g(), out);
      for (auto& sub : *a.mutable_graphs()) AllGraphs(&sub, out);
    }
  }
}

bool WriteAll(int fd, const std::string& bytes) {
  size_t done = 0;
  while (done < bytes.size()) {
    const ssize_t n = write(fd, bytes.data() + done, bytes.size() - done);
    if (n < 0 && errno == EINTR) continue;
    if (n <= 0) return false;
    done += static_cast<size_t>(n);
  }
  return true;
}

std::string ReadAll(int fd) {
  std::string bytes;
  char buf[1 << 16];
  while (true) {
    const ssize_t n = read(fd, buf, sizeof(buf));
    if (n < 0 && errno == EINTR) continue;
    if (n <= 0) return bytes;
    bytes.append(buf, static_cast<size_t>(n));
  }
}

// The child's answer: per graph, its value_info and outputs, as one
// GraphProto whose nodes carry one subgraph attribute each; the warnings
// (one per line) in its doc_string.
std::string EncodeTypes(onnx::ModelProto* model,
                        const std::vector<std::string>& warnings) {
  std::vector<onnx::GraphProto*> graphs;
  AllGraphs(model->mutable_graph(), &graphs);
  onnx::GraphProto bundle;
  std::string text;
  for (const std::string& w : warnings) text += w + "\n";
  bundle.set_doc_string(text);
  for (onnx::GraphProto* g : graphs) {
    onnx::GraphProto* types = bundle.add_node()->add_attribute()->mutable_g();
    *types->mutable_value_info() = g->value_info();
    *types->mutable_output() = g->output();
  }
  return bundle.SerializeAsString();
}

bool DecodeTypes(const std::string& bytes, onnx::ModelProto* model,
                 std::vector<std::string>* warnings) {
  onnx::GraphProto bundle;
  std::vector<onnx::GraphProto*> graphs;
  AllGraphs(model->mutable_graph(), &graphs);
  if (!bundle.ParseFromString(bytes) ||
      bundle.node_size() != static_cast<int>(graphs.size())) {
    return false;
  }
  for (size_t i = 0; i < graphs.size(); ++i) {
    onnx::GraphProto* types = bundle.mutable_node(static_cast<int>(i))
                                  ->mutable_attribute(0)
                                  ->mutable_g();
    if (types->output_size() != graphs[i]->output_size()) return false;
    graphs[i]->mutable_value_info()->Swap(types->mutable_value_info());
    graphs[i]->mutable_output()->Swap(types->mutable_output());
  }
  const std::string& text = bundle.doc_string();
  for (size_t start = 0, end; start < text.size(); start = end + 1) {
    end = text.find('\n', start);
    warnings->push_back(text.substr(start, end - start));
  }
  return true;
}

}  // namespace

void InferShapes(onnx::ModelProto* model, std::vector<std::string>* warnings) {
  int fds[2];
  if (pipe(fds) != 0) {
    InferInProcess(model, warnings);  // no isolation possible
    return;
  }
  const pid_t pid = fork();
  if (pid < 0) {
    close(fds[0]);
    close(fds[1]);
    InferInProcess(model, warnings);
    return;
  }
  if (pid == 0) {  // child: infer, answer, exit without running destructors
    close(fds[0]);
    // A crash in ONNX kills the child by its signal, as in a plain build:
    // a sanitizer's or libFuzzer's handler inherited from the parent would
    // report the contained crash as the process's own (docs/fuzzing.md).
    for (const int sig : {SIGSEGV, SIGBUS, SIGFPE, SIGILL}) {
      std::signal(sig, SIG_DFL);
    }
    std::vector<std::string> child_warnings;
    InferInProcess(model, &child_warnings);
    _exit(WriteAll(fds[1], EncodeTypes(model, child_warnings)) ? 0 : 1);
  }
  close(fds[1]);
  const std::string bytes = ReadAll(fds[0]);
  close(fds[0]);
  int status = 0;
  while (waitpid(pid, &status, 0) < 0 && errno == EINTR) {
  }
  if (WIFSIGNALED(status)) {
    warnings->push_back(std::string("ONNX shape inference crashed (") +
                        strsignal(WTERMSIG(status)) +
                        ") on this model, which is probably corrupted; "
                        "shapes it would have inferred are unknown");
    return;
  }
  if (!WIFEXITED(status) || WEXITSTATUS(status) != 0 ||
      !DecodeTypes(bytes, model, warnings)) {
    warnings->push_back(
        "shape inference failed in its worker process; "
        "shapes it would have inferred are unknown");
  }
}

}  // namespace tessera::graph::internal
