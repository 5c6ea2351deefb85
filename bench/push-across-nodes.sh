#!/usr/bin/env bash
# Push across nodes, the way docs/PERFORMANCE.md reports it: builds the release binary,
# starts a throwaway PostgreSQL cluster, runs `nimbus-bench push` with two nodes (devices on
# node 1, saves through node 2) RUNS times (default 5) for 1 000 devices of one user and
# 1 000 devices of 1 000 users, prints each run's line, and stops the cluster.
#
#   bench/push-across-nodes.sh [RUNS] [extra `nimbus-bench push` options…]
set -euo pipefail
cd "$(dirname "$0")/.."
RUNS=${1:-5}
shift || true
swift build -c release --product nimbus --product nimbus-bench 2>&1 | tail -1
source scripts/throwaway-postgres.sh
start_throwaway_postgres
for run in $(seq "$RUNS"); do
    echo "--- run $run of $RUNS, $(date +%T), load average $(cut -d' ' -f1-3 /proc/loadavg)"
    .build/release/nimbus-bench push --runs latency --devices 1000 --fanout user,users \
        --postgres-url "$THROWAWAY_POSTGRES_URL" --nodes 2 --duration 6 "$@" | grep -v '^machine:'
done
