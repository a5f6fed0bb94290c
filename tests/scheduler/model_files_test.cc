// The model files the queue service reads (ReadModelBytes, SizeModel with
// ModelFiles): only regular files under the model roots, symbolic links
// resolved, one refusal message for everything else, never blocking; and
// StripWeightData, which must leave every estimate as it was.
#include <sys/stat.h>
#include <unistd.h>

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <chrono>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <future>
#include <iostream>
#include <sstream>
#include <thread>

#include "graph/graph.h"
#include "scheduler/model_jobs.h"
#include "tests/testlib/onnx_model_builder.h"
#include "tests/testlib/repo_paths.h"

namespace tessera::scheduler {
namespace {

namespace fs = std::filesystem;
using ::testing::HasSubstr;

const std::string kZoo = std::string(TESSERA_SOURCE_DIR) + "/models/zoo/";
constexpr const char* kKind = "a100-80gb";

std::string ReadAllOf(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  std::ostringstream out;
  out << in.rdbuf();
  return out.str();
}

// Runs `read` on a thread and waits at most 10 s: a read that blocks (a FIFO
// opened without O_NONBLOCK) fails the test instead of hanging it.
Result<std::string> Bounded(const ModelRequest& request,
                            const ModelFiles& files, double* seconds) {
  auto task = std::make_shared<std::packaged_task<Result<std::string>()>>(
      [request, files] { return ReadModelBytes(request, files); });
  std::future<Result<std::string>> result = task->get_future();
  const auto start = std::chrono::steady_clock::now();
  std::thread([task] { (*task)(); }).detach();
  if (result.wait_for(std::chrono::seconds(10)) != std::future_status::ready) {
    ADD_FAILURE() << request.path << ": the read blocked";
    std::_Exit(1);  // the blocked thread cannot be joined
  }
  *seconds =
      std::chrono::duration<double>(std::chrono::steady_clock::now() - start)
          .count();
  return result.get();
}

class ModelFilesTest : public ::testing::Test {
 protected:
  void SetUp() override {
    root_ = dir_.path() / "models";
    fs::create_directories(root_ / "sub");
    fs::copy_file(kZoo + "resnet50.onnx", root_ / "sub" / "resnet50.onnx");
    fs::copy_file(kZoo + "resnet50.onnx", dir_.path() / "outside.onnx");
    files_.roots = {fs::canonical(root_).string()};
  }
  ModelRequest Path(const std::string& path) const {
    ModelRequest r;
    r.path = path;
    return r;
  }
  // Refused at once with the one message.
  void ExpectRefused(const std::string& path) {
    double seconds = 0;
    Result<std::string> bytes = Bounded(Path(path), files_, &seconds);
    ASSERT_FALSE(bytes) << path << " was read";
    EXPECT_EQ(bytes.error().code, ErrorCode::kBadInput);
    EXPECT_EQ(bytes.error().message, NotAModelFileMessage(files_)) << path;
    EXPECT_LT(seconds, 1.0) << path;
  }

