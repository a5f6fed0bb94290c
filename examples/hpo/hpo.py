#!/usr/bin/env python3
"""A hyper-parameter sweep that runs as one elastic tessera job.

Each worker tessera grants runs trials, one at a time, as its own process
(CUDA_VISIBLE_DEVICES set to the worker's GPU). The sweep starts with the
job's minimum, takes more workers as the allocation grows, and on a shrink
stops the trials of the workers asked back (they go back in the queue),
then tells tessera it released them: docs/elastic.md, "one-process" mode.

A trial is a small CPU-only training loop: linear regression by SGD on a
fixed synthetic data set, for one learning rate; its score is the loss.

Environment:
  TESSERA_ALLOCATION_FILE  set by tessera: the allocation, rewritten
                           atomically on every change (SIGUSR1 follows)
  TESSERA_JOB_ID           set by tessera
  TESSERA_URL, TESSERA_TOKEN   the service, to POST the release
  HPO_TRIALS               how many trials (default 24)
  HPO_STEPS                SGD steps per trial (default 20000)
  HPO_STOP_FILE            when this file exists, finish the running trials
                           and end (a demo's way to stop early)

Run one trial by hand: python3 hpo.py --trial 0.01
"""
import json
import os
import signal
import subprocess
import sys
import time
import urllib.request


def trial(lr, steps):
    """SGD on y = 3x - 1 + noise (a fixed data set); returns the last loss."""
    xs = [i / 50.0 - 1.0 for i in range(100)]
    ys = [3.0 * x - 1.0 + 0.1 * ((i * 7919) % 13 - 6) / 6.0
          for i, x in enumerate(xs)]
    w, b = 0.0, 0.0
    loss = 0.0
    for step in range(steps):
        i = (step * 37) % len(xs)
        err = w * xs[i] + b - ys[i]
        w -= lr * err * xs[i]
        b -= lr * err
        loss = 0.99 * loss + 0.01 * err * err
    return loss


def log(*args):
    print(time.strftime("%H:%M:%S"), *args, flush=True)


def read_allocation(path):
    try:
        with open(path) as f:
            return json.load(f)
    except (OSError, ValueError):
        return None


def post_release(workers):
    url = os.environ.get("TESSERA_URL", "")
    if not url:
        return False
    req = urllib.request.Request(
        url.rstrip("/") + "/v1/jobs/%s/release" % os.environ["TESSERA_JOB_ID"],
        data=json.dumps({"workers": workers}).encode(),
        headers={"Authorization": "Bearer " + os.environ.get("TESSERA_TOKEN", ""),
                 "Content-Type": "application/json"},
        method="POST")
    with urllib.request.urlopen(req, timeout=10) as r:
        return r.status == 200


def main():
    if len(sys.argv) == 3 and sys.argv[1] == "--trial":
        lr = float(sys.argv[2])
        print(json.dumps({"lr": lr,
                          "loss": trial(lr, int(os.environ.get("HPO_STEPS", "20000")))}))
        return 0
    path = os.environ["TESSERA_ALLOCATION_FILE"]
    stop_file = os.environ.get("HPO_STOP_FILE", "")
    n = int(os.environ.get("HPO_TRIALS", "24"))
    pending = [0.001 * (1.5 ** (k % 20)) for k in range(n)]  # learning rates
    results = {}
    running = {}  # worker id -> (Popen, lr)
    changed = [True]
    signal.signal(signal.SIGUSR1, lambda *_: changed.__setitem__(0, True))
    version = -1
    workers = {}  # worker id -> its CUDA_VISIBLE_DEVICES
    last_read = 0.0
    while True:
        now = time.time()
        if changed[0] or now - last_read > 1.0:  # the signal, or a poll
            changed[0] = False
            last_read = now
            a = read_allocation(path)
            if a and a["version"] != version:
                version = a["version"]
                workers = {w["worker"]: w.get("cuda_visible_devices", "")
                           for w in a["workers"]}
                log("allocation v%d: workers %s releasing %s"
                    % (version, sorted(workers), a["releasing"]))
                asked = [w for w in a["releasing"] if w in workers]
                if asked:
                    for w in asked:
                        if w in running:
                            p, lr = running.pop(w)
                            p.terminate()
                            p.wait()
                            pending.insert(0, lr)  # run again elsewhere
                    if post_release(asked):
                        log("released %s" % asked)
                    for w in asked:
                        workers.pop(w, None)
        # Reap finished trials.
        for w, (p, lr) in list(running.items()):
            if p.poll() is not None:
                out = p.stdout.read()
                running.pop(w)
                try:
                    results[lr] = json.loads(out)["loss"]
                    log("trial lr=%.5f on worker %d: loss %.5f" % (lr, w, results[lr]))
                except (ValueError, KeyError):
                    pending.insert(0, lr)
        stopping = stop_file and os.path.exists(stop_file)
        if (not pending or stopping) and not running:
            break
        # Idle workers take the next trial, each on its own GPU.
        for w, devices in sorted(workers.items()):
            if w in running or not pending or stopping:
                continue
            lr = pending.pop(0)
            env = dict(os.environ, CUDA_VISIBLE_DEVICES=devices,
                       TESSERA_WORKER=str(w))
            # The job's process group gets SIGUSR1: a trial ignores it
            # (SIG_IGN survives exec).
            p = subprocess.Popen(
                [sys.executable, os.path.abspath(__file__), "--trial", str(lr)],
                env=env, stdout=subprocess.PIPE, text=True,
                preexec_fn=lambda: signal.signal(signal.SIGUSR1, signal.SIG_IGN))
            running[w] = (p, lr)
        time.sleep(0.05)
    if results:
        best = min(results, key=results.get)
        log("done: %d trials, best lr=%.5f loss %.5f" % (len(results), best, results[best]))
    return 0


if __name__ == "__main__":
    try:
        code = main()
    finally:
        # Python puts SIGUSR1 back to its default action (terminate) while
        # it shuts down, after main() returns: a notice then (the sweep
        # grows as other jobs end) would kill a sweep that has finished.
        # Ignored from here on (docs/elastic.md, "The signal").
        signal.signal(signal.SIGUSR1, signal.SIG_IGN)
    sys.exit(code)
