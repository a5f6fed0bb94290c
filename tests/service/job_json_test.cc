// Job JSON: a submission is checked field by field and every rejection
// names the field; the API shape and the store's record carry what
// docs/http_api.md promises, and a record round trips every Job field.
#include "service/wire/job_json.h"

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <string>

namespace tessera::scheduler {

// The service under test (service/).
using service::JobJson;
using service::JobRecordJson;
using service::JobRequestJson;
using service::ParseJobRecord;
using service::ParseJobRequest;
using service::RequestLimits;

namespace {

using nlohmann::json;
using ::testing::HasSubstr;

json Fractional() {
  return json::parse(R"({
    "name": "train", "pool": "a100", "priority": 5, "preemptible": true,
    "command": ["python", "train.py", "--lr", "3e-4"],
    "env": {"FOO": "bar", "_X1": ""},
    "resources": {"gpu_milli": 250, "gpu_memory_mib": 8192,
                  "cpu_milli": 2000, "memory_mib": 16384},
    "time_limit_s": 3600.5
  })");
}

json ByModel() {
  return json::parse(R"({
    "command": ["python", "serve.py"],
    "model": {"path": "models/zoo/gpt2.onnx", "batch": 8, "train": true,
              "dtype": "bf16", "inputs": {"input_ids": [8, 128]}},
    "splittable": false
  })");
}

// The error message of parsing `j`, or "" if it parses.
std::string ErrorOf(const json& j, const RequestLimits& limits = {}) {
  auto r = ParseJobRequest(j, limits);
  if (r) return "";
  EXPECT_EQ(r.error().code, ErrorCode::kBadInput);
  return r.error().message;
}

TEST(ParseJobRequest, ReadsAFractionalSubmission) {
  auto r = ParseJobRequest(Fractional());
  ASSERT_TRUE(r) << r.error().message;
  EXPECT_EQ(r->name, "train");
  EXPECT_EQ(r->pool, "a100");
  EXPECT_EQ(r->priority, 5);
  EXPECT_TRUE(r->preemptible);
  EXPECT_EQ(r->command.size(), 4u);
  EXPECT_EQ(r->env.at("FOO"), "bar");
  ASSERT_TRUE(r->resources);
  EXPECT_EQ(*r->resources, (Resources{0, 250, 8192, 2000, 16384}));
  EXPECT_FALSE(r->model);
  EXPECT_TRUE(r->splittable);  // the default
  EXPECT_DOUBLE_EQ(r->time_limit_s, 3600.5);
}

TEST(ParseJobRequest, ReadsAModelSubmissionWithDefaults) {
  auto r = ParseJobRequest(ByModel());
  ASSERT_TRUE(r) << r.error().message;
  ASSERT_TRUE(r->model);
  EXPECT_EQ(r->model->path, "models/zoo/gpt2.onnx");
  EXPECT_EQ(r->model->batch, 8);
  EXPECT_TRUE(r->model->train);
  EXPECT_EQ(r->model->dtype, "bf16");
  EXPECT_EQ(r->model->inputs.at("input_ids"), (std::vector<int64_t>{8, 128}));
  EXPECT_FALSE(r->splittable);
  EXPECT_EQ(r->pool, "");
  EXPECT_EQ(r->priority, 0);

  json minimal = {{"command", {"x"}}, {"model", {{"path", "m.onnx"}}}};
  auto m = ParseJobRequest(minimal);
  ASSERT_TRUE(m) << m.error().message;
  EXPECT_EQ(m->model->batch, 1);
  EXPECT_FALSE(m->model->train);
}

// A model job's work in steps (the split-or-wait decision's input).
TEST(ParseJobRequest, ReadsAModelJobsWorkInSteps) {
  json j = ByModel();
  j["work"] = {{"steps", 20000}};
  auto r = ParseJobRequest(j);
  ASSERT_TRUE(r) << r.error().message;
  EXPECT_EQ(r->work_steps, 20000);
  EXPECT_EQ(JobRequestJson(*r)["work"]["steps"], 20000);
  EXPECT_FALSE(JobRequestJson(*ParseJobRequest(ByModel()))
                   .contains("work"));  // not given: not shown
  j["work"] = {{"steps", 0}};
  EXPECT_THAT(ErrorOf(j), HasSubstr("work.steps: must be at least 1"));
  j["work"] = {{"steps", 1.5}};
  EXPECT_THAT(ErrorOf(j), HasSubstr("work.steps: must be an integer"));
  j["work"] = {{"seconds", 10}};
  EXPECT_THAT(ErrorOf(j), HasSubstr("seconds"));
  j["work"] = json::object();
  EXPECT_THAT(ErrorOf(j), HasSubstr("work.steps: required"));
  j["work"] = 100;
  EXPECT_THAT(ErrorOf(j), HasSubstr("work: must be an object"));
  json explicit_job = Fractional();
  explicit_job["work"] = {{"steps", 10}};
  EXPECT_THAT(ErrorOf(explicit_job),
              HasSubstr("work: only a model job declares its work"));
}

