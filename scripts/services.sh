#!/usr/bin/env bash
# Makes sure every service the tests, the seed and the app's local use need is running:
# Redis (6379, maxmemory-policy noeviction), RabbitMQ (5672 + management 15672, shovel plugins),
# and two SQS emulators (fauxqs on 4566, local-aws-sqs on 4577). Idempotent: running services are left alone.
set -euo pipefail
cd "$(dirname "$0")/.."
RUN_DIR="${QUEUESCOPE_RUN_DIR:-$PWD/.queuescope-run}"
mkdir -p "$RUN_DIR"
log() { printf '[services] %s\n' "$*"; }
# start_bg LOGFILE PIDFILE CMD...: detached, with every inherited descriptor above 2 closed,
# so a caller reading our output (CI, `| tail`) is not kept waiting by the daemon.
start_bg() {
  local logf=$1 pidf=$2; shift 2
  (
    for fd in /proc/$BASHPID/fd/*; do n=${fd##*/}; if [ "$n" -gt 2 ]; then eval "exec $n>&-" 2>/dev/null || true; fi; done
    exec setsid "$@" </dev/null >>"$logf" 2>&1
  ) &
  echo $! >"$pidf"
}
wait_for() { # wait_for SECONDS DESCRIPTION COMMAND...
  local secs=$1 what=$2; shift 2
  for ((i = 0; i < secs * 2; i++)); do "$@" >/dev/null 2>&1 && return 0; sleep 0.5; done
  log "ERROR: $what did not come up within ${secs}s"; return 1
}

# --- Redis ---------------------------------------------------------------
if ! redis-cli -h 127.0.0.1 -p 6379 ping >/dev/null 2>&1; then
  command -v redis-server >/dev/null || { log "installing redis-server"; apt-get update -qq && apt-get install -y -qq redis-server >/dev/null; }
  log "starting Redis on 127.0.0.1:6379"
  mkdir -p /var/lib/redis /var/log/redis
  redis-server --daemonize yes --bind 127.0.0.1 -::1 --port 6379 --save "" --appendonly no --dir /var/lib/redis --logfile /var/log/redis/ci.log
  wait_for 20 "Redis" redis-cli -h 127.0.0.1 -p 6379 ping
fi
# BullMQ requires noeviction (https://docs.bullmq.io/guide/going-to-production#max-memory-policy)
redis-cli -h 127.0.0.1 -p 6379 config set maxmemory-policy noeviction >/dev/null
log "Redis ready ($(redis-cli -h 127.0.0.1 -p 6379 info server | grep -m1 redis_version | tr -d '\r'))"

# --- RabbitMQ ------------------------------------------------------------
if ! rabbitmq-diagnostics -q check_running >/dev/null 2>&1; then
  command -v rabbitmq-server >/dev/null || { log "installing rabbitmq-server"; apt-get update -qq && apt-get install -y -qq rabbitmq-server >/dev/null; }
  log "starting RabbitMQ"
  rabbitmq-server -detached || true
  wait_for 90 "RabbitMQ" rabbitmq-diagnostics -q check_running
fi
enabled=$(rabbitmq-plugins list -e -m 2>/dev/null || true)
need=()
for p in rabbitmq_management rabbitmq_shovel rabbitmq_shovel_management; do
  grep -qx "$p" <<<"$enabled" || need+=("$p")
done
if ((${#need[@]})); then log "enabling plugins: ${need[*]}"; rabbitmq-plugins enable "${need[@]}" >/dev/null; fi
wait_for 60 "RabbitMQ management API" curl -sf -u guest:guest http://127.0.0.1:15672/api/overview
log "RabbitMQ ready ($(curl -s -u guest:guest http://127.0.0.1:15672/api/overview | grep -o '"rabbitmq_version":"[^"]*"'))"

# --- SQS emulators ---------------------------------------------------------
if ! curl -sf http://127.0.0.1:4566/health >/dev/null 2>&1; then
  if [ ! -x tools/fauxqs/node_modules/.bin/node ]; then log "installing fauxqs (tools/fauxqs)"; (cd tools/fauxqs && npm ci --no-audit --no-fund >/dev/null); fi
  log "starting fauxqs on 127.0.0.1:4566 (log: $RUN_DIR/fauxqs.log)"
  FAUXQS_PORT=4566 FAUXQS_HOST=127.0.0.1 start_bg "$RUN_DIR/fauxqs.log" "$RUN_DIR/fauxqs.pid" \
    tools/fauxqs/node_modules/.bin/node tools/fauxqs/node_modules/fauxqs/dist/cli.js
  wait_for 30 "fauxqs" curl -sf http://127.0.0.1:4566/health
fi
log "fauxqs ready on http://127.0.0.1:4566"
if ! curl -s -o /dev/null http://127.0.0.1:4577/ 2>/dev/null; then
  log "starting local-aws-sqs on 127.0.0.1:4577 (log: $RUN_DIR/local-aws-sqs.log)"
  PORT=4577 start_bg "$RUN_DIR/local-aws-sqs.log" "$RUN_DIR/local-aws-sqs.pid" node scripts/local-aws-sqs.mjs
  wait_for 20 "local-aws-sqs" curl -s -o /dev/null http://127.0.0.1:4577/
fi
log "local-aws-sqs ready on http://127.0.0.1:4577"
