# Sourced, not run: `start_throwaway_s3` installs moto's S3-compatible server from PyPI if it
# is missing (`pip install 'moto[server]'`), starts it (scripts/s3-test-server.py) on a free
# loopback port with request authentication on (every request after the setup must carry a
# valid SigV4 signature, or it is refused with SignatureDoesNotMatch; pre-signed URLs are
# served unchecked, which moto cannot do), makes an IAM user allowed s3:* and an access key
# for it, creates the bucket `nimbus-test`, and exports what the tests read:
# NIMBUS_TEST_S3_URL (an asset location; THROWAWAY_S3_URL is the same) and that key in
# AWS_ACCESS_KEY_ID / AWS_SECRET_ACCESS_KEY. The server is stopped when the sourcing script
# exits (after whatever else it already stops on exit, such as throwaway-postgres.sh's
# cluster). Used by .ci/run. moto keeps objects in memory: a throwaway server for tests.

start_throwaway_s3() {
    if ! command -v moto_server >/dev/null 2>&1; then
        echo "installing moto's S3 server from PyPI"
        python3 -m pip install -q 'moto[server]'
    fi
    S3PORT=$(python3 -c 'import socket; s=socket.socket(); s.bind(("127.0.0.1", 0)); print(s.getsockname()[1])')
    S3LOG=$(mktemp /tmp/nimbus-s3.XXXXXX.log)
    # The first 4 requests (the setup below) go unauthenticated; every later one is checked.
    # scripts/s3-test-server.py is moto_server serving pre-signed URLs (which moto cannot check).
    INITIAL_NO_AUTH_ACTION_COUNT=4 python3 "$(dirname "${BASH_SOURCE[0]}")/s3-test-server.py" -H 127.0.0.1 -p "$S3PORT" \
        >"$S3LOG" 2>&1 &
    S3PID=$!
    local previous
    previous=$(trap -p EXIT | sed -E "s/^trap -- '(.*)' EXIT$/\1/")
    trap "stop_throwaway_s3${previous:+; $previous}" EXIT
    local base="http://127.0.0.1:$S3PORT"
    for _ in $(seq 1 100); do
        if curl -s -o /dev/null "$base/moto-api/"; then break; fi
        sleep 0.2
    done
    # IAM calls are routed by the service their (unchecked, during setup) credential names.
    local iam=(-s -X POST "$base/" -H "Authorization: AWS4-HMAC-SHA256 Credential=setup/20260101/us-east-1/iam/aws4_request, SignedHeaders=host, Signature=0")
    curl "${iam[@]}" -d "Action=CreateUser&UserName=nimbus&Version=2010-05-08" >/dev/null
    curl "${iam[@]}" --data-urlencode "Action=PutUserPolicy" --data-urlencode "UserName=nimbus" \
        --data-urlencode "PolicyName=s3" --data-urlencode "Version=2010-05-08" \
        --data-urlencode 'PolicyDocument={"Version":"2012-10-17","Statement":[{"Effect":"Allow","Action":"s3:*","Resource":"*"}]}' >/dev/null
    local key
    key=$(curl "${iam[@]}" -d "Action=CreateAccessKey&UserName=nimbus&Version=2010-05-08")
    curl -sf -o /dev/null -X PUT "$base/nimbus-test" \
        || { echo "moto's server did not start on port $S3PORT (see $S3LOG)"; return 1; }
    AWS_ACCESS_KEY_ID=$(sed -n 's/.*<AccessKeyId>\([^<]*\)<\/AccessKeyId>.*/\1/p' <<<"$key")
    AWS_SECRET_ACCESS_KEY=$(sed -n 's/.*<SecretAccessKey>\([^<]*\)<\/SecretAccessKey>.*/\1/p' <<<"$key")
    [ -n "$AWS_ACCESS_KEY_ID" ] && [ -n "$AWS_SECRET_ACCESS_KEY" ] \
        || { echo "moto's server made no access key (see $S3LOG)"; return 1; }
    export AWS_ACCESS_KEY_ID AWS_SECRET_ACCESS_KEY
    echo "throwaway S3 (moto, signatures checked) on 127.0.0.1:$S3PORT, bucket nimbus-test"
    export THROWAWAY_S3_URL="s3://nimbus-test?endpoint=$base&region=us-east-1&style=path"
    export NIMBUS_TEST_S3_URL="$THROWAWAY_S3_URL"
}

stop_throwaway_s3() {
    kill "$S3PID" 2>/dev/null || true
    wait "$S3PID" 2>/dev/null || true
    rm -f "$S3LOG"
}
