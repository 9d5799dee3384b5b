"""Runs moto server with DynamoDB and S3 requests applied one at a time.

moto serves requests on threads without locking its DynamoDB and S3
backends, so two concurrent conditional writes (PutItem with
attribute_not_exists, PutObject with If-None-Match) can both succeed. Real
DynamoDB and S3 apply them atomically, and the service's idempotency rests
on that, so the tests must see the real semantics. The state dump
(/moto-api/data.json, which moto's dashboard reads) walks those backends,
so it takes the same turn; otherwise it can meet a dictionary changing
under it and fail. Everything else (SQS long polls above all) stays
concurrent.

GET /_oracle/ses/raw-messages lists the raw messages SES accepted, oldest
first, as data.json's "ses"/"RawMessage" does. data.json serialises every
instance of every model (each DynamoDB item, SQS message, S3 object) and
takes seconds once a test run has filled moto; the mailbox, read every
100 ms while a test waits for an email, must not cost that.

Usage: python3 serve.py HOST PORT
"""

import json
import sys
import threading

from moto.moto_server.werkzeug_app import DomainDispatcherApplication, create_backend_app
from moto.ses.models import RawMessage
from werkzeug.serving import run_simple

SERIALISED = ("/dynamodb/aws4_request", "/s3/aws4_request")


RAW_MESSAGES = "/_oracle/ses/raw-messages"


def raw_messages(start_response):
    # The list data.json reads (every RawMessage moto made, in order);
    # copying it is one step under the GIL, so no lock is needed.
    sent = [{"id": m.id, "destinations": m.destinations, "raw_data": m.raw_data} for m in list(RawMessage.instances_tracked)]
    body = json.dumps(sent).encode()
    start_response("200 OK", [("Content-Type", "application/json"), ("Content-Length", str(len(body)))])
    return [body]


def serialise(app):
    lock = threading.Lock()

    def wrapped(environ, start_response):
        if environ.get("PATH_INFO", "") == RAW_MESSAGES:
            return raw_messages(start_response)
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