TEST(ParseJobRequest, WholeGpusNeedNoFraction) {
  json j = {{"command", {"x"}}, {"resources", {{"gpus", 2}}}};
  auto r = ParseJobRequest(j);
  ASSERT_TRUE(r) << r.error().message;
  EXPECT_EQ(r->resources->gpus, 2);
  EXPECT_EQ(r->resources->gpu_milli, 0);
}

TEST(ParseJobRequest, UnknownFieldsAreNamedWithTheKnownOnes) {
  json j = Fractional();
  j["resources"]["gpu_mili"] = 100;
  EXPECT_THAT(ErrorOf(j), HasSubstr("resources.gpu_mili: unknown field; "
                                    "known: gpus, gpu_milli, gpu_memory_mib"));
  j = Fractional();
  j["colour"] = "red";
  EXPECT_THAT(ErrorOf(j), HasSubstr("colour: unknown field; known: name,"));
  j = ByModel();
  j["model"]["bacth"] = 2;
  EXPECT_THAT(ErrorOf(j), HasSubstr("model.bacth: unknown field"));
}

TEST(ParseJobRequest, RejectsWrongTypes) {
  EXPECT_THAT(ErrorOf(json::array()), HasSubstr("request: must be a JSON"));
  json j = Fractional();
  j["name"] = 3;
  EXPECT_THAT(ErrorOf(j), HasSubstr("name: must be a string"));
  j = Fractional();
  j["resources"]["gpu_milli"] = "250";
  EXPECT_THAT(ErrorOf(j), HasSubstr("resources.gpu_milli: must be an integer"));
  j = Fractional();
  j["resources"]["gpu_milli"] = 250.5;
  EXPECT_THAT(ErrorOf(j), HasSubstr("resources.gpu_milli: must be an integer"));
  j = Fractional();
  j["preemptible"] = 1;
  EXPECT_THAT(ErrorOf(j), HasSubstr("preemptible: must be true or false"));
  j = Fractional();
  j["command"] = "python train.py";
  EXPECT_THAT(ErrorOf(j), HasSubstr("command: must be a list"));
  j = Fractional();
  j["command"][1] = 7;
  EXPECT_THAT(ErrorOf(j), HasSubstr("command[1]: must be a string"));
  j = Fractional();
  j["env"]["FOO"] = 1;
  EXPECT_THAT(ErrorOf(j), HasSubstr("env.FOO: must be a string"));
  j = Fractional();
  j["resources"] = nullptr;
  EXPECT_THAT(ErrorOf(j), HasSubstr("resources: must be a JSON object"));
  j = ByModel();
  j["model"]["inputs"]["input_ids"] = 8;
  EXPECT_THAT(ErrorOf(j), HasSubstr("model.inputs.input_ids: must be a list"));
  j = Fractional();
  j["time_limit_s"] = "1h";
  EXPECT_THAT(ErrorOf(j), HasSubstr("time_limit_s: must be a number"));
  j = Fractional();
  j["resources"]["memory_mib"] = 18446744073709551615u;
  EXPECT_THAT(ErrorOf(j), HasSubstr("resources.memory_mib: too large"));
}

