#!/usr/bin/env python3
"""Fractions that hold on a real GPU (issue 31): runs `tessera serve` with a
node of isolation mps and checks, with PyTorch jobs, that

  (a) two fractional jobs share one GPU, the one that allocates past its
      memory cap is the one stopped (it ends `oom`), it is requeued once
      with a larger reservation and then completes, and the other succeeds;
  (b) the service's measured peak of a job (usage.peak_mib) is within 5%
      of what the job itself saw: torch.cuda.max_memory_reserved() plus its
      CUDA context;
  (c) a 250-milli share runs a GEMM loop at most ~40% as fast as a
      1000-milli share (the issue's H100 measurement: 21%).

Without PyTorch, a CUDA GPU or nvidia-cuda-mps-control it prints one line
"SKIP: <why>" and exits 0. Otherwise one line per check (PASS/FAIL/SKIP), a
summary, exit 1 if any check failed. Standard library plus torch (in the
jobs only: this process never touches the GPU). tests/gpu/README.md says
how to run it and what it prints.
"""

import argparse
import hashlib
import importlib.util
import json
import os
import re
import secrets
import shutil
import signal
import subprocess
import sys
import tempfile
import time
import urllib.error
import urllib.request

MIB = 1 << 20
TERMINAL = ("succeeded", "failed", "cancelled", "oom")

# The sizes of check (a), in MiB: both jobs get a 4 GiB share; A holds
# 2 GiB, B holds 1 GiB and then asks for 6 GiB more (7 GiB in all, past its
# cap). Requeued, B's reservation must cover that: at least (1 + 6 GiB)
# * 1.05. The service raises it to (its 4 GiB cap + the 6 GiB asked) plus
# the headroom, about 10.5 GiB, which must fit one GPU.
SHARE_MILLI = 400
SHARE_MIB = 4096
A_HOLD_MIB = 2048
B_HOLD_MIB = 1024
B_MORE_MIB = 6144
HEADROOM = 0.05
MIN_GPU_MIB = 14 * 1024  # B's raised share must fit one GPU

PEAK_TOLERANCE = 0.05  # (b)
SHARE_RATIO_MAX = 0.40  # (c): 25% threads, at most 40% of the throughput

TOTAL_BUDGET_S = 240  # the checks; cleanup has its own bounds
HARD_LIMIT_S = 285  # SIGALRM: cleanup still runs, the whole stays < 5 min


# --- the jobs' scripts (written to the temporary directory) --------------

COMMON = r'''
import json, os, subprocess, sys, time
OUT = sys.argv[1]
MIB = 1 << 20
MPS_VARS = ("CUDA_VISIBLE_DEVICES", "CUDA_MPS_PIPE_DIRECTORY",
            "CUDA_MPS_LOG_DIRECTORY", "CUDA_MPS_ACTIVE_THREAD_PERCENTAGE",
            "CUDA_MPS_PINNED_DEVICE_MEM_LIMIT")

def mps_env():
    return {k: os.environ.get(k) for k in MPS_VARS}

def smi_pid_mib():
    """This process's device memory as nvidia-smi (NVML) lists it, MiB;
    None when nvidia-smi is missing or does not list this pid."""
    try:
        r = subprocess.run(["nvidia-smi", "--query-compute-apps=pid,used_memory",
                            "--format=csv,noheader,nounits"],
                           capture_output=True, text=True, timeout=20)
    except Exception:
        return None
    total = None
    for line in r.stdout.splitlines():
        parts = [p.strip() for p in line.split(",")]
        if len(parts) == 2 and parts[0] == str(os.getpid()):
            try:
                total = (total or 0) + int(parts[1])
            except ValueError:
                pass
    return total

def result(**kw):
    print("RESULT " + json.dumps(kw), flush=True)
'''

