"""Runs moto server with DynamoDB and S3 requests applied one at a time.

moto serves requests on threads without locking its DynamoDB and S3
backends, so two concurrent conditional writes (PutItem with
attribute_not_exists, PutObject with If-None-Match) can both succeed. Real
DynamoDB and S3 apply them atomically, and the service's idempotency rests
on that, so the tests must see the real semantics. The state dump
(/moto-api/data.json, which the local mailbox reads) walks those backends,
so it takes the same turn; otherwise it can meet a dictionary changing
under it and fail. Everything else (SQS long polls above all) stays
concurrent.

Usage: python3 serve.py HOST PORT
"""

import sys
import threading

from moto.moto_server.werkzeug_app import DomainDispatcherApplication, create_backend_app
from werkzeug.serving import run_simple

SERIALISED = ("/dynamodb/aws4_request", "/s3/aws4_request")


def serialise(app):
    lock = threading.Lock()

    def wrapped(environ, start_response):
        dump = environ.get("PATH_INFO", "") == "/moto-api/data.json"
        if not dump and not any(s in environ.get("HTTP_AUTHORIZATION", "") for s in SERIALISED):
            return app(environ, start_response)
        with lock:
            # The response is produced inside the lock: that is when moto
            # changes its state.
            return list(app(environ, start_response))

    return wrapped


def main():
    host, port = sys.argv[1], int(sys.argv[2])
    app = DomainDispatcherApplication(create_backend_app)
    run_simple(host, port, serialise(app), threaded=True)


if __name__ == "__main__":
    main()