TEST(ParseJobRequest, RejectsNegativeAndOversizedNumbers) {
  json j = Fractional();
  j["resources"]["cpu_milli"] = -1;
  EXPECT_THAT(ErrorOf(j), HasSubstr("resources.cpu_milli: must not be "
                                    "negative (got -1)"));
  j = Fractional();
  j["time_limit_s"] = -5;
  EXPECT_THAT(ErrorOf(j), HasSubstr("time_limit_s: must not be negative"));
  j = Fractional();
  j["resources"]["gpu_memory_mib"] = int64_t{17} << 20;  // 17 TiB
  EXPECT_THAT(ErrorOf(j), HasSubstr("resources.gpu_memory_mib: must be at "
                                    "most 16777216"));
  j = Fractional();
  j["resources"]["memory_mib"] = int64_t{1} << 40;
  EXPECT_THAT(ErrorOf(j), HasSubstr("resources.memory_mib: must be at most"));
  j = ByModel();
  j["model"]["batch"] = 0;
  EXPECT_THAT(ErrorOf(j), HasSubstr("model.batch: must be at least 1"));
  j = ByModel();
  j["model"]["inputs"]["input_ids"] = {8, 0};
  EXPECT_THAT(ErrorOf(j), HasSubstr("model.inputs.input_ids[1]: must be at "
                                    "least 1 (got 0)"));
}

TEST(ParseJobRequest, ChecksTheGpuFraction) {
  json j = Fractional();
  j["resources"]["gpu_milli"] = 1001;
  EXPECT_THAT(ErrorOf(j), HasSubstr("resources.gpu_milli: must be at most "
                                    "1000 (got 1001)"));
  j = Fractional();
  j["resources"]["gpu_milli"] = 0;
  EXPECT_THAT(ErrorOf(j), HasSubstr("resources.gpu_milli: must be 1..1000 "
                                    "when gpus is 0"));
  j = Fractional();
  j["resources"].erase("gpu_milli");
  EXPECT_THAT(ErrorOf(j), HasSubstr("resources.gpu_milli: must be 1..1000"));
  j = Fractional();
  j["resources"]["gpus"] = 1;
  EXPECT_THAT(ErrorOf(j), HasSubstr("resources.gpu_milli: cannot be combined "
                                    "with gpus"));
  j = Fractional();
  j["resources"]["gpu_milli"] = 1000;
  EXPECT_EQ(ErrorOf(j), "");
}

TEST(ParseJobRequest, NeedsExactlyOneOfResourcesAndModel) {
  json both = Fractional();
  both["model"] = {{"path", "m.onnx"}};
  EXPECT_THAT(ErrorOf(both), HasSubstr("resources, model: give one"));
  json neither = Fractional();
  neither.erase("resources");
  EXPECT_THAT(ErrorOf(neither), HasSubstr("resources: required"));
  json no_path = ByModel();
  no_path["model"].erase("path");
  EXPECT_THAT(ErrorOf(no_path), HasSubstr("model.path: required"));
  json upload = ByModel();
  upload["model"].erase("path");
  upload["model"]["upload"] = std::string(64, 'f');
  auto by_upload = ParseJobRequest(upload);
  ASSERT_TRUE(by_upload) << by_upload.error().message;
  EXPECT_EQ(by_upload->model->upload, std::string(64, 'f'));
  EXPECT_EQ(JobRequestJson(*by_upload)["model"]["upload"],
            upload["model"]["upload"]);
  EXPECT_EQ(ParseJobRequest(JobRequestJson(*by_upload))->model->upload,
            by_upload->model->upload);
  json path_and_upload = ByModel();
  path_and_upload["model"]["upload"] = std::string(64, 'f');
  EXPECT_THAT(ErrorOf(path_and_upload),
              HasSubstr("model.path, model.upload: give one"));
  upload["model"]["upload"] = "../../etc/passwd";
  EXPECT_THAT(ErrorOf(upload), HasSubstr("model.upload: '../../etc/passwd' is "
                                         "not an upload id"));
  upload["model"]["upload"] = 7;
  EXPECT_THAT(ErrorOf(upload), HasSubstr("model.upload: must be a string"));
  json dtype = ByModel();
  dtype["model"]["dtype"] = "int8";
  EXPECT_THAT(ErrorOf(dtype), HasSubstr("model.dtype: must be one of"));
  // Autocast: bf16 or fp16, kept through the JSON round trip; not beside a
  // dtype, nor another word.
  json amp = ByModel();
  amp["model"].erase("dtype");
  amp["model"]["amp"] = "bf16";
  auto by_amp = ParseJobRequest(amp);
  ASSERT_TRUE(by_amp) << by_amp.error().message;
  EXPECT_EQ(by_amp->model->amp, "bf16");
  EXPECT_EQ(ParseJobRequest(JobRequestJson(*by_amp))->model->amp, "bf16");
  EXPECT_FALSE(
      JobRequestJson(*ParseJobRequest(ByModel()))["model"].contains("amp"));
  amp["model"]["amp"] = "tf32";
  EXPECT_THAT(ErrorOf(amp), HasSubstr("model.amp: must be one of"));
  amp["model"]["amp"] = "fp16";
  amp["model"]["dtype"] = "fp16";
  EXPECT_THAT(ErrorOf(amp), HasSubstr("model.amp, model.dtype: amp keeps"));
  amp["model"]["amp"] = true;
  EXPECT_THAT(ErrorOf(amp), HasSubstr("model.amp: must be a string"));
}

