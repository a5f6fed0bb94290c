#ifndef TESSERA_LAUNCH_MPS_DAEMON_H_
#define TESSERA_LAUNCH_MPS_DAEMON_H_

// The MPS control daemon of one GPU (issue 31, "Isolation, checked and
// managed"). CUDA_MPS_ACTIVE_THREAD_PERCENTAGE and
// CUDA_MPS_PINNED_DEVICE_MEM_LIMIT hold only for clients of a running
// control daemon (measured on an H100: with one, a 4 GiB allocation over a
// 2 GiB cap failed and a 25% share gave 21% of the GEMM throughput;
// without, the same variables changed nothing). The local launcher runs
// one daemon per GPU it owns, each with its own pipe and log directories,
// checks it before every fractional start and starts it again if it died.
//
// The daemon is driven through its control program
// (nvidia-cuda-mps-control): `-d` starts it, "get_server_list" on stdin
// answers only while it runs, "quit" stops it. Tests give a fake control
// program of their own.

#include <map>
#include <string>

#include "common/result.h"

namespace tessera::launch {

struct MpsOptions {
  std::string control = "nvidia-cuda-mps-control";  // searched in PATH
  // Its pipe and log directories are made under this one (pipe/, log/).
  std::string dir;
  // The GPUs it serves, as CUDA_VISIBLE_DEVICES names them ("0", "0,1", a
  // UUID); "" = every GPU of the machine (the local launcher's choice).
  std::string gpu;
  double timeout_s = 10;  // each control call, and the wait for a start
};

class MpsDaemon {
 public:
  explicit MpsDaemon(MpsOptions options);

  // What a job's processes need to be its clients: the pipe and log
  // directories (and the GPU, as the daemon sees it).
  std::map<std::string, std::string> ClientEnv() const;
  // Whether the daemon answers now.
  bool Alive() const;
  // Running after the call: it answers, or it is started and answers
  // within timeout_s. kUnavailable saying why not (the control program
  // missing, failing, or the daemon silent after its start).
  Status Ensure();
  // Asks it to quit (nothing if it does not run).
  Status Stop();
  // Times Ensure found it gone after it had run, and started it again.
  int restarts() const { return restarts_; }

 private:
  std::map<std::string, std::string> Env() const;
  std::string What() const;  // "the MPS control daemon (DIR)", for errors

  MpsOptions options_;
  bool started_ = false;
  int restarts_ = 0;
};

}  // namespace tessera::launch

#endif  // TESSERA_LAUNCH_MPS_DAEMON_H_