# Job A: within its cap. Measures its CUDA context, holds 2 GiB for a while
# (long enough for the service's 1 s sampler and for B to run beside it).
JOB_A = COMMON + r'''
import torch
dev = torch.device("cuda")
# The context, and the modules of the kernels used below (lazy loading adds
# them to the context when first used): warm up on a small tensor first.
w = torch.empty(MIB, dtype=torch.uint8, device=dev)
w.fill_(1); w.add_(1); torch.cuda.synchronize()
reserved0 = torch.cuda.memory_reserved() / MIB
smi0 = smi_pid_mib()
if smi0 is not None:
    context_mib, how = smi0 - reserved0, "nvidia-smi per-process memory - memory_reserved"
else:
    free, total = torch.cuda.mem_get_info()
    context_mib = (total - free) / MIB - reserved0
    how = "mem_get_info (total - free) - memory_reserved (approximate: the whole device)"
x = torch.empty(HOLD_MIB * MIB, dtype=torch.uint8, device=dev)
x.fill_(1); x.add_(1); torch.cuda.synchronize()
smi_peak = smi_pid_mib()
open(os.path.join(OUT, "a.ready"), "w").write(str(os.getpid()))
time.sleep(HOLD_S)
result(max_reserved_mib=torch.cuda.max_memory_reserved() / MIB,
       context_mib=context_mib, context_from=how, smi_at_peak_mib=smi_peak,
       env=mps_env(), pid=os.getpid())
'''

# Job B: holds 1 GiB (so the sampler sees it), then asks for 6 GiB more:
# past a 4 GiB cap it must fail with PyTorch's out-of-memory error (left to
# propagate: the traceback on stderr is what the service reads). The same
# script every run, so the raised reservation must cover 7 GiB.
JOB_B = COMMON + r'''
import torch
ready = os.path.join(OUT, "a.ready")
deadline = time.time() + 90
while not os.path.exists(ready) and time.time() < deadline:
    time.sleep(0.2)  # A measures its context before B touches the GPU
def note(**kw):
    with open(os.path.join(OUT, "b.attempts"), "a") as f:
        f.write(json.dumps(dict(kw, pid=os.getpid(), at=time.time())) + "\n")
note(event="start", env=mps_env())
dev = torch.device("cuda")
held = torch.empty(HOLD_MIB * MIB, dtype=torch.uint8, device=dev)
held.fill_(1); torch.cuda.synchronize()
time.sleep(3)
note(event="asking", more_mib=MORE_MIB)
more = torch.empty(MORE_MIB * MIB, dtype=torch.uint8, device=dev)
more.fill_(1); torch.cuda.synchronize()
note(event="done")
result(max_reserved_mib=torch.cuda.max_memory_reserved() / MIB, env=mps_env())
'''

# Jobs F and Q: a GEMM loop for SECONDS, timed after a warm-up.
JOB_GEMM = COMMON + r'''
import torch
dev = torch.device("cuda")
dtype = torch.bfloat16 if torch.cuda.is_bf16_supported() else torch.float32
n = 8192
a = torch.randn(n, n, device=dev, dtype=dtype)
b = torch.randn(n, n, device=dev, dtype=dtype)
for _ in range(3):
    c = a @ b
torch.cuda.synchronize()
t = time.perf_counter(); c = a @ b; torch.cuda.synchronize()
one = max(time.perf_counter() - t, 1e-6)
batch = max(1, int(0.2 / one))  # about 0.2 s between synchronisations
iters = 0
t0 = time.perf_counter()
while time.perf_counter() - t0 < SECONDS:
    for _ in range(batch):
        c = a @ b
    torch.cuda.synchronize()
    iters += batch
elapsed = time.perf_counter() - t0
result(tflops=2.0 * n ** 3 * iters / elapsed / 1e12, iters=iters,
       seconds=elapsed, dtype=str(dtype), n=n, env=mps_env())
'''

# What this process asks of torch, in a child process so that this one
# never creates a CUDA context (it would be a non-MPS client on the GPU).
PROBE = r'''
import json
try:
    import torch
except Exception as e:
    print(json.dumps({"error": "import torch failed: %s: %s" % (type(e).__name__, e)}))
    raise SystemExit(0)
out = {"torch": torch.__version__, "available": bool(torch.cuda.is_available())}
if out["available"]:
    p = torch.cuda.get_device_properties(0)
    out.update(count=torch.cuda.device_count(), name=p.name,
               total_mib=p.total_memory // (1 << 20))
print(json.dumps(out))
'''


# --- plumbing -------------------------------------------------------------

class Deadline(Exception):
    """The checks' time budget is spent: the check at hand fails."""


class Interrupted(BaseException):
    """A signal or the hard time limit: the run stops, cleanup runs."""


def skip_all(why):
    print(f"SKIP: {why}")
    sys.exit(0)


