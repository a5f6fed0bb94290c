#!/usr/bin/env bash
# Stops every daemon tests/slurm/slurm_up.sh started in DIR (by their pid
# files: slurmd n1 and n2 and slurmctld together, then munged; SIGTERM,
# SIGKILL for any still there after 5 s) and removes DIR.
#
#   bash tests/slurm/slurm_down.sh DIR
set -uo pipefail
DIR=${1:?usage: slurm_down.sh DIR}
[ -d "$DIR" ] || exit 0

# The live pids among the pid files given.
live() {
  local f pid
  for f in "$@"; do
    [ -f "$f" ] || continue
    pid=$(cat "$f" 2>/dev/null) || continue
    [ -n "$pid" ] && kill -0 "$pid" 2>/dev/null && echo "$pid"
  done
}

stop() {  # PIDFILE...: TERM, then KILL after 5 s
  local pids left
  pids=$(live "$@")
  [ -n "$pids" ] || return 0
  kill -TERM $pids 2>/dev/null
  for _ in $(seq 1 100); do
    left=""
    for p in $pids; do kill -0 "$p" 2>/dev/null && left="$left $p"; done
    [ -z "$left" ] && return 0
    sleep 0.05
  done
  echo "slurm_down: SIGKILL to$left (still running after 5 s)" >&2
  kill -KILL $left 2>/dev/null
}

# Jobs first, so that no slurmstepd outlives its slurmd: scancel every job
# and wait (at most 5 s) until none is left running.
if [ -f "$DIR/etc/slurm.conf" ] && [ -n "$(live "$DIR/run/slurmctld.pid")" ]; then
  export SLURM_CONF="$DIR/etc/slurm.conf"
  timeout 5 scancel --full --quiet --user=root >/dev/null 2>&1
  end=$((SECONDS + 5))
  while [ "$SECONDS" -lt "$end" ]; do
    [ -z "$(timeout 2 squeue --noheader --states=R,CG,S --format=%A 2>/dev/null)" ] && break
    sleep 0.1
  done
fi

stop "$DIR"/run/slurmd-*.pid "$DIR/run/slurmctld.pid"
stop "$DIR/run/munged.pid"

# A job step of this cluster still running (slurmstepd carries the
# daemons' SLURM_CONF): SIGKILL by pid.
for p in $(pgrep -x slurmstepd); do
  if tr '\0' '\n' <"/proc/$p/environ" 2>/dev/null |
      grep -qx "SLURM_CONF=$DIR/etc/slurm.conf"; then
    echo "slurm_down: SIGKILL to slurmstepd $p (outlived its slurmd)" >&2
    kill -KILL "$p" 2>/dev/null
  fi
done
rm -rf "$DIR"