TEST(ParseJobRequest, NeedsAProgramToRun) {
  json j = Fractional();
  j.erase("command");
  EXPECT_THAT(ErrorOf(j), HasSubstr("command: required"));
  j["command"] = json::array();
  EXPECT_THAT(ErrorOf(j), HasSubstr("command: required"));
  j["command"] = {"", "x"};
  EXPECT_THAT(ErrorOf(j), HasSubstr("command[0]: must not be empty"));
}

TEST(ParseJobRequest, EnforcesLimitsAndEnvNames) {
  RequestLimits limits;
  limits.max_string = 8;
  limits.max_command_args = 3;
  limits.max_env = 1;
  json j = Fractional();
  j["name"] = "123456789";
  j["env"] = {{"A", "1"}};
  j["command"] = {"a", "b"};
  EXPECT_THAT(ErrorOf(j, limits), HasSubstr("name: longer than 8 bytes"));
  j["name"] = "12345678";
  EXPECT_EQ(ErrorOf(j, limits), "");
  j["command"] = {"a", "b", "c", "d"};
  EXPECT_THAT(ErrorOf(j, limits), HasSubstr("command: too many arguments "
                                            "(4; at most 3)"));
  j["command"] = {"a", "123456789"};
  EXPECT_THAT(ErrorOf(j, limits), HasSubstr("command[1]: longer than 8"));
  j["command"] = {"a"};
  j["env"] = {{"A", "1"}, {"B", "2"}};
  EXPECT_THAT(ErrorOf(j, limits), HasSubstr("env: too many entries"));
  j["env"] = {{"A", "123456789"}};
  EXPECT_THAT(ErrorOf(j, limits), HasSubstr("env.A: longer than 8"));
  for (const char* bad : {"1X", "A-B", "A=B", "", "A B"}) {
    j = Fractional();
    j["env"] = {{bad, "v"}};
    EXPECT_THAT(ErrorOf(j), HasSubstr("not a valid variable name")) << bad;
  }
}

TEST(JobRequestJson, RoundTripsThroughTheParser) {
  for (const json& in : {Fractional(), ByModel()}) {
    auto r = ParseJobRequest(in);
    ASSERT_TRUE(r) << r.error().message;
    auto again = ParseJobRequest(JobRequestJson(*r));
    ASSERT_TRUE(again) << again.error().message;
    EXPECT_EQ(JobRequestJson(*again), JobRequestJson(*r));
  }
}

Topology OneNode() {
  Topology t;
  t.pools = {"a100"};
  t.nodes.push_back({"node0", "a100", 64000, 256 * 1024, {0, 1}, false});
  t.gpus.push_back({"node0/gpu0", 0, 0, "a100-80gb", 80 * 1024});
  t.gpus.push_back({"node0/gpu1", 0, 1, "a100-80gb", 80 * 1024});
  return t;
}

// A job with every field set to something other than its default.
Job FullJob() {
  Job job;
  job.id = 42;
  job.user = "alice";
  job.request = *ParseJobRequest(Fractional());
  job.demand = Resources{0, 250, 8192, 2000, 16384};
  job.state = JobState::kRunning;
  job.submitted_at = 1795388645.25;  // 2026-11-22T23:04:05.25Z
  job.started_at = 1795388700.125;
  job.finished_at = 1795388800.0625;
  job.exit_code = 3;
  job.reason = "exit code 3";
  job.allocation.node = 0;
  job.allocation.gpus = {{1, 250, 8192}, {0, 100, 1024}};
  job.allocation.cpu_milli = 2000;
  job.allocation.memory_mib = 16384;
  job.allocation.exclusive = true;
  job.plan = {{"devices", {"node0/gpu1", "node0/gpu0"}}, {"parts", 2}};
  job.pid = 12345;
  job.pid_start = 987654321;
  job.restarts = 2;
  job.request.on_oom = "requeue";
  job.usage = MeasuredUse{6500, 4000, 42.5, 17};
  job.oom_requeues = 1;
  job.sized_by = "estimate, raised by 1 measurement";
  return job;
}

