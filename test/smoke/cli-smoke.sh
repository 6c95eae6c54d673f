#!/usr/bin/env bash
# After `npm run services && npm run seed && npm run build`: the built CLI shows the seeded
# queues, DLQ links and messages on all three brokers (the foundation issue's "done when").
set -euo pipefail
cd "$(dirname "$0")/../.."
export AWS_ACCESS_KEY_ID=${AWS_ACCESS_KEY_ID:-test} AWS_SECRET_ACCESS_KEY=${AWS_SECRET_ACCESS_KEY:-test}
QS="node bin/queuescope.cjs"
REDIS=redis://127.0.0.1:6379
AMQP=amqp://guest:guest@127.0.0.1:5672
SQS='sqs://us-east-1?endpoint=http://127.0.0.1:4566'
tmp=$(mktemp -d); trap 'rm -rf "$tmp"' EXIT
check() { # check FILE JS-EXPRESSION(d) DESCRIPTION
  node -e '
    const d = JSON.parse(require("fs").readFileSync(process.argv[1], "utf8"));
    const ok = (0, eval)("(d) => " + process.argv[2])(d);
    if (!ok) { console.error("FAILED: " + process.argv[3]); process.exit(1); }
    console.log("ok: " + process.argv[3]);' "$1" "$2" "$3"
}

$QS --help >/dev/null
# A reader that goes away (head) must not crash the CLI with an EPIPE stack trace.
for args in "--help" "redrive --help" "audit --list-rules"; do
  # shellcheck disable=SC2086
  $QS $args 2>"$tmp/epipe.err" | head -c 1 >/dev/null
  if [ -s "$tmp/epipe.err" ]; then echo "FAILED: queuescope $args | head wrote to stderr:"; cat "$tmp/epipe.err"; exit 1; fi
done
echo "ok: output piped into head: no EPIPE crash"
$QS queues "$REDIS" --json >"$tmp/rq.json"
check "$tmp/rq.json" 'd.some(q => q.name === "payments" && q.kind === "bullmq" && q.counts.failed > 0)' "redis: BullMQ queue payments with failed jobs"
check "$tmp/rq.json" 'd.some(q => q.name === "orders-stream" && q.kind === "redis-stream" && q.inFlight > 0)' "redis: stream orders-stream with pending entries"
$QS peek "$REDIS" payments --state failed --limit 5 --json >"$tmp/rp.json"
check "$tmp/rp.json" 'd.messages.length > 0 && d.messages.every(m => typeof m.meta.failedReason === "string")' "redis: failed jobs carry failedReason"

$QS queues "$AMQP" --json >"$tmp/aq.json"
check "$tmp/aq.json" 'd.some(q => q.name === "orders.work" && q.deadLetterTargets.some(t => t.queueName === "orders.dlq"))' "rabbitmq: orders.work dead-letters to orders.dlq"
check "$tmp/aq.json" 'd.some(q => q.name === "orders.dlq" && q.isDeadLetterQueue)' "rabbitmq: orders.dlq is a DLQ"
$QS peek "$AMQP" orders.dlq --limit 5 --accept-side-effects --json >"$tmp/ap.json"
check "$tmp/ap.json" 'd.messages.length > 0 && d.messages.every(m => Array.isArray(m.meta.xDeath) && m.meta.xDeath.length > 0)' "rabbitmq: dead-lettered messages carry x-death"

$QS queues "$SQS" --json >"$tmp/sq.json"
check "$tmp/sq.json" 'd.some(q => q.name === "orders" && q.deadLetterTargets.some(t => t.queueName === "orders-dlq"))' "sqs: orders has RedrivePolicy to orders-dlq"
check "$tmp/sq.json" 'd.some(q => q.name === "orders-dlq" && q.isDeadLetterQueue && q.depth > 0)' "sqs: orders-dlq holds dead letters"
$QS peek "$SQS" orders-dlq --limit 5 --accept-side-effects --json >"$tmp/sp.json"
check "$tmp/sp.json" 'd.messages.length > 0' "sqs: peek orders-dlq"

$QS export "$REDIS" payments --state failed --out "$tmp/failed.jsonl" >/dev/null
lines=$(wc -l <"$tmp/failed.jsonl")
[ "$lines" -gt 1 ] && echo "ok: export wrote $lines lines"
$QS peek "$tmp/failed.jsonl" --json >"$tmp/fp.json"
check "$tmp/fp.json" 'd.messages.length > 0' "snapshot: peek --file reads the export back"
echo "CLI smoke: all checks passed"
