#!/usr/bin/env python3
"""Header poisoning and account enumeration against a real `nimbus serve` (docs/SECURITY.md).

Starts its own server with `--public-url https://sync.fuzz.example`, built-in accounts on and
mail written to the log, then:

1. sends seeded random `Host`, `X-Forwarded-Host`, `X-Forwarded-Proto` and `Forwarded`
   values to every operation that writes an absolute URL or a mail (tokens/create,
   assets/upload, a signed-out query's redirectURL, sign-up, forgot password, the sign-in
   page, /health), and fails on any 5xx, on an answer other than 400 to a foreign host, on
   an absolute URL that does not start with the public URL, and on an attacker's host in
   any answer or in any mail the server logged;
2. signs an address up with a password of the attacker's, once for an address that already
   has a verified account and once for one that has none, signs in with it, and fails when
   the two answers differ.

Usage: fuzz-headers.py NIMBUS_BIN WORK_DIR   (scripts/fuzz-api.sh runs it)
Environment: FUZZ_HEADER_ROUNDS (default 400), FUZZ_SEED (default fixed).
"""
import http.client
import json
import os
import random
import re
import subprocess
import sys
import time
import urllib.parse

PUBLIC = "https://sync.fuzz.example"
CONTAINER = "iCloud.com.example.fuzzheaders"
MARK = "evil"  # every attacker host contains it


def run(binary, *args):
    return subprocess.run([binary, *args], check=True, capture_output=True, text=True).stdout


def main():
    binary, work = sys.argv[1], sys.argv[2]
    rounds = int(os.environ.get("FUZZ_HEADER_ROUNDS", "400"))
    seed = os.environ.get("FUZZ_SEED", "20261127")
    rng = random.Random(None if seed == "random" else seed)
    data = os.path.join(work, "headers-data")
    api = json.loads(run(binary, "container", "create", CONTAINER, "--data", data, "--json"))["apiToken"]
    web = json.loads(run(binary, "user", "create", "fuzzer", "--container", CONTAINER, "--data", data, "--json"))[
        "webAuthToken"]
    run(binary, "container", "set-signin", CONTAINER, "--passwords", "on", "--redirect-origin", "https://app.example",
        "--data", data)
    out, err = open(os.path.join(work, "headers-server.out"), "w"), open(os.path.join(work, "headers-server.err"), "w")
    server = subprocess.Popen([binary, "serve", "--port", "0", "--data", data, "--public-url", PUBLIC,
                               "--trusted-proxy", "127.0.0.1"], stdout=out, stderr=err)
    try:
        port = None
        for _ in range(600):
            match = re.search(r"listening on http://[^:]+:(\d+)", open(out.name).read())
            if match:
                port = int(match.group(1))
                break
            if server.poll() is not None:
                break
            time.sleep(0.1)
        if port is None:
            print("fuzz-headers: the server did not start", file=sys.stderr)
            print(open(err.name).read(), file=sys.stderr)
            return 1
        print(f"fuzz-headers: nimbus serve on 127.0.0.1:{port} with --public-url {PUBLIC}, {rounds} rounds")
        failures = poison(port, api, web, rounds, rng) + enumeration(port, api, err.name)
        if server.poll() is not None:
            failures.append("the server exited")
        mails = [line for line in open(err.name) if "body=" in line or '"body"' in line]
        failures += [f"a mail names an attacker's host: {line.strip()[:300]}" for line in mails if MARK in line]
        if not mails:
            failures.append("no mail was logged: the mail checks saw nothing")
    finally:
        server.terminate()
        try:
            server.wait(timeout=20)
        except subprocess.TimeoutExpired:
            server.kill()
            server.wait()
    for failure in failures[:40]:
        print(f"fuzz-headers: FAIL: {failure}", file=sys.stderr)
    if failures:
        return 1
    print("fuzz-headers: no poisoned URL or mail, no 5xx, sign-in answers alike")
    return 0


def request(port, method, path, body=None, headers=()):
    """One request with the headers exactly as given (Host included, or left out)."""
    connection = http.client.HTTPConnection("127.0.0.1", port, timeout=60)
    try:
        connection.putrequest(method, path, skip_host=True, skip_accept_encoding=True)
        names = {name.lower() for name, _ in headers}
        if "host" not in names:
            connection.putheader("Host", f"127.0.0.1:{port}")
        for name, value in headers:
            if value is not None:
                connection.putheader(name, value)
        payload = json.dumps(body).encode() if body is not None else b""
        connection.putheader("Content-Type", "application/json")
        connection.putheader("Content-Length", str(len(payload)))
        connection.endheaders(payload)
        response = connection.getresponse()
        return response.status, response.read().decode("utf-8", "replace")
    finally:
        connection.close()


def hosts(rng, port):
    plain = [f"{MARK}.example", f"{MARK}.example:443", f"sync.fuzz.example.{MARK}.example", f"{MARK}.example/x",
             f"sync.fuzz.example@{MARK}.example", f"[::1]", f"127.0.0.1:{port}", "sync.fuzz.example",
             f"sync.fuzz.example, {MARK}.example", f"{MARK}.example, sync.fuzz.example", "", " ",
             f"{MARK}.example\t", "a" * 300 + MARK, f"xn--{MARK}-9ta.example", f"{MARK}.example:99999"]
    return rng.choice(plain)