TEST(JobJson, HasTheApiShape) {
  const json j = JobJson(FullJob(), OneNode());
  EXPECT_EQ(j["id"], 42);
  EXPECT_EQ(j["name"], "train");
  EXPECT_EQ(j["user"], "alice");
  EXPECT_EQ(j["pool"], "a100");
  EXPECT_EQ(j["state"], "running");
  EXPECT_EQ(j["priority"], 5);
  EXPECT_EQ(j["submitted_at"], "2026-11-22T23:04:05Z");
  EXPECT_EQ(j["exit_code"], 3);
  EXPECT_EQ(j["reason"], "exit code 3");
  EXPECT_EQ(j["request"]["resources"]["gpu_milli"], 250);
  EXPECT_EQ(j["demand"]["gpu_memory_mib"], 8192);
  EXPECT_EQ(j["node"], "node0");
  ASSERT_EQ(j["allocation"].size(), 2u);
  EXPECT_EQ(j["allocation"][0], json({{"gpu", "node0/gpu1"},
                                      {"gpu_milli", 250},
                                      {"gpu_memory_mib", 8192}}));
  EXPECT_EQ(j["plan"]["parts"], 2);
}

TEST(JobJson, NotYetIsNull) {
  Job job;
  job.id = 1;
  job.request = *ParseJobRequest(Fractional());
  const json j = JobJson(job, OneNode());
  EXPECT_EQ(j["state"], "queued");
  EXPECT_TRUE(j["submitted_at"].is_null());
  EXPECT_TRUE(j["started_at"].is_null());
  EXPECT_TRUE(j["finished_at"].is_null());
  EXPECT_TRUE(j["exit_code"].is_null());
  EXPECT_TRUE(j["plan"].is_null());
  EXPECT_TRUE(j["node"].is_null());
  EXPECT_EQ(j["allocation"], json::array());
}

void ExpectSameJob(const Job& a, const Job& b) {
  EXPECT_EQ(a.id, b.id);
  EXPECT_EQ(a.user, b.user);
  EXPECT_EQ(JobRequestJson(a.request), JobRequestJson(b.request));
  EXPECT_EQ(a.request.resources, b.request.resources);
  EXPECT_EQ(a.demand, b.demand);
  EXPECT_EQ(a.state, b.state);
  EXPECT_EQ(a.submitted_at, b.submitted_at);  // exactly: raw numbers
  EXPECT_EQ(a.started_at, b.started_at);
  EXPECT_EQ(a.finished_at, b.finished_at);
  EXPECT_EQ(a.exit_code, b.exit_code);
  EXPECT_EQ(a.reason, b.reason);
  EXPECT_EQ(a.allocation.node, b.allocation.node);
  EXPECT_EQ(a.allocation.gpus, b.allocation.gpus);
  EXPECT_EQ(a.allocation.cpu_milli, b.allocation.cpu_milli);
  EXPECT_EQ(a.allocation.memory_mib, b.allocation.memory_mib);
  EXPECT_EQ(a.allocation.exclusive, b.allocation.exclusive);
  EXPECT_EQ(a.plan, b.plan);
  EXPECT_EQ(a.pid, b.pid);
  EXPECT_EQ(a.pid_start, b.pid_start);
  EXPECT_EQ(a.restarts, b.restarts);
  EXPECT_EQ(a.request.on_oom, b.request.on_oom);
  EXPECT_EQ(a.usage, b.usage);
  EXPECT_EQ(a.oom_requeues, b.oom_requeues);
  EXPECT_EQ(a.sized_by, b.sized_by);
}

