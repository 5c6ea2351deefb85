#!/usr/bin/env bash
# Fuzzes a real `nimbus serve` against its own OpenAPI document with schemathesis: every
# operation of /openapi.yaml (the push channel and the web courier included), generated
# valid and invalid requests, sent with valid credentials (an API token and a signed-in
# user's web auth token, provisioned here). Fails on any 5xx answer, a dropped connection,
# or a server that exits or logs a crash. Then scripts/fuzz-headers.py poisons Host and
# forwarding headers against a server with a public URL, and checks that sign-in tells no
# address apart. Stops the servers whatever happens.
#
# Usage: scripts/fuzz-api.sh            (after `swift build`; .ci/run calls it after the tests)
# Environment:
#   NIMBUS_BIN                  the nimbus binary (default: `swift build --product nimbus`, then .build/debug/nimbus)
#   FUZZ_MAX_TIME               seconds of generated requests (default 120; the run takes about
#                               40 s more, plus the first install of schemathesis)
#   FUZZ_SEED                   schemathesis's seed (default: fixed, so runs repeat; "random" for a new one)
#   FUZZ_ALLOW_SERVER_ERRORS=1  report 5xx answers without failing (a server crash still fails)
#   FUZZ_CHECKS                 schemathesis checks (default not_a_server_error). To also hold the
#                               answers to the document: not_a_server_error,status_code_conformance,
#                               content_type_conformance,response_schema_conformance (these pass, but
#                               for the web courier's empty 200 after a poll times out). "all" adds
#                               checks that do not fit CloudKit's protocol (421 for missing
#                               credentials, tokens only the server issues).
#   FUZZ_VENV                   where schemathesis's virtualenv lives (kept between runs)
#   FUZZ_LOG_DIR                where the server's output and schemathesis's report are kept
set -euo pipefail
cd "$(dirname "$0")/.."

SCHEMATHESIS_VERSION=4.32.5
FUZZ_MAX_TIME=${FUZZ_MAX_TIME:-120}
FUZZ_SEED=${FUZZ_SEED:-20261121}
FUZZ_CHECKS=${FUZZ_CHECKS:-not_a_server_error}
FUZZ_VENV=${FUZZ_VENV:-/tmp/nimbus-fuzz-venv-$SCHEMATHESIS_VERSION}
FUZZ_LOG_DIR=${FUZZ_LOG_DIR:-/tmp/nimbus-fuzz-logs}
CONTAINER=iCloud.com.example.fuzz

WORK=$(mktemp -d /tmp/nimbus-fuzz.XXXXXX)
SERVER_PID=""
stop_server() {
    if [ -n "$SERVER_PID" ] && kill -0 "$SERVER_PID" 2>/dev/null; then
        kill -TERM "$SERVER_PID" 2>/dev/null || true
        for _ in $(seq 1 100); do kill -0 "$SERVER_PID" 2>/dev/null || break; sleep 0.1; done
        kill -KILL "$SERVER_PID" 2>/dev/null || true
        wait "$SERVER_PID" 2>/dev/null || true
    fi
    SERVER_PID=""
}
cleanup() {
    stop_server
    mkdir -p "$FUZZ_LOG_DIR"
    cp "$WORK"/server.out "$WORK"/server.err "$FUZZ_LOG_DIR"/ 2>/dev/null || true
    rm -rf "$WORK"
}
trap cleanup EXIT
trap 'exit 130' INT TERM

# --- schemathesis, pinned, in a virtualenv (Debian's Python is externally managed) ----------
if ! "$FUZZ_VENV/bin/st" --version 2>/dev/null | grep -q "version $SCHEMATHESIS_VERSION\$"; then
    echo "fuzz: installing schemathesis $SCHEMATHESIS_VERSION into $FUZZ_VENV"
    rm -rf "$FUZZ_VENV"
    if ! python3 -m venv "$FUZZ_VENV" >/dev/null 2>&1; then
        export DEBIAN_FRONTEND=noninteractive
        SUDO=""; [ "$(id -u)" -eq 0 ] || SUDO="sudo"
        $SUDO apt-get update -qq
        $SUDO apt-get install -y -qq python3-venv >/dev/null
        rm -rf "$FUZZ_VENV"
        python3 -m venv "$FUZZ_VENV"
    fi
    "$FUZZ_VENV/bin/pip" install -q --disable-pip-version-check "schemathesis==$SCHEMATHESIS_VERSION"
fi

# --- the server, provisioned --------------------------------------------------------------
if [ -z "${NIMBUS_BIN:-}" ]; then
    swift build --product nimbus >/dev/null
    NIMBUS_BIN=.build/debug/nimbus
fi
DATA="$WORK/data"
json_field() { python3 -c 'import json, sys; print(json.load(sys.stdin)[sys.argv[1]])' "$1"; }
API_TOKEN=$("$NIMBUS_BIN" container create "$CONTAINER" --data "$DATA" --json | json_field apiToken)
WEB_TOKEN=$("$NIMBUS_BIN" user create fuzzer --container "$CONTAINER" --data "$DATA" --json | json_field webAuthToken)

