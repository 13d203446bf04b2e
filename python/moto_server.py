"""moto's S3 server with S3's atomic conditional writes, for the test suites.

    python python/moto_server.py -H 127.0.0.1 -p PORT

moto checks `If-None-Match: *` and `If-Match` and then writes, as two steps, on a threaded server: two
conditional PUTs racing on one key can both succeed (seen with eight processes racing `create`), where
S3 lets exactly one of them. Every fencing test on moto depends on that guarantee, so this server runs
moto's own application with its mutating requests (PUT, POST, DELETE) taken one at a time; reads stay
concurrent. Nothing else of moto changes. The reasoning is in packages/spec/docs/fencing.md.
"""

import argparse
import os
import signal
import sys
import threading

from moto.moto_server.werkzeug_app import (
    DomainDispatcherApplication,
    MotoRequestHandler,
    create_backend_app,
)
from werkzeug.serving import run_simple

MUTATING = frozenset({"PUT", "POST", "DELETE"})


class SerializedWrites:
    """A WSGI wrapper: one mutating request at a time, its response built before the next one starts."""

    def __init__(self, app):
        self.app = app
        self.lock = threading.Lock()

    def __call__(self, environ, start_response):
        if environ.get("REQUEST_METHOD") not in MUTATING:
            return self.app(environ, start_response)
        with self.lock:
            # moto's responses are built eagerly; draining the iterable inside the lock keeps the check,
            # the write and the answer of one request together.
            return list(self.app(environ, start_response))


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("-H", "--host", default="127.0.0.1")
    parser.add_argument("-p", "--port", type=int, required=True)
    args = parser.parse_args()
    os.environ.setdefault("MOTO_PORT", str(args.port))  # as moto_server does: moto builds some URLs from it
    signal.signal(signal.SIGTERM, lambda *_: sys.exit(0))
    app = DomainDispatcherApplication(create_backend_app)
    run_simple(
        args.host,
        args.port,
        SerializedWrites(app),
        threaded=True,
        request_handler=MotoRequestHandler,
    )


if __name__ == "__main__":
    main()