TEST(JobRecord, RoundTripsEveryField) {
  const Job job = FullJob();
  // Through text, as the store keeps it.
  auto back = ParseJobRecord(json::parse(JobRecordJson(job).dump()));
  ASSERT_TRUE(back) << back.error().message;
  ExpectSameJob(*back, job);

  Job model_job = FullJob();
  model_job.request = *ParseJobRequest(ByModel());
  model_job.exit_code.reset();
  model_job.plan = nullptr;
  model_job.state = JobState::kPreempted;
  auto back2 = ParseJobRecord(json::parse(JobRecordJson(model_job).dump()));
  ASSERT_TRUE(back2) << back2.error().message;
  ExpectSameJob(*back2, model_job);
  EXPECT_EQ(back2->request.model->inputs, model_job.request.model->inputs);
}

// Issue 31's fields: measured use, out-of-memory requeues, what sized the
// job, and the request's on_oom, through the record's text and back.
TEST(JobRecord, RoundTripsMeasuredUseAndOutOfMemoryFields) {
  const Job job = FullJob();
  const json record = JobRecordJson(job);
  EXPECT_EQ(record["usage"], json({{"peak_mib", 6500},
                                   {"last_mib", 4000},
                                   {"mean_utilization_pct", 42.5},
                                   {"readings", 17}}));
  EXPECT_EQ(record["oom_requeues"], 1);
  EXPECT_EQ(record["sized_by"], "estimate, raised by 1 measurement");
  EXPECT_EQ(record["request"]["on_oom"], "requeue");
  auto back = ParseJobRecord(json::parse(record.dump()));
  ASSERT_TRUE(back) << back.error().message;
  EXPECT_EQ(back->usage, (MeasuredUse{6500, 4000, 42.5, 17}));
  EXPECT_EQ(back->oom_requeues, 1);
  EXPECT_EQ(back->sized_by, "estimate, raised by 1 measurement");
  EXPECT_EQ(back->request.on_oom, "requeue");

  // Their defaults: not written, and read back as defaults.
  Job plain = FullJob();
  plain.usage = {};
  plain.oom_requeues = 0;
  plain.sized_by = "";
  plain.request.on_oom = "";
  const json plain_record = JobRecordJson(plain);
  EXPECT_FALSE(plain_record.contains("usage"));
  EXPECT_FALSE(plain_record.contains("oom_requeues"));
  EXPECT_FALSE(plain_record.contains("sized_by"));
  EXPECT_FALSE(plain_record["request"].contains("on_oom"));
  auto plain_back = ParseJobRecord(plain_record);
  ASSERT_TRUE(plain_back) << plain_back.error().message;
  ExpectSameJob(*plain_back, plain);

  // A record of an older version has none of them.
  json old = JobRecordJson(FullJob());
  for (const char* k : {"usage", "oom_requeues", "sized_by"}) old.erase(k);
  old["request"].erase("on_oom");
  auto old_back = ParseJobRecord(old);
  ASSERT_TRUE(old_back) << old_back.error().message;
  EXPECT_EQ(old_back->usage, MeasuredUse{});
  EXPECT_EQ(old_back->oom_requeues, 0);
  EXPECT_EQ(old_back->sized_by, "");
  EXPECT_EQ(old_back->request.on_oom, "");
}

TEST(JobRecord, RejectsACorruptMeasuredUse) {
  const auto error_of = [](const json& j) -> std::string {
    auto r = ParseJobRecord(j);
    return r ? "" : r.error().message;
  };
  json j = JobRecordJson(FullJob());
  j["usage"]["peak_gib"] = 6;
  EXPECT_THAT(error_of(j), HasSubstr("usage.peak_gib: unknown field"));
  j = JobRecordJson(FullJob());
  j["usage"]["readings"] = "17";
  EXPECT_THAT(error_of(j), HasSubstr("usage.readings: must be an integer"));
  j = JobRecordJson(FullJob());
  j["usage"]["mean_utilization_pct"] = "high";
  EXPECT_THAT(error_of(j),
              HasSubstr("usage.mean_utilization_pct: must be a number"));
  j = JobRecordJson(FullJob());
  j["usage"] = 5;
  EXPECT_THAT(error_of(j), HasSubstr("usage: must be a JSON object"));
  j = JobRecordJson(FullJob());
  j["oom_requeues"] = "once";
  EXPECT_THAT(error_of(j), HasSubstr("oom_requeues: must be an integer"));
  j = JobRecordJson(FullJob());
  j["sized_by"] = 3;
  EXPECT_THAT(error_of(j), HasSubstr("sized_by: must be a string"));
}