"$NIMBUS_BIN" serve --port 0 --data "$DATA" >"$WORK/server.out" 2>"$WORK/server.err" &
SERVER_PID=$!
URL=""
for _ in $(seq 1 600); do
    URL=$(sed -n 's/^Nimbus is listening on \(http:\/\/[^ ]*\).*/\1/p' "$WORK/server.out" | head -1)
    [ -n "$URL" ] && break
    kill -0 "$SERVER_PID" 2>/dev/null || break
    sleep 0.1
done
if [ -z "$URL" ]; then
    echo "fuzz: the server did not start" >&2
    cat "$WORK/server.out" "$WORK/server.err" >&2
    exit 1
fi
echo "fuzz: nimbus serve at $URL (pid $SERVER_PID), schemathesis $SCHEMATHESIS_VERSION for ${FUZZ_MAX_TIME}s"

# Credentials: schemathesis fills the document's security schemes (`ckAPIToken` and
# `ckWebAuthToken` query parameters); the container path parameter is pinned to the one
# provisioned, so requests get past authentication and reach the handlers.
cat >"$WORK/schemathesis.toml" <<EOF
[auth.openapi.apiToken]
api_key = "\${FUZZ_API_TOKEN}"

[auth.openapi.webAuthToken]
api_key = "\${FUZZ_WEB_TOKEN}"

[parameters]
"path.container" = "$CONTAINER"
EOF

CHECKS="$FUZZ_CHECKS"
if [ "${FUZZ_ALLOW_SERVER_ERRORS:-0}" = "1" ]; then
    echo "fuzz: FUZZ_ALLOW_SERVER_ERRORS=1: 5xx answers are reported, not failures"
fi
SEED_ARGS=(--seed "$FUZZ_SEED")
[ "$FUZZ_SEED" = "random" ] && SEED_ARGS=()

# Refreshing or revoking the fuzz user's session, or deleting its account, would sign it out
# and leave the rest of the run to 401s: those operations are tested in SessionTests and
# AccountDeletionTests instead.
# One worker: hypothesis's lambda descriptions race in Python 3.11's ast module with more
# ("SystemError: AST constructor recursion depth mismatch"). Run from the work directory,
# where schemathesis keeps its example database.
set +e
(cd "$WORK" && FUZZ_API_TOKEN="$API_TOKEN" FUZZ_WEB_TOKEN="$WEB_TOKEN" \
    "$FUZZ_VENV/bin/st" --config-file "$WORK/schemathesis.toml" run "$URL/openapi.yaml" \
    --url "$URL" \
    --checks "$CHECKS" \
    --max-time "$FUZZ_MAX_TIME" \
    --workers 1 \
    --request-timeout 45 \
    --generation-allow-x00 true \
    --no-color \
    --report junit --report-dir "$WORK/report" \
    --exclude-path-regex '/(sessions/refresh|sessions/revoke|accounts/delete)$' \
    "${SEED_ARGS[@]}") 2>&1 | tee "$WORK/schemathesis.log"
ST_STATUS=${PIPESTATUS[0]}
set -e
mkdir -p "$FUZZ_LOG_DIR"
cp "$WORK/schemathesis.log" "$FUZZ_LOG_DIR/" 2>/dev/null || true
cp -r "$WORK/report" "$FUZZ_LOG_DIR/" 2>/dev/null || true

# --- verdict ------------------------------------------------------------------------------
FAILED=0
if ! kill -0 "$SERVER_PID" 2>/dev/null; then
    echo "fuzz: FAIL: the server exited during the run" >&2
    FAILED=1
elif ! curl -fsS --max-time 10 "$URL/health" >/dev/null; then
    echo "fuzz: FAIL: the server no longer answers /health" >&2
    FAILED=1
fi
if grep -E -i "fatal error|crash|stack dump|Illegal instruction|Segmentation fault" "$WORK/server.err" "$WORK/server.out" >&2; then
    echo "fuzz: FAIL: the server logged a crash (above)" >&2
    FAILED=1
fi
if grep -E "Network Error|Connection (aborted|reset|refused)|RemoteDisconnected|Read timed out" "$WORK/schemathesis.log" >/dev/null; then
    echo "fuzz: FAIL: a connection was dropped or timed out (see the log above)" >&2
    FAILED=1
fi
if [ "$ST_STATUS" -ne 0 ]; then
    if [ "${FUZZ_ALLOW_SERVER_ERRORS:-0}" = "1" ] && [ "$FAILED" -eq 0 ]; then
        echo "fuzz: schemathesis reported failures (exit $ST_STATUS); allowed by FUZZ_ALLOW_SERVER_ERRORS=1"
    else
        echo "fuzz: FAIL: schemathesis reported failures (exit $ST_STATUS)" >&2
        FAILED=1
    fi
fi
stop_server

# --- header poisoning and account enumeration (docs/SECURITY.md), a server of its own -----
if ! python3 scripts/fuzz-headers.py "$NIMBUS_BIN" "$WORK" 2>&1 | tee "$WORK/headers.log"; then
    FAILED=1
fi
cp "$WORK"/headers.log "$WORK"/headers-server.err "$FUZZ_LOG_DIR"/ 2>/dev/null || true
if [ "$FAILED" -ne 0 ]; then
    echo "fuzz: server output and the report are in $FUZZ_LOG_DIR" >&2
    exit 1
fi
echo "fuzz: no 5xx, no dropped connection, the server is still up"