def poisoned_headers(rng, port):
    headers = []
    if rng.random() < 0.5:
        headers.append(("Host", hosts(rng, port)))
    if rng.random() < 0.5:
        headers.append(("X-Forwarded-Host", hosts(rng, port)))
    if rng.random() < 0.4:
        headers.append(("X-Forwarded-Proto", rng.choice(["https", "http", "javascript", f"{MARK}", "HTTPS, http"])))
    if rng.random() < 0.4:
        headers.append(("Forwarded", rng.choice([
            f"host={MARK}.example", f'host="{MARK}.example";proto=https', f"for=1.2.3.4;host={MARK}.example, host=sync.fuzz.example",
            f"host=sync.fuzz.example, host={MARK}.example", "proto=https", f"host={MARK}.example;;;", '"'])))
    return headers or [("X-Forwarded-Host", f"{MARK}.example")]


PLAIN = re.compile(r"^[A-Za-z0-9\-.:\[\]_]{1,255}$")


def named_host(headers, port):
    """The host the server should check: a trusted proxy's (the test client is on 127.0.0.1)
    last forwarded element when it is a plain host[:port], else Host."""
    values = dict((name.lower(), value) for name, value in headers)
    forwarded = None
    if "forwarded" in values:
        last = values["forwarded"].split(",")[-1]
        for pair in last.split(";"):
            if pair.strip().lower().startswith("host="):
                forwarded = pair.strip()[5:].strip('"')
                break
    elif "x-forwarded-host" in values:
        forwarded = values["x-forwarded-host"].split(",")[-1].strip()
    if forwarded is not None and PLAIN.match(forwarded):
        return forwarded
    return values.get("host", f"127.0.0.1:{port}").strip()


def poison(port, api, web, rounds, rng):
    failures = []
    base = f"/database/1/{CONTAINER}/development"
    query = f"ckAPIToken={api}&ckWebAuthToken={web}"
    operations = [
        ("POST", f"{base}/tokens/create?{query}", {"apnsEnvironment": "development"}),
        ("POST", f"{base}/private/assets/upload?{query}",
         {"zoneID": {"zoneName": "_defaultZone"}, "tokens": [{"recordName": "r", "recordType": "T", "fieldName": "f"}]}),
        ("POST", f"{base}/private/records/query?ckAPIToken={api}", {"query": {"recordType": "T"}}),
        ("POST", f"{base}/public/accounts/signup?ckAPIToken={api}", "signup"),
        ("POST", f"{base}/public/accounts/password/forgot?ckAPIToken={api}", "forgot"),
        ("GET", f"/signin/{CONTAINER}/development/signup", None),
        ("GET", "/health", None),
    ]
    for index in range(rounds):
        method, path, body = operations[index % len(operations)]
        if body == "signup":
            body = {"email": f"user{rng.randrange(10 ** 6)}@example.com", "password": "correct horse"}
        elif body == "forgot":
            body = {"email": f"user{rng.randrange(10 ** 6)}@example.com"}
        headers = poisoned_headers(rng, port)
        try:
            status, text = request(port, method, path, body, headers)
        except (OSError, http.client.HTTPException) as error:
            failures.append(f"{method} {path} {headers}: {error!r}")
            continue
        named = named_host(headers, port).lower()
        allowed = named in ("sync.fuzz.example", "sync.fuzz.example:443", f"127.0.0.1:{port}", f"localhost:{port}",
                            f"[::1]:{port}")
        where = f"{method} {path.split('?')[0]} {headers}"
        if status >= 500:
            failures.append(f"{where}: {status} {text[:200]}")
        elif not allowed and status != 400:
            failures.append(f"{where}: a foreign host answered {status}, not 400: {text[:200]}")
        elif allowed and status == 400 and "answers to" in text:
            failures.append(f"{where}: the public host was refused: {text[:200]}")
        if MARK in text:
            failures.append(f"{where}: the answer names an attacker's host: {text[:300]}")
        for url in re.findall(r"https?://[^\s\"'<>]+", text):
            if not url.startswith(PUBLIC + "/") and url != PUBLIC and "w3.org" not in url:
                failures.append(f"{where}: an absolute URL off the public URL: {url}")
    return failures


def enumeration(port, api, log):
    """Sign-in after an attacker's sign-up answers alike for a verified address and a new one."""
    base = f"/database/1/{CONTAINER}/development/public"
    victim, stranger = "victim@example.com", "stranger@example.com"
    request(port, "POST", f"{base}/accounts/signup?ckAPIToken={api}", {"email": victim, "password": "victim's own"})
    code = None
    for _ in range(100):
        codes = re.findall(r"verification code is ([0-9a-f]{16})", open(log).read())
        if codes:
            code = codes[-1]
            break
        time.sleep(0.1)
    if code is None:
        return ["enumeration: no verification code in the log"]
    status, text = request(port, "POST", f"{base}/accounts/verify?ckAPIToken={api}", {"email": victim, "code": code})
    if status != 200:
        return [f"enumeration: verifying the victim answered {status}: {text[:200]}"]
    answers = {}
    for address in (victim, stranger):
        request(port, "POST", f"{base}/accounts/signup?ckAPIToken={api}", {"email": address, "password": "attacker's"})
        status, text = request(port, "POST", f"{base}/accounts/signin?ckAPIToken={api}",
                               {"email": address, "password": "attacker's"})
        reply = json.loads(text)
        answers[address] = (status, reply.get("serverErrorCode"), reply.get("reason"))
    if answers[victim] != answers[stranger]:
        return [f"enumeration: sign-in tells the addresses apart: {answers}"]
    return []


if __name__ == "__main__":
    sys.exit(main())
