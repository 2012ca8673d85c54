#!/usr/bin/env bash
# Runs the ali-ons JavaScript client (3.12.0) against a fresh
# `rocketstore serve`: 20 sends, then a clustering push consumer with a
# tag filter that must receive all of them. ali-ons does not create topics
# (it answers TOPIC_NOT_EXIST with an error), so the official Go client's
# example creates JsTopic first. Not part of CI (it needs npm ci).
#
#   e2e/js-client/run.sh        (NAMESRV, default 127.0.0.1:19876)
set -eu
cd "$(dirname "$0")"
NAMESRV=${NAMESRV:-127.0.0.1:19876}
WORK=$(mktemp -d)
npm ci --silent
(cd ../.. && go build -o "$WORK/rocketstore" ./cmd/rocketstore)
"$WORK/rocketstore" serve --dir "$WORK/data" --listen "$NAMESRV" >"$WORK/serve.log" 2>&1 &
SERVER=$!
trap 'kill -TERM $SERVER; wait $SERVER' EXIT
sleep 1
(cd .. && go run ./example -namesrv "$NAMESRV" -topic JsTopic -n 2 >/dev/null)
node run.js "$NAMESRV" | grep -v '^\[mq'
if grep -E "level=(WARN|ERROR)" "$WORK/serve.log"; then
	echo "server logged warnings" >&2
	exit 1
fi
