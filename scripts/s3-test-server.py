"""moto's S3-compatible server for the tests (scripts/throwaway-s3.sh starts it), with one change.

Run with INITIAL_NO_AUTH_ACTION_COUNT set, moto checks the SigV4 signature of every request
against the IAM user's key and refuses a wrong one (SignatureDoesNotMatch): Nimbus's signer is
checked by a real verifier on every request the tests make. moto 5 cannot check a pre-signed
URL's query signature (it looks for an Authorization header and fails with a 500), so a request
carrying its signature in its query (X-Amz-Signature) is served without that check; the pre-signed query is
checked against AWS's published example instead (SigV4SignerTests.presignedURL). moto also
checks a signature against the query decoded, which fails every listing by prefix (boto3's
too): the query is given to the check as it was sent.

Usage: python3 scripts/s3-test-server.py -H 127.0.0.1 -p PORT (moto_server's arguments).
"""

import sys

import flask

from moto.core.authorization import ActionAuthenticatorMixin
from moto.server import main

_checked = ActionAuthenticatorMixin._authenticate_and_authorize_s3_action


def _checked_unless_presigned(self, bucket_name=None, key_name=None):
    query = getattr(self, "querystring", None) or {}
    if "X-Amz-Signature" in query or "Signature" in query:
        return None
    # moto checks the signature against the URL with its query decoded ("prefix=a/b/"), which
    # no client signs ("prefix=a%2Fb%2F"; boto3's own listings fail the same way): check it
    # against the query as it was sent.
    raw = flask.request.environ.get("QUERY_STRING") if flask.has_request_context() else None
    if raw is None:
        return _checked(self, bucket_name, key_name)
    decoded = self.uri
    self.uri = decoded.split("?", 1)[0] + ("?" + raw if raw else "")
    try:
        return _checked(self, bucket_name, key_name)
    finally:
        self.uri = decoded


ActionAuthenticatorMixin._authenticate_and_authorize_s3_action = _checked_unless_presigned

if __name__ == "__main__":
    sys.exit(main())
