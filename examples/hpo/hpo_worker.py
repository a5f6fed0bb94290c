#!/usr/bin/env python3
"""One worker of a hyper-parameter sweep run as a per-worker elastic job.

tessera starts this script once per worker (docs/elastic.md, "The two
launch modes", per-worker), each with its own CUDA_VISIBLE_DEVICES, and
more copies as the job grows. The workers share the trials through a
directory: a worker claims a trial by creating its claim file (O_EXCL, so
exactly one worker gets it), runs it, and writes its result. On SIGTERM
(tessera asks the worker back) it drops its claim, so that another worker
runs that trial, and exits: tessera then frees its GPU by itself.
A worker exits 0 when no trial is left; the job ends when all have.

Environment:
  TESSERA_WORKER_ID, TESSERA_JOB_ID, TESSERA_ALLOCATION_FILE   set by tessera
  HPO_TRIALS   how many trials (default 24)
  HPO_STEPS    SGD steps per trial (default 20000)
  HPO_DIR      the shared directory (default: beside the allocation file)
  HPO_STOP_FILE  when this file exists, take no more trials and end
"""
import json
import os
import signal
import sys
import time

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from hpo import trial  # noqa: E402  (the same trial as the one-process sweep)


def main():
    worker = os.environ["TESSERA_WORKER_ID"]
    alloc = os.environ["TESSERA_ALLOCATION_FILE"]
    shared = os.environ.get("HPO_DIR") or os.path.join(
        os.path.dirname(alloc), os.environ["TESSERA_JOB_ID"] + ".hpo")
    os.makedirs(shared, exist_ok=True)
    n = int(os.environ.get("HPO_TRIALS", "24"))
    stop_file = os.environ.get("HPO_STOP_FILE", "")
    steps = int(os.environ.get("HPO_STEPS", "20000"))
    claimed = [None]

    def stop(*_):
        if claimed[0] is not None:  # another worker runs it again
            try:
                os.unlink(claimed[0])
            except OSError:
                pass
        print("worker %s: asked back, stopping" % worker, flush=True)
        sys.exit(0)

    signal.signal(signal.SIGTERM, stop)
    claimed_any = True
    while claimed_any:  # again, for trials a stopped worker dropped
        claimed_any = False
        for k in range(n):
            lr = 0.001 * (1.5 ** (k % 20))
            claim = os.path.join(shared, "%d.claim" % k)
            result = os.path.join(shared, "%d.json" % k)
            if stop_file and os.path.exists(stop_file):
                claimed_any = False
                break
            if os.path.exists(result):
                continue
            try:
                os.close(os.open(claim, os.O_CREAT | os.O_EXCL | os.O_WRONLY))
            except FileExistsError:
                continue
            claimed[0], claimed_any = claim, True
            loss = trial(lr, steps)
            with open(result + ".tmp", "w") as f:
                json.dump({"lr": lr, "loss": loss, "worker": int(worker)}, f)
            os.rename(result + ".tmp", result)
            claimed[0] = None
            print("%s worker %s: trial lr=%.5f loss %.5f"
                  % (time.strftime("%H:%M:%S"), worker, lr, loss), flush=True)
    print("worker %s: no trial left" % worker, flush=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())