  testlib::TempDir dir_;
  fs::path root_;
  ModelFiles files_;
};

TEST_F(ModelFilesTest, AModelInsideTheRootsIsReadAndSized) {
  const std::string path = (root_ / "sub" / "resnet50.onnx").string();
  Result<std::string> bytes = ReadModelBytes(Path(path), files_);
  ASSERT_TRUE(bytes) << bytes.error().message;
  EXPECT_EQ(*bytes, ReadAllOf(path));
  Result<SizedModel> sized = SizeModel(Path(path), kKind, files_);
  ASSERT_TRUE(sized) << sized.error().message;
  Result<SizedModel> direct = SizeModel(Path(path), kKind);
  ASSERT_TRUE(direct);
  EXPECT_EQ(sized->peak_bytes, direct->peak_bytes);
  // Through a link that stays inside, and with dots in the path.
  fs::create_symlink(root_ / "sub" / "resnet50.onnx", root_ / "link.onnx");
  EXPECT_TRUE(ReadModelBytes(Path((root_ / "link.onnx").string()), files_));
  EXPECT_TRUE(ReadModelBytes(
      Path((root_ / "sub" / ".." / "sub" / "resnet50.onnx").string()), files_));
}

TEST_F(ModelFilesTest, EverythingElseIsRefusedAtOnceWithOneMessage) {
  ExpectRefused("/dev/zero");
  ExpectRefused("/etc/passwd");
  ExpectRefused((dir_.path() / "outside.onnx").string());
  ExpectRefused((dir_.path() / "missing.onnx").string());
  ExpectRefused((root_ / "missing.onnx").string());
  ExpectRefused((root_ / "sub").string());  // a directory
  ExpectRefused(root_.string());            // the root itself
  ExpectRefused("sub/resnet50.onnx");       // relative
  ExpectRefused("");
  // A FIFO inside the roots: opening it without O_NONBLOCK would block.
  ASSERT_EQ(mkfifo((root_ / "fifo.onnx").c_str(), 0600), 0);
  ExpectRefused((root_ / "fifo.onnx").string());
  // Links inside the roots that lead out of them.
  fs::create_symlink(dir_.path() / "outside.onnx", root_ / "escape.onnx");
  ExpectRefused((root_ / "escape.onnx").string());
  fs::create_symlink("/dev/zero", root_ / "zero.onnx");
  ExpectRefused((root_ / "zero.onnx").string());
  fs::create_directory_symlink(dir_.path(), root_ / "up");
  ExpectRefused((root_ / "up" / "outside.onnx").string());
  ExpectRefused((root_ / ".." / "outside.onnx").string());
  // A sibling whose name starts like the root's is not inside it.
  fs::create_directories(dir_.path() / "models2");
  fs::copy_file(kZoo + "resnet50.onnx", dir_.path() / "models2" / "m.onnx");
  ExpectRefused((dir_.path() / "models2" / "m.onnx").string());
  // Too big.
  files_.max_model_bytes = 1000;
  ExpectRefused((root_ / "sub" / "resnet50.onnx").string());
  // An unreadable file (root reads everything: only checked as a user).
  if (geteuid() != 0) {
    files_.max_model_bytes = kDefaultMaxModelBytes;
    fs::permissions(root_ / "sub" / "resnet50.onnx", fs::perms::none);
    ExpectRefused((root_ / "sub" / "resnet50.onnx").string());
  }
}

// An existing file and a missing one outside the roots read the same, byte
// for byte: the answer reveals nothing of the server's files.
TEST_F(ModelFilesTest, ExistingAndMissingFilesGetIdenticalMessages) {
  auto existing = ReadModelBytes(Path("/etc/passwd"), files_);
  auto missing = ReadModelBytes(Path("/etc/no-such-file-here"), files_);
  ASSERT_FALSE(existing);
  ASSERT_FALSE(missing);
  EXPECT_EQ(existing.error().message, missing.error().message);
  auto sized = SizeModel(Path("/etc/passwd"), kKind, files_);
  ASSERT_FALSE(sized);
  EXPECT_EQ(sized.error().message, missing.error().message);
  EXPECT_THAT(missing.error().message, HasSubstr("model.path"));
  EXPECT_THAT(missing.error().message, HasSubstr("model_roots"));
}

TEST_F(ModelFilesTest, WithoutRootsNoPathIsReadAndTheMessageSaysHowToEnable) {
  files_.roots.clear();
  for (const std::string& path :
       {(root_ / "sub" / "resnet50.onnx").string(), std::string("/dev/zero")}) {
    auto bytes = ReadModelBytes(Path(path), files_);
    ASSERT_FALSE(bytes);
    EXPECT_THAT(bytes.error().message, HasSubstr("model_roots"));
    EXPECT_THAT(bytes.error().message, HasSubstr("upload"));
  }
}

// A file inside the roots that is no ONNX model fails to parse, naming the
// field.
TEST_F(ModelFilesTest, AFileInsideThatIsNoModelFailsToParse) {
  std::ofstream(root_ / "junk.onnx") << "not a model";
  auto sized = SizeModel(Path((root_ / "junk.onnx").string()), kKind, files_);
  ASSERT_FALSE(sized);
  EXPECT_THAT(sized.error().message, HasSubstr("model.path"));
  EXPECT_THAT(sized.error().message, HasSubstr("not an ONNX model"));
}

// External data is never followed: a weight whose data "is" a FIFO (or
// /dev/zero) would block or never end if anything read it.
TEST_F(ModelFilesTest, ExternalDataIsNeverRead) {
  ASSERT_EQ(mkfifo((dir_.path() / "weights.fifo").c_str(), 0600), 0);
  testlib::OnnxModelBuilder b = testlib::SmallCnn(int64_t{1});
  b.AddInitializer(
      "extra", {1024, 1024}, testlib::kFloat,
      testlib::ExternalData{(dir_.path() / "weights.fifo").string()});
  b.AddInitializer("extra2", {1024}, testlib::kFloat,
                   testlib::ExternalData{"/dev/zero"});
  b.WriteTo(root_ / "external.onnx");
  auto sized =
      SizeModel(Path((root_ / "external.onnx").string()), kKind, files_);
  ASSERT_TRUE(sized) << sized.error().message;
  EXPECT_GT(sized->peak_bytes, 4 << 20);  // the 4 MiB weight is counted
}

TEST_F(ModelFilesTest, UploadsAreReadByIdOnly) {
  files_.upload_dir = (dir_.path() / "uploads").string();
  fs::create_directories(files_.upload_dir);
  const std::string id(64, 'a');
  fs::copy_file(kZoo + "resnet50.onnx", files_.upload_dir + "/" + id + ".onnx");
  ModelRequest r;
  r.upload = id;
  auto sized = SizeModel(r, kKind, files_);
  ASSERT_TRUE(sized) << sized.error().message;
  for (const std::string& bad :
       {std::string(64, 'b'), std::string("../../etc/passwd"),
        std::string(63, 'a'), std::string(64, 'A')}) {
    r.upload = bad;
    auto refused = ReadModelBytes(r, files_);
    ASSERT_FALSE(refused) << bad;
    EXPECT_THAT(refused.error().message, HasSubstr("model.upload"));
  }
  EXPECT_TRUE(IsUploadId(id));
  EXPECT_FALSE(IsUploadId(std::string(64, 'g')));
}

// Stripping the weights' data leaves every figure the service uses as it was
// (nodes, weights, the estimator's peak for inference and training), on the
// zoo and on the pretrained models with real weights.
struct Stripped {
  std::string path;
  std::string input;  // --input binding, "" for none
};

std::string Pretrained(const std::string& file) {
  const char* cache = std::getenv("TESSERA_CACHE");
  const char* home = std::getenv("HOME");
  const std::string dir =
      cache ? std::string(cache)
            : std::string(home ? home : ".") + "/.cache/tessera";
  return dir + "/pretrained/" + file;
}

TEST(StripWeightData, EstimatesOfStrippedModelsEqualTheOriginals) {
  const std::vector<Stripped> models = {
      {kZoo + "resnet50.onnx", ""},
      {kZoo + "mobilenet_v2.onnx", ""},
      {kZoo + "inception_v3.onnx", ""},
      {kZoo + "vgg16.onnx", ""},
      {kZoo + "vit_b_16.onnx", ""},
      {kZoo + "gpt2.onnx", ""},
      {kZoo + "bert_base.onnx", "input_ids=1x128"},
      {Pretrained("paddleocr_det.onnx"), "x=1x3x640x640"},
      {Pretrained("paddleocr_cls.onnx"), "x=1x3x48x192"},
      {Pretrained("paddleocr_rec.onnx"), "x=1x3x48x320"},
  };
  testlib::TempDir dir;
  for (const Stripped& m : models) {
    SCOPED_TRACE(m.path);
    ASSERT_TRUE(fs::exists(m.path))
        << "missing: run models/fetch_pretrained.sh (the test script does)";
    const std::string original = ReadAllOf(m.path);
    Result<std::string> stripped = graph::StripWeightData(original, 4096);
    ASSERT_TRUE(stripped) << stripped.error().message;
    EXPECT_LE(stripped->size(), original.size());
    const std::string copy =
        dir.Write(fs::path(m.path).filename().string(), *stripped);
    std::cout << fs::path(m.path).filename().string() << ": " << original.size()
              << " bytes, stripped " << stripped->size() << "\n";
    for (const bool train : {false, true}) {
      ModelRequest r;
      r.train = train;
      if (!m.input.empty()) {
        auto binding = graph::ParseInputBinding(m.input);
        ASSERT_TRUE(binding);
        r.inputs[binding->name] = binding->dims;
      }
      r.path = m.path;
      auto a = SizeModel(r, kKind);
      ASSERT_TRUE(a) << a.error().message;
      r.path = copy;
      auto b = SizeModel(r, kKind);
      ASSERT_TRUE(b) << b.error().message;
      EXPECT_EQ(a->peak_bytes, b->peak_bytes);
      EXPECT_EQ(a->model->graph->num_nodes(), b->model->graph->num_nodes());
      EXPECT_EQ(a->model->weights.bytes, b->model->weights.bytes);
      EXPECT_EQ(a->model->unknown_shapes.size(),
                b->model->unknown_shapes.size());
    }
  }
  // The pretrained models carry real weights: stripping leaves the graph.
  const std::string det = ReadAllOf(Pretrained("paddleocr_det.onnx"));
  auto stripped = graph::StripWeightData(det, 4096);
  ASSERT_TRUE(stripped);
  EXPECT_LT(stripped->size(), det.size() / 4);
  EXPECT_FALSE(graph::StripWeightData("garbage", 4096));
  EXPECT_FALSE(graph::StripWeightData("", 4096));
}

}  // namespace
}  // namespace tessera::scheduler
