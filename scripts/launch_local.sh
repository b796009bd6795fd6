#!/usr/bin/env bash
# Starts N processes of one multi-process job on this machine and waits for
# them: `scripts/launch_local.sh N COMMAND...`, e.g.
#   scripts/launch_local.sh 2 mcgs-jax train --env tictactoe --out runs/two --distributed
# Each process gets --coordinator-address localhost:PORT --num-processes N
# --process-id I appended (PORT: $MCGS_PORT, else a free one), its own CPU
# device (JAX_PLATFORMS=cpu unless set) and a log, $MCGS_LOGS/process-I.log
# (default: the current folder's launch-logs/). Exits with the first nonzero
# status among the processes (0 when all succeed); a process that fails ends
# the others through the job's heartbeat timeout, not through this script.
set -u
if [ "$#" -lt 2 ]; then
  echo "usage: $0 N COMMAND..." >&2
  exit 2
fi
count=$1; shift
case $count in ''|*[!0-9]*) echo "$0: N must be a number, got $count" >&2; exit 2;; esac
port=${MCGS_PORT:-$(python3 -c 'import socket; s = socket.socket(); s.bind(("", 0)); print(s.getsockname()[1])')}
logs=${MCGS_LOGS:-launch-logs}
mkdir -p "$logs"
export JAX_PLATFORMS=${JAX_PLATFORMS:-cpu}
pids=()
for ((i = 0; i < count; i++)); do
  "$@" --coordinator-address "localhost:$port" --num-processes "$count" --process-id "$i" \
    > "$logs/process-$i.log" 2>&1 &
  pids+=($!)
done
status=0
for i in "${!pids[@]}"; do
  wait "${pids[$i]}"
  code=$?
  if [ "$code" -ne 0 ]; then
    echo "process $i exited with $code (log: $logs/process-$i.log)" >&2
    [ "$status" -eq 0 ] && status=$code
  fi
done
exit $status
