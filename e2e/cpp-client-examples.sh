#!/usr/bin/env bash
# Runs the example programs of the Apache RocketMQ C++ client 2.x
# (rocketmq-client-cpp, the core beneath the Python, PHP and Go v1 clients)
# against a fresh `rocketstore serve`, and reports each one's result.
#
#   e2e/cpp-client-examples.sh BINDIR
#
# BINDIR holds the examples as the client's CMake build leaves them
# (SyncProducer, AsyncProducer, BatchProducer, PushConsumer,
# OrderlyPushConsumer, PullConsumer); build them with the system's boost,
# libevent, jsoncpp and OpenSSL (the client's build.sh downloads its
# dependencies instead). CI cannot fetch the client's source, so CI runs
# the table tests of the server package instead of this script.
#
# Environment: NAMESRV (default 127.0.0.1:19876), MSGS (default 50),
# TIMEOUT per example in seconds (default 90).
set -u
BINDIR=${1:?usage: $0 BINDIR (the C++ client examples)}
NAMESRV=${NAMESRV:-127.0.0.1:19876}
MSGS=${MSGS:-50}
TIMEOUT=${TIMEOUT:-90}
ROOT=$(cd "$(dirname "$0")/.." && pwd)
WORK=$(mktemp -d)
BIN="$WORK/rocketstore"

(cd "$ROOT" && go build -o "$BIN" ./cmd/rocketstore) || exit 2
"$BIN" serve --dir "$WORK/data" --listen "$NAMESRV" --log-level warn >"$WORK/serve.log" 2>&1 &
SERVER=$!
stop() {
	kill -TERM "$SERVER" 2>/dev/null
	wait "$SERVER" 2>/dev/null
}
trap stop EXIT
sleep 1

fails=0
run() { # name, then the example's arguments
	local name=$1
	shift
	if [ ! -x "$BINDIR/$name" ]; then
		echo "SKIP $name (not built)"
		return
	fi
	if timeout "$TIMEOUT" "$BINDIR/$name" -n "$NAMESRV" "$@" >"$WORK/$name.log" 2>&1; then
		echo "PASS $name $*"
	else
		echo "FAIL $name $* (exit $?; log $WORK/$name.log)"
		fails=$((fails + 1))
	fi
}

run SyncProducer -g CppSyncPG -t CppSync -m "$MSGS"
run AsyncProducer -g CppAsyncPG -t CppAsync -m "$MSGS"
run BatchProducer -g CppBatchPG -t CppBatch -m "$MSGS"
run PushConsumer -g CppPushCG -t CppPush -m "$MSGS"
run PushConsumer -g CppBroadcastCG -t CppBroadcast -m "$MSGS" -b 1
run OrderlyPushConsumer -g CppOrderlyCG -t CppOrderly -m "$MSGS"
run PullConsumer -g CppPullCG -t CppSync

stop
trap - EXIT
echo "--- queues after the run (CppBatch must hold every batched message, not one per batch):"
"$BIN" stats --dir "$WORK/data" | grep -E "^(TOPIC|GROUP)|Cpp" || true
echo "--- server warnings (refused fields are logged here):"
grep -E "level=(WARN|ERROR)" "$WORK/serve.log" || echo "(none)"
echo "logs in $WORK"
[ "$fails" -eq 0 ]