class Report:
    def __init__(self):
        self.lines = []

    def add(self, verdict, name, text):
        line = f"{verdict} {name}: {text}"
        self.lines.append((verdict, line))
        print(line, flush=True)

    def passed(self, name, text):
        self.add("PASS", name, text)

    def failed(self, name, text):
        self.add("FAIL", name, text)

    def skipped(self, name, text):
        self.add("SKIP", name, text)

    def check(self, ok, name, text):
        self.add("PASS" if ok else "FAIL", name, text)
        return ok

    def count(self, verdict):
        return sum(1 for v, _ in self.lines if v == verdict)


class Api:
    def __init__(self, url, token):
        self.url, self.token = url.rstrip("/"), token

    def call(self, method, path, body=None, raw=False, timeout=10):
        data = None if body is None else json.dumps(body).encode()
        req = urllib.request.Request(self.url + path, data=data, method=method)
        req.add_header("Authorization", "Bearer " + self.token)
        if data is not None:
            req.add_header("Content-Type", "application/json")
        try:
            with urllib.request.urlopen(req, timeout=timeout) as r:
                text = r.read().decode("utf-8", "replace")
        except urllib.error.HTTPError as e:
            detail = e.read().decode("utf-8", "replace").strip()
            raise RuntimeError(f"{method} {path}: HTTP {e.code}: {detail}") from None
        return text if raw else json.loads(text)

    def job(self, jid, timeout=10):
        return self.call("GET", f"/v1/jobs/{jid}", timeout=timeout)

    def events(self, jid):
        return self.call("GET", f"/v1/jobs/{jid}/events").get("events", [])

    def stdout_result(self, jid):
        """The job's last "RESULT {...}" line on stdout, or None."""
        text = self.call("GET", f"/v1/jobs/{jid}/logs?stream=stdout&offset=0", raw=True)
        found = None
        for line in text.splitlines():
            if line.startswith("RESULT "):
                try:
                    found = json.loads(line[len("RESULT "):])
                except ValueError:
                    pass
        return found

    def stderr_tail(self, jid, n=300):
        try:
            text = self.call("GET", f"/v1/jobs/{jid}/logs?stream=stderr&offset=0", raw=True)
        except Exception as e:  # only for messages
            return f"(stderr unreadable: {e})"
        text = " | ".join(l.strip() for l in text.strip().splitlines()[-3:])
        return text[-n:] if text else "(stderr empty)"

    def submit(self, name, command, milli, memory_mib, env):
        job = self.call("POST", "/v1/jobs", {
            "name": name, "command": command, "env": env,
            "resources": {"gpu_milli": milli, "gpu_memory_mib": memory_mib}})
        return job["id"]


def mps_call(control, pipe_dir, log_dir, command, timeout=15):
    env = dict(os.environ, CUDA_MPS_PIPE_DIRECTORY=pipe_dir,
               CUDA_MPS_LOG_DIRECTORY=log_dir)
    try:
        r = subprocess.run([control], input=command + "\n", env=env, text=True,
                           capture_output=True, timeout=timeout)
        return r.returncode, (r.stdout + r.stderr).strip()
    except (OSError, subprocess.TimeoutExpired) as e:
        return None, str(e)


def find_tessera(given, repo):
    if given:
        if os.path.isfile(given) and os.access(given, os.X_OK):
            return given
        return shutil.which(given)
    built = os.path.join(repo, "build", "cli", "tessera")
    if os.access(built, os.X_OK):
        return built
    return shutil.which("tessera")


def catalog_kind(tessera, total_mib):
    """The catalog GPU kind whose memory is closest to `total_mib`."""
    r = subprocess.run([tessera, "devices", "--json"], capture_output=True,
                       text=True, timeout=30)
    if r.returncode != 0:
        raise RuntimeError(f"tessera devices --json: exit {r.returncode}: {r.stderr.strip()}")
    gpus = [d for d in json.loads(r.stdout) if d.get("kind") == "gpu"]
    if not gpus:
        raise RuntimeError("tessera devices --json lists no GPU kind")
    best = min(gpus, key=lambda d: abs(d["memory_bytes"] / MIB - total_mib))
    return best["name"]


def host_memory_mib():
    try:
        with open("/proc/meminfo") as f:
            for line in f:
                if line.startswith("MemTotal:"):
                    return int(line.split()[1]) // 1024
    except OSError:
        pass
    return 64 * 1024


