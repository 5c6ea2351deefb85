#!/usr/bin/env python3
"""A development OpenID Connect issuer on loopback, to try `accounts/signin/idtoken` without
Apple or Google: serves its discovery document and JWKS, and prints ID tokens it signs.

    pip install pyjwt cryptography
    python3 scripts/dev-issuer.py serve --port 9400 &          # issuer http://127.0.0.1:9400
    python3 scripts/dev-issuer.py token --port 9400 --sub alice-1 --aud com.example.app \
        --email alice@example.com

The key lives in ./dev-issuer-key.pem (made on first use). Never use this issuer in production:
Nimbus accepts plain-http issuers only on loopback addresses.
"""
import argparse, base64, http.server, json, os, time, uuid

import jwt
from cryptography.hazmat.primitives import serialization
from cryptography.hazmat.primitives.asymmetric import ec

KEY_FILE = "dev-issuer-key.pem"
KID = "dev-1"


def key():
    if not os.path.exists(KEY_FILE):
        pem = ec.generate_private_key(ec.SECP256R1()).private_bytes(
            serialization.Encoding.PEM, serialization.PrivateFormat.PKCS8, serialization.NoEncryption())
        with open(KEY_FILE, "wb") as f:
            f.write(pem)
    with open(KEY_FILE, "rb") as f:
        return serialization.load_pem_private_key(f.read(), password=None)


def b64(n):
    return base64.urlsafe_b64encode(n.to_bytes(32, "big")).rstrip(b"=").decode()


def serve(port):
    issuer = f"http://127.0.0.1:{port}"
    numbers = key().public_key().public_numbers()
    jwks = {"keys": [{"kty": "EC", "crv": "P-256", "alg": "ES256", "use": "sig", "kid": KID,
                      "x": b64(numbers.x), "y": b64(numbers.y)}]}
    documents = {"/.well-known/openid-configuration": {"issuer": issuer, "jwks_uri": issuer + "/jwks"},
                 "/jwks": jwks}

    class Handler(http.server.BaseHTTPRequestHandler):
        def do_GET(self):
            body = documents.get(self.path)
            self.send_response(200 if body else 404)
            self.send_header("Content-Type", "application/json")
            self.end_headers()
            self.wfile.write(json.dumps(body or {}).encode())

    print(f"issuer {issuer}", flush=True)
    http.server.HTTPServer(("127.0.0.1", port), Handler).serve_forever()


def token(port, sub, aud, email, nonce, lifetime):
    now = int(time.time())
    claims = {"iss": f"http://127.0.0.1:{port}", "sub": sub, "aud": aud, "iat": now, "exp": now + lifetime,
              "jti": str(uuid.uuid4())}
    if email:
        claims.update(email=email, email_verified=True)
    if nonce:
        claims["nonce"] = nonce
    print(jwt.encode(claims, key(), algorithm="ES256", headers={"kid": KID}))


if __name__ == "__main__":
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("command", choices=["serve", "token"])
    parser.add_argument("--port", type=int, default=9400)
    parser.add_argument("--sub", default="dev-user")
    parser.add_argument("--aud", default="com.example.app")
    parser.add_argument("--email")
    parser.add_argument("--nonce")
    parser.add_argument("--lifetime", type=int, default=600)
    args = parser.parse_args()
    if args.command == "serve":
        serve(args.port)
    else:
        token(args.port, args.sub, args.aud, args.email, args.nonce, args.lifetime)