TEST(ParseJobRequest, OnOomIsFailOrRequeue) {
  for (const char* value : {"fail", "requeue"}) {
    json j = Fractional();
    j["on_oom"] = value;
    auto r = ParseJobRequest(j);
    ASSERT_TRUE(r) << value << ": " << r.error().message;
    EXPECT_EQ(r->on_oom, value);
    EXPECT_EQ(JobRequestJson(*r)["on_oom"], value);
    auto again = ParseJobRequest(JobRequestJson(*r));
    ASSERT_TRUE(again) << again.error().message;
    EXPECT_EQ(again->on_oom, value);
  }
  // Not given: the pool's default, and not shown.
  auto plain = ParseJobRequest(Fractional());
  ASSERT_TRUE(plain) << plain.error().message;
  EXPECT_EQ(plain->on_oom, "");
  EXPECT_FALSE(JobRequestJson(*plain).contains("on_oom"));

  json j = Fractional();
  j["on_oom"] = "retry";
  EXPECT_THAT(ErrorOf(j),
              HasSubstr("on_oom: must be fail or requeue (got 'retry')"));
  j["on_oom"] = "";
  EXPECT_THAT(ErrorOf(j), HasSubstr("on_oom: must be fail or requeue"));
  j["on_oom"] = "Requeue";
  EXPECT_THAT(ErrorOf(j), HasSubstr("on_oom: must be fail or requeue"));
  j["on_oom"] = true;
  EXPECT_THAT(ErrorOf(j), HasSubstr("on_oom: must be a string"));
  // A model job may ask too.
  json model = ByModel();
  model["on_oom"] = "requeue";
  auto by_model = ParseJobRequest(model);
  ASSERT_TRUE(by_model) << by_model.error().message;
  EXPECT_EQ(by_model->on_oom, "requeue");
}

TEST(JobJson, ShowsUsageOnlyOnceMeasured) {
  Job job = FullJob();
  json j = JobJson(job, OneNode());
  ASSERT_TRUE(j.contains("usage"));
  EXPECT_EQ(j["usage"]["peak_mib"], 6500);
  EXPECT_EQ(j["usage"]["last_mib"], 4000);
  EXPECT_DOUBLE_EQ(j["usage"]["mean_utilization_pct"].get<double>(), 42.5);
  EXPECT_EQ(j["usage"]["readings"], 17);
  EXPECT_EQ(j["oom_requeues"], 1);
  EXPECT_EQ(j["sized_by"], "estimate, raised by 1 measurement");
  EXPECT_EQ(j["request"]["on_oom"], "requeue");
  // Not read yet: no usage, even with numbers left from before.
  job.usage.readings = 0;
  j = JobJson(job, OneNode());
  EXPECT_FALSE(j.contains("usage"));
  job.usage = MeasuredUse{};
  job.oom_requeues = 0;
  job.sized_by = "";
  j = JobJson(job, OneNode());
  EXPECT_FALSE(j.contains("usage"));
  EXPECT_FALSE(j.contains("oom_requeues"));
  EXPECT_FALSE(j.contains("sized_by"));
  // One reading is enough.
  job.usage.readings = 1;
  EXPECT_EQ(JobJson(job, OneNode())["usage"]["readings"], 1);
}

TEST(JobRecord, KeepsWhatASubmissionWouldNotPass) {
  // A record is the service's own state: no limits re-applied on reload.
  Job job;
  job.id = 7;
  job.request.command = {};
  auto back = ParseJobRecord(JobRecordJson(job));
  ASSERT_TRUE(back) << back.error().message;
  EXPECT_FALSE(back->request.resources);
  EXPECT_FALSE(back->request.model);
}

TEST(JobRecord, RejectsACorruptRecord) {
  json j = JobRecordJson(FullJob());
  j["state"] = "sleeping";
  auto r = ParseJobRecord(j);
  ASSERT_FALSE(r);
  EXPECT_THAT(r.error().message, HasSubstr("state: unknown job state"));
  j = JobRecordJson(FullJob());
  j["allocation"]["gpus"][0]["gpu"] = "node0/gpu1";
  r = ParseJobRecord(j);
  ASSERT_FALSE(r);
  EXPECT_THAT(r.error().message,
              HasSubstr("allocation.gpus[0].gpu: must be an integer"));
  j = JobRecordJson(FullJob());
  j.erase("request");
  EXPECT_FALSE(ParseJobRecord(j));
}

}  // namespace
}  // namespace tessera::scheduler