# --- the run --------------------------------------------------------------

class Run:
    def __init__(self, args, probe, control, tessera):
        self.args, self.probe = args, probe
        self.control, self.tessera = control, tessera
        self.report = Report()
        self.start = time.monotonic()
        self.dir = tempfile.mkdtemp(prefix="tessera-gpu-check-")
        self.log_dir = os.path.join(self.dir, "logs")
        self.pipe_dir = os.path.join(self.log_dir, "mps", "pipe")
        self.mps_log_dir = os.path.join(self.log_dir, "mps", "log")
        self.server = None
        self.server_log = os.path.join(self.dir, "serve.log")
        self.api = None
        self.jobs = []  # every job submitted, for the cleanup

    # Time left of the checks' budget; Deadline when spent.
    def left(self, cap=None):
        rest = TOTAL_BUDGET_S - (time.monotonic() - self.start)
        if rest <= 0:
            raise Deadline(f"the run's {TOTAL_BUDGET_S} s budget is spent")
        return rest if cap is None else min(rest, cap)

    def write(self, name, text):
        path = os.path.join(self.dir, name)
        with open(path, "w") as f:
            f.write(text)
        return path

    def script(self, name, body, **consts):
        head = "".join(f"{k} = {v!r}\n" for k, v in consts.items())
        return self.write(name, head + body)

    def config(self, token):
        p = self.probe
        kind = catalog_kind(self.tessera, p["total_mib"])
        digest = hashlib.sha256(token.encode()).hexdigest()
        q = json.dumps  # JSON strings are YAML scalars
        return self.write("serve.yaml", f"""\
# Written by tests/gpu/check_fractions.py for one run.
listen: 127.0.0.1:0
db: {q(os.path.join(self.dir, "tessera.db"))}
log_dir: {q(self.log_dir)}
scorer: best-fit
kill_grace_s: 2
share_unisolated: false
gpu_usage: {{library: libnvidia-ml.so.1, interval_s: 1}}
launcher: {{kind: local, mps_control: {q(self.control)}}}
pools:
  - {{name: gpu, policy: fifo, on_oom: requeue}}
nodes:
  - name: node0
    pool: gpu
    cpu_milli: {max(1, os.cpu_count() or 1) * 1000}
    memory: {host_memory_mib()}MiB
    isolation: mps
    gpus:
      - {{kind: {kind}, count: {p["count"]}, memory: {p["total_mib"]}MiB}}
users:
  - {{name: checker, role: admin, token_sha256: {digest}}}
"""), kind

    def serve(self):
        token = secrets.token_hex(16)
        cfg, kind = self.config(token)
        log = open(self.server_log, "w")
        self.server = subprocess.Popen(
            [self.tessera, "serve", "--config", cfg], cwd=self.dir,
            stdin=subprocess.DEVNULL, stdout=log, stderr=log,
            start_new_session=True)
        log.close()
        deadline = time.monotonic() + self.left(30)
        url = None
        while time.monotonic() < deadline:
            if self.server.poll() is not None:
                raise RuntimeError(f"tessera serve exited {self.server.returncode}: "
                                   + self.tail(self.server_log))
            with open(self.server_log, errors="replace") as f:
                m = re.search(r"serving on (https?://\S+)", f.read())
            if m:
                url = m.group(1)
                try:
                    with urllib.request.urlopen(url + "/healthz", timeout=2) as r:
                        if r.status == 200:
                            break
                except OSError:
                    pass
            time.sleep(0.2)
        else:
            raise RuntimeError("tessera serve did not answer /healthz within 30 s: "
                               + self.tail(self.server_log))
        self.api = Api(url, token)
        return url, kind

    @staticmethod
    def tail(path, n=400):
        try:
            with open(path, errors="replace") as f:
                text = f.read().strip()
        except OSError:
            return "(no log)"
        return " | ".join(text.splitlines()[-4:])[-n:] or "(log empty)"

    def submit(self, name, script, milli, memory_mib):
        if self.left() < 20:
            raise Deadline(f"under 20 s of the run's {TOTAL_BUDGET_S} s left: {name} not submitted")
        jid = self.api.submit(name, [sys.executable, script, self.dir], milli,
                              memory_mib, {"PYTHONUNBUFFERED": "1"})
        self.jobs.append(jid)
        return jid

    def wait(self, ids, cap_s, on_poll=None):
        """Polls until every job of `ids` has ended; {id: job}. `oom` counts
        as an end once it has held for 3 s (a requeue follows at once)."""
        began = time.monotonic()
        deadline = began + self.left(cap_s)
        oom_since = {}
        while True:
            jobs = {i: self.api.job(i) for i in ids}
            if on_poll:
                on_poll(jobs)
            done = True
            now = time.monotonic()
            for i, j in jobs.items():
                if j["state"] == "oom":
                    oom_since.setdefault(i, now)
                    if now - oom_since[i] < 3 and j.get("oom_requeues", 0) < 1:
                        done = False
                elif j["state"] in TERMINAL:
                    oom_since.pop(i, None)
                else:
                    oom_since.pop(i, None)
                    done = False
            if done:
                return jobs
            if now >= deadline:
                states = ", ".join(f"job {i} {j['state']}" for i, j in jobs.items())
                raise Deadline(f"jobs still not ended after {now - began:.0f} s ({states})")
            time.sleep(0.5)

    # (a) and (b)
    def check_oom_and_peak(self):
        r = self.report
        a_script = self.script("job_a.py", JOB_A, HOLD_MIB=A_HOLD_MIB, HOLD_S=10)
        b_script = self.script("job_b.py", JOB_B, HOLD_MIB=B_HOLD_MIB,
                               MORE_MIB=B_MORE_MIB)
        a = self.submit("check-a-within-cap", a_script, SHARE_MILLI, SHARE_MIB)
        b = self.submit("check-b-past-cap", b_script, SHARE_MILLI, SHARE_MIB)
        together = {}
        daemon = {}
        cluster_seen = {}

        def on_poll(jobs):
            c = self.api.call("GET", "/v1/cluster")
            if not cluster_seen:
                cluster_seen.update(c)
            for g in c.get("gpus", []):
                if a in g.get("jobs", []) and b in g.get("jobs", []):
                    together.setdefault("gpu", g["id"])
            if not daemon and os.path.exists(os.path.join(self.dir, "a.ready")):
                daemon["rc"], daemon["out"] = mps_call(
                    self.control, self.pipe_dir, self.mps_log_dir, "get_server_list")

        jobs = self.wait([a, b], 150, on_poll)
        ja, jb = jobs[a], jobs[b]

        gpus = cluster_seen.get("gpus", [])
        r.check(bool(gpus) and all(g.get("isolation") == "mps" and g.get("shareable") is True
                                   for g in gpus),
                "cluster", "GET /v1/cluster: " + (", ".join(
                    f"{g['id']} isolation {g.get('isolation')!r} shareable {g.get('shareable')!r}"
                    for g in gpus) or "no GPUs"))

        if together:
            r.passed("shared-gpu", f"jobs {a} and {b} held {together['gpu']} at the same time")
        else:
            ga = (ja.get("allocation") or [{}])[0].get("gpu")
            r.failed("shared-gpu", f"never saw jobs {a} and {b} on one GPU at once "
                     f"(job {a} on {ga}; GET /v1/cluster polled every 0.5 s)")

        res_a = self.api.stdout_result(a)
        env_a = (res_a or {}).get("env") or {}
        want = {"CUDA_MPS_PIPE_DIRECTORY": self.pipe_dir,
                "CUDA_MPS_LOG_DIRECTORY": self.mps_log_dir,
                "CUDA_MPS_ACTIVE_THREAD_PERCENTAGE": str(-(-SHARE_MILLI // 10)),
                "CUDA_MPS_PINNED_DEVICE_MEM_LIMIT": f"0={SHARE_MIB}M"}
        wrong = [f"{k}={env_a.get(k)!r} (want {v!r})" for k, v in want.items()
                 if env_a.get(k) != v]
        if res_a is None:
            r.failed("mps-env", f"job {a} printed no RESULT line (state {ja['state']}: "
                     f"{self.api.stderr_tail(a)})")
        elif wrong or daemon.get("rc") != 0:
            r.failed("mps-env", "; ".join(wrong + (
                [] if daemon.get("rc") == 0 else
                [f"the daemon did not answer get_server_list at {self.pipe_dir}: "
                 f"{daemon.get('out', 'not asked: job A never got ready')}"])))
        else:
            r.passed("mps-env", f"job {a} ran as an MPS client ({', '.join(f'{k}={v}' for k, v in want.items() if 'DIRECTORY' not in k)}, "
                     f"pipe {self.pipe_dir}); the daemon answered get_server_list")

        r.check(ja["state"] == "succeeded" and res_a is not None, "within-cap",
                f"job {a} ({A_HOLD_MIB} MiB in a {SHARE_MIB} MiB share) ended {ja['state']}"
                + (f", max_memory_reserved {res_a['max_reserved_mib']:.0f} MiB" if res_a else "")
                + ("" if ja["state"] == "succeeded" else f" ({ja.get('reason') or self.api.stderr_tail(a)})"))

        # B: stopped by its cap, requeued once with more memory, completed.
        events = self.api.events(b)
        oom_events = [e for e in events if e.get("action") == "oom"
                      or "out of GPU memory" in (e.get("detail") or "")]
        requeued = [e for e in events if e.get("action") == "requeued"]
        attempts = []
        try:
            with open(os.path.join(self.dir, "b.attempts")) as f:
                attempts = [json.loads(l) for l in f if l.strip()]
        except (OSError, ValueError):
            pass
        starts = [x for x in attempts if x.get("event") == "start"]
        first_done = any(x.get("event") == "done" and starts and x["pid"] == starts[0]["pid"]
                         for x in attempts)
        first_cap = (starts[0]["env"] or {}).get("CUDA_MPS_PINNED_DEVICE_MEM_LIMIT") if starts else None
        if oom_events and not first_done:
            why = (oom_events[0].get("detail") or "").split(" (")[0]
            r.passed("oom-stopped", f"job {b} ended its first run oom under the cap "
                     f"{first_cap} ({why}); job {a} beside it ended {ja['state']}")
        else:
            r.failed("oom-stopped", f"job {b} " + (
                f"allocated {B_HOLD_MIB + B_MORE_MIB} MiB in a {SHARE_MIB} MiB share "
                f"(CUDA_MPS_PINNED_DEVICE_MEM_LIMIT={first_cap}): the cap did not hold"
                if first_done else "has no oom event") +
                f"; state {jb['state']}, events: "
                + ", ".join(e.get("action", "?") for e in events))

        demand = (jb.get("demand") or {}).get("gpu_memory_mib", 0)
        need = int((B_HOLD_MIB + B_MORE_MIB) * (1 + HEADROOM))
        second_cap = (starts[1]["env"] or {}).get("CUDA_MPS_PINNED_DEVICE_MEM_LIMIT") if len(starts) > 1 else None
        ok = (jb.get("oom_requeues") == 1 and requeued and demand >= need
              and second_cap == f"0={demand}M")
        r.check(ok, "oom-requeued",
                f"job {b}: oom_requeues {jb.get('oom_requeues')}, {len(requeued)} 'requeued' event(s), "
                f"gpu_memory_mib {SHARE_MIB} -> {demand} (want >= {need}: "
                f"{B_HOLD_MIB}+{B_MORE_MIB} MiB + {HEADROOM:.0%}), second run capped at {second_cap}")

        res_b = self.api.stdout_result(b)
        r.check(jb["state"] == "succeeded" and res_b is not None and len(starts) == 2,
                "oom-completed",
                f"job {b} ended {jb['state']} after {len(starts)} run(s)"
                + (f", max_memory_reserved {res_b['max_reserved_mib']:.0f} MiB" if res_b else "")
                + ("" if jb["state"] == "succeeded" else f" ({jb.get('reason') or self.api.stderr_tail(b)})"))

        # (b) the sampler's peak for A against what A saw.
        usage = ja.get("usage")
        if res_a is None:
            r.failed("peak-measured", f"job {a} printed no RESULT line")
        elif not usage or not usage.get("readings"):
            r.failed("peak-measured", f"job {a} has no usage (readings 0): is gpu_usage on, "
                     "libnvidia-ml.so.1 found, and does NVML list the job's pid?")
        else:
            expected = res_a["max_reserved_mib"] + res_a["context_mib"]
            peak = usage["peak_mib"]
            off = (peak - expected) / expected
            r.check(abs(off) <= PEAK_TOLERANCE, "peak-measured",
                    f"job {a}: usage.peak_mib {peak} vs max_memory_reserved "
                    f"{res_a['max_reserved_mib']:.0f} + context {res_a['context_mib']:.0f} = "
                    f"{expected:.0f} MiB ({off:+.1%}, limit ±{PEAK_TOLERANCE:.0%}; context from "
                    f"{res_a['context_from']}; nvidia-smi at peak {res_a.get('smi_at_peak_mib')}; "
                    f"{usage['readings']} readings)")

    # (c)
    def check_thread_share(self):
        r = self.report
        gemm = self.script("job_gemm.py", JOB_GEMM, SECONDS=4)
        out = {}
        for milli in (1000, 250):
            jid = self.submit(f"check-gemm-{milli}", gemm, milli, SHARE_MIB)
            j = self.wait([jid], 90)[jid]
            res = self.api.stdout_result(jid)
            if j["state"] != "succeeded" or res is None:
                r.failed("thread-share", f"GEMM job {jid} ({milli} milli) ended {j['state']}: "
                         f"{j.get('reason') or self.api.stderr_tail(jid)}")
                return
            out[milli] = (jid, res)
        (jf, full), (jq, quarter) = out[1000], out[250]
        pct = (full["env"].get("CUDA_MPS_ACTIVE_THREAD_PERCENTAGE"),
               quarter["env"].get("CUDA_MPS_ACTIVE_THREAD_PERCENTAGE"))
        ratio = quarter["tflops"] / full["tflops"] if full["tflops"] > 0 else float("inf")
        r.check(ratio <= SHARE_RATIO_MAX and pct == ("100", "25"), "thread-share",
                f"{full['n']}x{full['n']} {full['dtype'].replace('torch.', '')} GEMM: job {jq} "
                f"(250 milli, {pct[1]}% threads) {quarter['tflops']:.1f} TFLOP/s, job {jf} "
                f"(1000 milli, {pct[0]}% threads) {full['tflops']:.1f} TFLOP/s: {ratio:.0%} "
                f"(want <= {SHARE_RATIO_MAX:.0%}; H100: 21%)")

    def execute(self):
        r = self.report
        p = self.probe
        try:
            url, kind = self.serve()
        except (RuntimeError, Deadline, OSError, ValueError,
                subprocess.SubprocessError) as e:
            r.failed("serve", str(e))
            for name in ("cluster", "shared-gpu", "mps-env", "within-cap", "oom-stopped",
                         "oom-requeued", "oom-completed", "peak-measured", "thread-share"):
                r.skipped(name, "not run: the service did not start")
            return
        print(f"# {p['count']} x {p['name']} ({p['total_mib']} MiB, catalog kind {kind}), "
              f"torch {p['torch']}, service {url}, files in {self.dir}", flush=True)
        stages = ((self.check_oom_and_peak, ("cluster", "shared-gpu", "mps-env", "within-cap",
                                             "oom-stopped", "oom-requeued", "oom-completed",
                                             "peak-measured")),
                  (self.check_thread_share, ("thread-share",)))
        for stage, names in stages:
            before = len(r.lines)
            try:
                stage()
            except (RuntimeError, Deadline, OSError, ValueError, KeyError, TypeError,
                    subprocess.SubprocessError) as e:
                done = {line.split()[1].rstrip(":") for _, line in r.lines[before:]}
                for name in names:
                    if name not in done:
                        r.failed(name, f"not completed: {type(e).__name__}: {e}")

    def cleanup(self):
        """Cancels what still runs, stops the service, kills any job left
        (only processes whose command line names this run's directory),
        stops the MPS daemon. Every step bounded."""
        if self.api and self.jobs:
            try:
                for jid in self.jobs:
                    if self.api.job(jid, timeout=3)["state"] not in TERMINAL:
                        self.api.call("POST", f"/v1/jobs/{jid}/cancel", {}, timeout=3)
            except Exception:
                pass  # the service does not answer: the kills below
            end = time.monotonic() + 6
            while time.monotonic() < end:
                try:
                    if all(self.api.job(j, timeout=3)["state"] in TERMINAL
                           for j in self.jobs):
                        break
                except Exception:
                    break
                time.sleep(0.3)
        if self.server and self.server.poll() is None:
            self.server.terminate()
            try:
                self.server.wait(10)
            except subprocess.TimeoutExpired:
                self.server.kill()
                self.server.wait(5)
        try:
            pid_files = [f for f in os.listdir(self.log_dir) if f.endswith(".pid")]
        except OSError:
            pid_files = []
        for name in pid_files:
            try:
                with open(os.path.join(self.log_dir, name)) as f:
                    pid = int(f.read().split()[0])
                with open(f"/proc/{pid}/cmdline", "rb") as f:
                    cmdline = f.read().decode(errors="replace")
                if self.dir in cmdline:
                    os.killpg(pid, signal.SIGKILL)  # the job's own session
            except (OSError, ValueError, IndexError):
                pass
        if os.path.isdir(self.pipe_dir):
            rc, out = mps_call(self.control, self.pipe_dir, self.mps_log_dir, "quit")
            if rc not in (0, None) and "Cannot find" not in out:
                print(f"# stopping the MPS daemon: exit {rc}: {out[:200]}", flush=True)

    def finish(self):
        r = self.report
        failed = r.count("FAIL")
        keep = self.args.keep or failed
        print(f"SUMMARY: {r.count('PASS')} passed, {failed} failed, {r.count('SKIP')} skipped"
              f" in {time.monotonic() - self.start:.0f} s"
              + (f"; files kept in {self.dir}" if keep else ""), flush=True)
        if not keep:
            shutil.rmtree(self.dir, ignore_errors=True)
        return 1 if failed else 0


def main():
    repo = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
    ap = argparse.ArgumentParser(
        description="Checks on a real GPU that tessera's fractions hold under MPS "
        "(memory caps, OOM requeue, measured use, thread share); tests/gpu/README.md.")
    ap.add_argument("--tessera", help="the tessera binary (default: build/cli/tessera "
                    "of this repository, else tessera in PATH)")
    ap.add_argument("--keep", action="store_true",
                    help="keep the temporary directory (it is kept anyway on a failure)")
    args = ap.parse_args()

    if importlib.util.find_spec("torch") is None:
        skip_all("PyTorch is not installed (import torch fails)")
    try:
        r = subprocess.run([sys.executable, "-c", PROBE], capture_output=True, text=True,
                           timeout=120)
        probe = json.loads(r.stdout.strip().splitlines()[-1])
    except (subprocess.TimeoutExpired, ValueError, IndexError, OSError) as e:
        skip_all(f"could not ask PyTorch about CUDA ({type(e).__name__}: {e})")
    if "error" in probe:
        skip_all(probe["error"])
    if not probe["available"]:
        skip_all(f"torch.cuda.is_available() is False (torch {probe['torch']}): no usable GPU")
    control = shutil.which("nvidia-cuda-mps-control")
    if not control:
        skip_all("nvidia-cuda-mps-control is not in PATH")
    if probe["total_mib"] < MIN_GPU_MIB:
        skip_all(f"{probe['name']} has {probe['total_mib']} MiB; these checks need "
                 f"{MIN_GPU_MIB} MiB (job B's raised share is about 10.5 GiB)")
    tessera = find_tessera(args.tessera, repo)
    if not tessera:
        print(f"FAIL setup: no tessera binary ({args.tessera or 'build/cli/tessera, or tessera in PATH'}); "
              "build it or give --tessera PATH")
        print("SUMMARY: 0 passed, 1 failed, 0 skipped")
        return 1

    run = Run(args, probe, os.path.abspath(control), os.path.abspath(tessera))

    def on_signal(signum, _frame):
        raise Interrupted(f"stopped by signal {signum}")

    def on_alarm(_signum, _frame):
        raise Interrupted(f"the run passed {HARD_LIMIT_S} s")

    signal.signal(signal.SIGTERM, on_signal)
    signal.signal(signal.SIGALRM, on_alarm)
    signal.alarm(HARD_LIMIT_S)
    try:
        run.execute()
    except (Interrupted, KeyboardInterrupt) as e:
        run.report.failed("run", f"interrupted: {e or 'Ctrl-C'}")
    finally:
        signal.alarm(0)
        signal.signal(signal.SIGALRM, signal.SIG_DFL)
        try:
            run.cleanup()
        except Exception as e:  # report, never hide the checks' verdicts
            print(f"# cleanup: {type(e).__name__}: {e}", flush=True)
    return run.finish()


if __name__ == "__main__":
    sys.exit(main())
