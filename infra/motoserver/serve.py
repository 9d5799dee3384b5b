"""Runs moto server with DynamoDB and S3 writes atomic per item and per key.

moto serves requests on threads without locking its DynamoDB and S3
backends, so two concurrent conditional writes (PutItem with
attribute_not_exists, PutObject with If-None-Match) can both succeed. Real
DynamoDB and S3 apply them atomically, and the service's idempotency rests
on that, so the tests must see the real semantics. AWS applies requests to
different items, tables and objects together, and so does this server: a
request takes only the locks of what it touches, always in the same order
(the whole server, the service, the table or bucket, the item or key), so
two requests wait for each other only when they meet.

- An item's GetItem, PutItem, UpdateItem and DeleteItem hold its table
  shared and its key alone: moto reads and writes one entry of the table's
  dict of items, and CPython applies each change to a dict whole.
- Query, Scan, DescribeTable (which counts the items) and the other
  requests that walk a table hold it alone; BatchGetItem, BatchWriteItem,
  TransactGetItems and TransactWriteItems hold every table they name alone,
  so a transaction across tables is applied whole (moto copies the tables
  and puts the copies back when a condition fails).
- Requests that add, drop or list tables (and every request this server
  does not know) hold DynamoDB alone: they change the backend's dict of
  tables.
- An object's requests hold its bucket shared and its key alone; a
  bucket's own requests (listing, configuration) hold the bucket alone;
  creating, deleting or listing buckets, a copy (which reads another key)
  and a virtual-hosted request (whose bucket is in the host) hold S3
  alone.
- The state dump (/moto-api/data.json, which moto's dashboard reads) and
  moto's other API walk or reset every backend, so they hold the whole
  server alone. Everything else (SQS long polls above all) takes no lock.

GET /_oracle/ses/raw-messages lists the raw messages SES accepted, oldest
first, as data.json's "ses"/"RawMessage" does. data.json serialises every
instance of every model (each DynamoDB item, SQS message, S3 object) and
takes seconds once a test run has filled moto; the mailbox, read every
100 ms while a test waits for an email, must not cost that.

POST /_oracle/locks/hold?scope=dynamodb/TABLE (or s3/BUCKET) parks the
next request on that table or bucket once it holds its locks, until
POST /_oracle/locks/release?scope=...; GET /_oracle/locks says how many
requests each scope has parked and how many wait for one of its locks.
The concurrency test (locks_test.go) proves with them which requests wait
for which without timing any.

GET /_oracle/cpu says what this process has spent: its CPU time in all
(user and system, every thread, werkzeug's HTTP parsing included) and, by
request kind ("dynamodb.UpdateItem", "sqs.ReceiveMessage", "s3.PUT
object"), how many were answered and the CPU time of the threads that
answered them (moto's own work). The burst test reads it before and after
a run, so what an order costs moto is measured, not guessed.

Python's collector runs when allocations pass a threshold, inside whichever
request made them: with moto's heap (every item, object and message, and
botocore's models) a young collection took 5 to 30 ms and a full one up to
770 ms, in the middle of a GetItem. AWS does not pause a request to collect
another's garbage, so this server collects when it is quiet instead (the
Collector below): the young generations once no request has begun or ended
for ORACLE_MOTO_GC_IDLE seconds (0.05), everything after a quiet second.
Python's own collector stays as the backstop for load that never leaves
the server quiet (a burst), its young threshold raised from 700 objects to
ORACLE_MOTO_GC_LIMIT (20,000) so that it does not run between quiet
moments. GET /_oracle/gc says how many collections of each kind it has
made, how many Python made on its own, and what the young generation holds.

With ORACLE_MOTO_PLAIN=1 in its environment the server is moto's own
behind the same locks: none of the shortcuts below is applied, so a test
can compare their answers with moto's.

Usage: python3 serve.py HOST PORT
"""

import base64
import gc
import io
import json
import os
import pickle
import sys
import threading
import time
from collections import Counter
from contextlib import ExitStack, contextmanager
from decimal import Decimal, InvalidOperation
from urllib.parse import parse_qs

from moto.moto_server.werkzeug_app import DomainDispatcherApplication, create_backend_app
from moto.ses.models import RawMessage
from werkzeug.serving import run_simple

RAW_MESSAGES = "/_oracle/ses/raw-messages"
LOCKS = "/_oracle/locks"
CPU = "/_oracle/cpu"
GC = "/_oracle/gc"
PLAIN = "ORACLE_MOTO_PLAIN"

# DynamoDB's requests on one item, which moto applies to that entry alone.
ITEM_ACTIONS = {"GetItem", "PutItem", "UpdateItem", "DeleteItem"}
# Requests on one table that walk its items or change its settings.
TABLE_ACTIONS = {
    "Query",
    "Scan",
    "DescribeTable",
    "UpdateTable",
    "DescribeTimeToLive",
    "UpdateTimeToLive",
    "DescribeContinuousBackups",
    "UpdateContinuousBackups",
}
# Requests on several tables' items, applied whole.
MULTI_TABLE_ACTIONS = {"BatchGetItem", "BatchWriteItem", "TransactGetItems", "TransactWriteItems"}


def raw_messages(start_response):
    # The list data.json reads (every RawMessage moto made, in order);
    # copying it is one step under the GIL, so no lock is needed.
    sent = [{"id": m.id, "destinations": m.destinations, "raw_data": m.raw_data} for m in list(RawMessage.instances_tracked)]
    return answer(start_response, "200 OK", sent)


def answer(start_response, status, value):
    body = b"" if value is None else json.dumps(value).encode()
    start_response(status, [("Content-Type", "application/json"), ("Content-Length", str(len(body)))])
    return [body]


class Gauges:
    """How many requests each scope has parked, and waiting for its locks."""

    def __init__(self):
        self._mu = threading.Lock()
        self.waiting = Counter()
        self.held = Counter()
        self._pending = {}  # scope: the hold its next request will wait on
        self._parked = {}  # scope: the holds its parked requests wait on

    def add(self, counter, scope, n):
        with self._mu:
            counter[scope] += n
            if counter[scope] == 0:
                del counter[scope]

    def hold(self, scope):
        with self._mu:
            self._pending.setdefault(scope, threading.Event())

    def release(self, scope):
        with self._mu:
            holds = self._parked.pop(scope, [])
            if scope in self._pending:
                holds.append(self._pending.pop(scope))
        for ev in holds:
            ev.set()

    def park(self, scopes):
        # Called with the request's locks held: that is the point of a hold.
        for scope in scopes:
            with self._mu:
                ev = self._pending.pop(scope, None)
                if ev is None:
                    continue
                self._parked.setdefault(scope, []).append(ev)
            self.add(self.held, scope, 1)
            try:
                ev.wait()
            finally:
                self.add(self.held, scope, -1)

    def report(self):
        with self._mu:
            return {"held": dict(self.held), "waiting": dict(self.waiting)}


GAUGES = Gauges()


class RWLock:
    """Shared or exclusive; a waiting exclusive holder bars new shared ones,
    so a Scan or the state dump is not starved by a stream of item writes."""

    def __init__(self, scope):
        self.scope = scope
        self._cond = threading.Condition(threading.Lock())
        self._shared = 0
        self._exclusive = False
        self._queued = 0

    @contextmanager
    def shared(self):
        with self._cond:
            if self._exclusive or self._queued:
                GAUGES.add(GAUGES.waiting, self.scope, 1)
                try:
                    while self._exclusive or self._queued:
                        self._cond.wait()
                finally:
                    GAUGES.add(GAUGES.waiting, self.scope, -1)
            self._shared += 1
        try:
            yield
        finally:
            with self._cond:
                self._shared -= 1
                if self._shared == 0:
                    self._cond.notify_all()

    @contextmanager
    def exclusive(self):
        with self._cond:
            self._queued += 1
            try:
                if self._exclusive or self._shared:
                    GAUGES.add(GAUGES.waiting, self.scope, 1)
                    try:
                        while self._exclusive or self._shared:
                            self._cond.wait()
                    finally:
                        GAUGES.add(GAUGES.waiting, self.scope, -1)
            finally:
                self._queued -= 1
            self._exclusive = True
        try:
            yield
        finally:
            with self._cond:
                self._exclusive = False
                self._cond.notify_all()


class KeyLocks:
    """One mutex per key of a scope, dropped once nobody holds or awaits it."""

    def __init__(self, scope):
        self.scope = scope
        self._mu = threading.Lock()
        self._locks = {}

    @contextmanager
    def hold(self, key):
        with self._mu:
            entry = self._locks.get(key)
            if entry is None:
                entry = self._locks[key] = [threading.Lock(), 0]
            entry[1] += 1
        lock = entry[0]
        if not lock.acquire(blocking=False):
            GAUGES.add(GAUGES.waiting, self.scope, 1)
            try:
                lock.acquire()
            finally:
                GAUGES.add(GAUGES.waiting, self.scope, -1)
        try:
            yield
        finally:
            lock.release()
            with self._mu:
                entry[1] -= 1
                if entry[1] == 0:
                    del self._locks[key]


class Scope:
    """A table or a bucket: shared by requests on one of its items or
    keys, each of which also holds its own key's mutex."""

    def __init__(self, name):
        self.lock = RWLock(name)
        self.keys = KeyLocks(name)


class Registry:
    def __init__(self):
        self._mu = threading.Lock()
        self._scopes = {}

    def get(self, name):
        with self._mu:
            s = self._scopes.get(name)
            if s is None:
                s = self._scopes[name] = Scope(name)
            return s


SERVER = RWLock("*")
DYNAMODB = RWLock("dynamodb")
S3 = RWLock("s3")
SCOPES = Registry()


def credential_scope(environ):
    """The access key and region of a SigV4 request, or Nones."""
    auth = environ.get("HTTP_AUTHORIZATION", "")
    try:
        credential = auth.split(",")[0].split()[1]
        key, _, region, _, _ = credential.split("=", 1)[1].split("/")
        return key, region
    except (IndexError, ValueError):
        return None, None


def table_name(name):
    # A table may be named by its ARN: arn:aws:dynamodb:REGION:ACCOUNT:table/NAME.
    if isinstance(name, str) and name.startswith("arn:") and ":table/" in name:
        return name.split(":table/", 1)[1].split("/", 1)[0]
    return name if isinstance(name, str) and name else None


def read_json(environ):
    """The request's JSON body, left for moto to read again; None when it
    has none this server can read."""
    if environ.get("HTTP_CONTENT_ENCODING", "identity") not in ("", "identity"):
        return None
    try:
        n = int(environ.get("CONTENT_LENGTH") or "")
    except ValueError:
        return None
    body = environ["wsgi.input"].read(n)
    environ["wsgi.input"] = io.BytesIO(body)
    try:
        value = json.loads(body)
    except ValueError:
        return None
    return value if isinstance(value, dict) else None


def multi_tables(action, body):
    names = set()
    if action in ("BatchGetItem", "BatchWriteItem"):
        names = set((body.get("RequestItems") or {}).keys())
    else:
        for op in body.get("TransactItems") or []:
            for part in (op or {}).values():
                names.add((part or {}).get("TableName"))
    names = {table_name(n) for n in names}
    if not names or None in names:
        return None
    return sorted(names)


def key_value(value):
    """An attribute value as a hashable, the same for values DynamoDB
    takes for the same key (numbers compared as numbers)."""
    if not isinstance(value, dict) or len(value) != 1:
        return None
    (kind, v), = value.items()
    if not isinstance(v, str):
        return None
    if kind == "N":
        try:
            v = str(Decimal(v).normalize())
        except InvalidOperation:
            return None
    return kind, v


def item_key(environ, action, body, name):
    """The item a one-item request names, from its table's key schema as
    moto holds it; None when this server cannot tell (moto then answers the
    request with the table held alone)."""
    from moto.dynamodb.models import dynamodb_backends
    from moto.iam.models import get_account_id_from

    access_key, region = credential_scope(environ)
    if region is None:
        return None
    account = os.environ.get("MOTO_ACCOUNT_ID") or environ.get("HTTP_X_MOTO_ACCOUNT_ID") or get_account_id_from(access_key)
    try:
        table = dynamodb_backends[account][region].tables.get(name)
    except KeyError:
        return None
    # A table with a stream numbers its records from one list.
    if table is None or table.stream_shard is not None:
        return None
    attrs = body.get("Item") if action == "PutItem" else body.get("Key")
    if not isinstance(attrs, dict):
        return None
    key = []
    for attr in (table.hash_key_attr, table.range_key_attr):
        if attr is None:
            continue
        v = key_value(attrs.get(attr))
        if v is None:
            return None
        key.append((attr, v))
    return tuple(key)


@contextmanager
def dynamodb_locks(environ):
    """Holds what a DynamoDB request touches; yields the scopes it holds."""
    target = environ.get("HTTP_X_AMZ_TARGET", "")
    action = target.rsplit(".", 1)[-1] if target.startswith("DynamoDB_") else None
    body = read_json(environ) if action in ITEM_ACTIONS | TABLE_ACTIONS | MULTI_TABLE_ACTIONS else None
    with ExitStack() as stack:
        if body is None:
            stack.enter_context(DYNAMODB.exclusive())
            yield ["dynamodb"]
            return
        stack.enter_context(DYNAMODB.shared())
        if action in MULTI_TABLE_ACTIONS:
            names = multi_tables(action, body)
            if names is None:
                stack.close()
                stack.enter_context(DYNAMODB.exclusive())
                yield ["dynamodb"]
                return
            for name in names:
                stack.enter_context(SCOPES.get("dynamodb/" + name).lock.exclusive())
            yield ["dynamodb/" + n for n in names]
            return
        name = table_name(body.get("TableName"))
        if name is None:
            stack.close()
            stack.enter_context(DYNAMODB.exclusive())
            yield ["dynamodb"]
            return
        scope = SCOPES.get("dynamodb/" + name)
        if action in ITEM_ACTIONS:
            # The key schema is read with the table held, so the table
            # cannot be dropped and made again with another meanwhile.
            with scope.lock.shared():
                key = item_key(environ, action, body, name)
                if key is not None:
                    with scope.keys.hold(key):
                        yield ["dynamodb/" + name]
                    return
        with scope.lock.exclusive():
            yield ["dynamodb/" + name]


def path_style(environ):
    # The SDKs address a bucket in the path of an endpoint that is an
    # address or a bare host name; moto reads any other host as
    # BUCKET.host, which this server does not parse.
    host = environ.get("HTTP_HOST", "").rsplit(":", 1)[0]
    return host.startswith("[") or host.startswith("localhost") or "." not in host or host.replace(".", "").isdigit()


@contextmanager
def s3_locks(environ):
    """Holds what an S3 request touches; yields the scopes it holds."""
    path = environ.get("PATH_INFO", "").lstrip("/")
    bucket, _, key = path.partition("/")
    method = environ.get("REQUEST_METHOD", "")
    query = environ.get("QUERY_STRING", "")
    if (
        not path_style(environ)
        or not bucket
        or "HTTP_X_AMZ_COPY_SOURCE" in environ
        or (not key and method in ("PUT", "DELETE") and not parse_qs(query, keep_blank_values=True))
    ):
        with S3.exclusive():
            yield ["s3"]
        return
    scope = SCOPES.get("s3/" + bucket)
    with S3.shared():
        if not key:
            with scope.lock.exclusive():
                yield ["s3/" + bucket]
            return
        with scope.lock.shared(), scope.keys.hold(key):
            yield ["s3/" + bucket]


@contextmanager
def server_locks(environ):
    """Holds what a request touches; yields the scopes it holds, or None
    for a request that needs no lock."""
    path = environ.get("PATH_INFO", "")
    auth = environ.get("HTTP_AUTHORIZATION", "")
    if path.startswith("/moto-api/") and path != "/moto-api/":
        with SERVER.exclusive():
            yield ["*"]
    elif "/dynamodb/aws4_request" in auth:
        with SERVER.shared(), dynamodb_locks(environ) as scopes:
            yield scopes
    elif "/s3/aws4_request" in auth:
        with SERVER.shared(), s3_locks(environ) as scopes:
            yield scopes
    else:
        yield None


def locks_control(environ, start_response):
    method = environ.get("REQUEST_METHOD", "")
    path = environ.get("PATH_INFO", "")
    if path == LOCKS and method == "GET":
        return answer(start_response, "200 OK", GAUGES.report())
    scope = parse_qs(environ.get("QUERY_STRING", "")).get("scope", [""])[0]
    if method != "POST" or not scope or path not in (LOCKS + "/hold", LOCKS + "/release"):
        return answer(start_response, "400 Bad Request", {"error": "POST /_oracle/locks/hold or /release with ?scope=, or GET /_oracle/locks"})
    if path.endswith("/hold"):
        GAUGES.hold(scope)
    else:
        GAUGES.release(scope)
    return answer(start_response, "204 No Content", None)


class CPUMeter:
    """The CPU time the requests of each kind took, answered by this process."""

    def __init__(self):
        self._mu = threading.Lock()
        self._kinds = {}  # kind: [count, seconds]

    def add(self, kind, seconds):
        with self._mu:
            entry = self._kinds.get(kind)
            if entry is None:
                entry = self._kinds[kind] = [0, 0.0]
            entry[0] += 1
            entry[1] += seconds

    def report(self):
        t = os.times()
        with self._mu:
            kinds = {k: {"count": n, "cpu_s": round(sec, 6)} for k, (n, sec) in self._kinds.items()}
        return {"process_cpu_s": round(t.user + t.system, 6), "requests": kinds}


CPU_METER = CPUMeter()


def request_kind(environ):
    """The service and operation of a request, as AWS names them where the
    request says (X-Amz-Target, a form's Action), else its method."""
    sc = environ.get("HTTP_AUTHORIZATION", "").split("/")
    service = sc[3] if len(sc) > 4 and sc[4].startswith("aws4_request") else "other"
    target = environ.get("HTTP_X_AMZ_TARGET", "")
    if target:
        return service + "." + target.rsplit(".", 1)[-1]
    if environ.get("CONTENT_TYPE", "").startswith("application/x-www-form-urlencoded"):
        try:
            n = int(environ.get("CONTENT_LENGTH") or "")
        except ValueError:
            n = -1
        if n >= 0:
            body = environ["wsgi.input"].read(n)
            environ["wsgi.input"] = io.BytesIO(body)
            action = parse_qs(body.decode("utf-8", "replace")).get("Action", [""])[0]
            if action:
                return service + "." + action
    method = environ.get("REQUEST_METHOD", "")
    if service == "s3":
        _, _, key = environ.get("PATH_INFO", "").lstrip("/").partition("/")
        return "s3." + method + (" object" if key else " bucket")
    return service + "." + method


class Collector:
    """Collects Python's garbage when the server is quiet, not inside a
    request (the module's docstring says why). Requests touch it as they
    begin and end; its thread looks every POLL seconds."""

    POLL = 0.01

    def __init__(self, idle, limit):
        self.idle, self.limit = idle, limit
        self._last = time.monotonic()
        self._mu = threading.Lock()
        self._made = Counter()  # young and full by this collector, by_python
        self._running = False
        self._frozen = False
        self._served = False

    def touch(self):
        # Assignments: atomic under the GIL, no lock on the request's way.
        self._last = time.monotonic()
        self._served = True

    def start(self):
        # Python's own collector stays, as the backstop for load that never
        # leaves the server quiet (a burst): with its young threshold
        # raised it does not run between quiet moments, and under such
        # load it runs as Python's always did (its older generations on
        # Python's own rule), less often and longer each time.
        gc.set_threshold(self.limit, 10, 10)
        gc.callbacks.append(self._observe)
        threading.Thread(target=self._run, name="collector", daemon=True).start()

    def _observe(self, phase, info):
        if phase == "start" and not self._running:
            with self._mu:
                self._made["by_python"] += 1

    def _collect(self, kind, generation):
        self._running = True
        try:
            gc.collect(generation)
        finally:
            self._running = False
        with self._mu:
            self._made[kind] += 1

    def _run(self):
        full_owed = True  # the startup's garbage
        while True:
            time.sleep(self.POLL)
            quiet = time.monotonic() - self._last
            if quiet < self.idle:
                continue
            if full_owed and quiet >= 1.0:
                self._collect("full", 2)
                full_owed = False
                if self._served and not self._frozen:
                    # What outlived the first quiet second after a request
                    # (moto's modules, the backends and botocore's models
                    # its first requests loaded) stays: later full
                    # collections need not walk it.
                    gc.freeze()
                    self._frozen = True
            elif gc.get_count()[0] >= 700:
                self._collect("young", 1)
                full_owed = True

    def report(self):
        with self._mu:
            made = dict(self._made)
        return {"threshold": gc.get_threshold()[0], "young": gc.get_count()[0], "frozen": gc.get_freeze_count(),
                "collections": {k: made.get(k, 0) for k in ("young", "full", "by_python")}}


COLLECTOR = Collector(float(os.environ.get("ORACLE_MOTO_GC_IDLE", "0.05")), int(os.environ.get("ORACLE_MOTO_GC_LIMIT", "20000")))


def serialise(app):
    def wrapped(environ, start_response):
        path = environ.get("PATH_INFO", "")
        if path == RAW_MESSAGES:
            return raw_messages(start_response)
        if path == LOCKS or path.startswith(LOCKS + "/"):
            return locks_control(environ, start_response)
        if path == CPU:
            return answer(start_response, "200 OK", CPU_METER.report())
        if path == GC:
            return answer(start_response, "200 OK", COLLECTOR.report())
        COLLECTOR.touch()
        kind = request_kind(environ)
        began = time.thread_time()
        try:
            with server_locks(environ) as scopes:
                if scopes is not None:
                    GAUGES.park(scopes)
                # The response is produced inside the locks: that is when
                # moto changes its state.
                return list(app(environ, start_response))
        finally:
            CPU_METER.add(kind, time.thread_time() - began)
            COLLECTOR.touch()

    return wrapped


class Dispatcher(DomainDispatcherApplication):
    """moto's dispatcher, which finds each request's backend from the host
    it infers for it (dynamodb.us-east-1.amazonaws.com) by listing moto's
    package directory and matching every service's URL patterns: about
    1.2 ms of CPU a request, under one lock for the whole server. The
    backend depends on the host alone, and moto's modules and patterns do
    not change while it runs, so each host's is found once."""

    def __init__(self, create_app):
        super().__init__(create_app)
        self._backends = {}

    def get_backend_for_host(self, host):
        try:
            return self._backends[host]
        except KeyError:
            pass
        backend = super().get_backend_for_host(host)
        # A client that names hosts without end cannot grow the cache
        # without end; past this many it is only slower.
        if len(self._backends) < 1024:
            self._backends[host] = backend
        return backend


# The update expressions' trees, by parser and text, and the ids of those
# kept (which live as long as the process, so their ids name them alone),
# each with the tree pickled.
_UPDATE_TREES = {}
_KEPT_TREES = {}


def parse_update_expressions_once():
    """moto parses an UpdateItem's update expression twice a request (to
    check the names and values it uses, then to apply it), a fifth of the
    request's CPU; the service sends the same few expressions over and
    over. Parsing is a function of the text alone, and nothing changes the
    tree it makes (moto's validator works on a deep copy of it), so each
    text's tree is kept. An expression that does not parse is parsed, and
    refused, every time."""
    from moto.dynamodb.parsing.expressions import UpdateExpressionParser

    make = UpdateExpressionParser.make.__func__

    def cached(cls, expression):
        try:
            return _UPDATE_TREES[(cls, expression)]
        except KeyError:
            pass
        tree = make(cls, expression)
        if len(_UPDATE_TREES) < 4096:
            _UPDATE_TREES[(cls, expression)] = tree
            _KEPT_TREES[id(tree)] = pickle.dumps(tree, pickle.HIGHEST_PROTOCOL)
        return tree

    UpdateExpressionParser.make = classmethod(cached)


def check_kept_update_trees_once():
    """Two of the ten passes of moto's update validator only check the
    tree: that it has one SET, ADD and REMOVE clause at most (three walks
    of the whole tree at each of its nodes) and, given the request's
    attribute names, that no two actions touch overlapping paths. Each
    returns the tree unchanged or refuses it, so for a kept tree (see
    parse_update_expressions_once) a pass that passed once passes again
    (for the same attribute names) and is not run again; one that refused
    is run, and refuses, every time. The other passes, which read the item
    and the values, run for every request."""
    from moto.dynamodb.parsing.validators import (
        ActionCountValidator,
        OverlappingPathsValidator,
        UpdateExpressionValidator,
    )

    init = UpdateExpressionValidator.__init__
    passed = set()  # (id of a kept tree, None or its attribute names)

    def __init__(self, expression, *args, **kwargs):
        init(self, expression, *args, **kwargs)
        self._oracle_source = expression

    def validate(self):
        n = self.node_to_validate
        source = self.__dict__.get("_oracle_source")
        tree = id(source) if source is not None and id(source) in _KEPT_TREES else None
        for processor in self.processors:
            kind = type(processor)
            check = None
            if tree is not None and kind is ActionCountValidator:
                check = (tree, None)
            elif tree is not None and kind is OverlappingPathsValidator:
                check = (tree, frozenset((self.expression_attribute_names or {}).items()))
            if check is not None and check in passed:
                continue
            n = processor.traverse(n)
            if check is not None and len(passed) < 16384:
                passed.add(check)
        return n

    UpdateExpressionValidator.__init__ = __init__
    UpdateExpressionValidator.validate = validate


def copy_kept_update_trees_from_pickles():
    """moto's update validator works on a deep copy of the tree (its
    passes put the request's values and the item's attributes in it):
    copy.deepcopy of a ~70-node tree, a sixth of an UpdateItem's CPU.
    Unpickling the tree kept beside it makes the same objects (types,
    attributes, the parent links shared as in the tree) in a fifth of the
    time; any other copy the validator makes is deepcopy's."""
    import moto.dynamodb.parsing.validators as validators

    deepcopy = validators.deepcopy

    def copy_tree(x, memo=None):
        if memo is None:
            blob = _KEPT_TREES.get(id(x))
            if blob is not None:
                return pickle.loads(blob)
        return deepcopy(x, memo)

    validators.deepcopy = copy_tree


def lex_conditions_once():
    """moto lexes a condition expression with six regular expressions per
    token, twice an UpdateItem (to check its names and values, then to
    apply it): a tenth of the request's CPU. The tokens are a function of
    the text alone, so each text's are kept, and each request is given
    new token nodes (moto's parser builds on them). An expression that
    does not lex is lexed, and refused, every time."""
    from collections import deque

    from moto.dynamodb.comparisons import ConditionExpressionParser

    lex = ConditionExpressionParser._lex_condition_expression
    node = ConditionExpressionParser.Node
    kept = {}

    def cached(self):
        text = self.condition_expression
        tokens = kept.get(text)
        if tokens is None:
            nodes = lex(self)
            if len(kept) < 4096 and all(n.children == [] for n in nodes):
                kept[text] = tuple((n.nonterminal, n.kind, n.text, n.value) for n in nodes)
            return nodes
        return deque(node(nonterminal=nt, kind=k, text=t, value=v, children=[]) for nt, k, t, v in tokens)

    ConditionExpressionParser._lex_condition_expression = cached


def map_node_kinds_once():
    """moto's validator walks an update's tree with ten processors, and each
    asks its processing map (a dict it builds anew) for every node it
    meets. The maps are fixed for each processor (node classes to its own
    methods), so each processor builds its map once."""
    from moto.dynamodb.parsing.ast_nodes import DepthFirstTraverser

    def processing(self):
        try:
            return self.__dict__["_oracle_map"]
        except KeyError:
            m = self.__dict__["_oracle_map"] = self._processing_map()
            self.__dict__["_oracle_kinds"] = tuple(m)
            return m

    def nodes_to_be_processed(self):
        try:
            return self.__dict__["_oracle_kinds"]
        except KeyError:
            processing(self)
            return self.__dict__["_oracle_kinds"]

    def process(self, node):
        for kind, processor in processing(self).items():
            if isinstance(node, kind):
                return processor(node)

    DepthFirstTraverser.nodes_to_be_processed = nodes_to_be_processed
    DepthFirstTraverser.process = process


class _Generic(Exception):
    """An attribute value the direct path does not take: moto's serializer answers it."""


# DynamoDB's AttributeValue members in the model's order, which is the
# order moto's serializer writes them in.
_ATTRIBUTE_MEMBERS = ("S", "N", "B", "SS", "NS", "BS", "M", "L", "NULL", "BOOL")
_MEMBER_SET = frozenset(_ATTRIBUTE_MEMBERS)


def _attribute_value(value):
    """An AttributeValue as moto's JSON serializer writes it, for the
    values moto's own items hold: one-key dicts of strings, string lists,
    booleans, maps and lists of such values. Anything else (binary, which
    the serializer encodes; a key the model does not name; an empty name)
    raises _Generic."""
    if type(value) is not dict or not value.keys() <= _MEMBER_SET:
        raise _Generic
    out = {}
    for kind in _ATTRIBUTE_MEMBERS:
        if kind not in value:
            continue
        v = value[kind]
        if v is None:
            continue
        if kind in ("S", "N", "NULL", "BOOL"):
            out[kind] = v
        elif kind in ("SS", "NS"):
            if type(v) is not list:
                raise _Generic
            out[kind] = list(v)
        elif kind == "M":
            if type(v) is not dict or "" in v:
                raise _Generic
            out[kind] = {k: _attribute_value(x) for k, x in v.items()}
        elif kind == "L":
            if type(v) is not list:
                raise _Generic
            out[kind] = [_attribute_value(x) for x in v]
        else:
            raise _Generic
    return out


def serialize_attribute_values_directly():
    """moto's response serializer walks every attribute value of an answer
    member by member, trying up to six aliases of each member's name on
    each value (an item's ~20 attributes: a third of an UpdateItem's CPU,
    as much again for a GetItem). An AttributeValue moto made itself is a
    dict keyed by the model's member names, so the walk comes to copying it
    in the model's member order and leaving out what is None; this does
    that and hands anything else (binary values, unknown keys, a response
    transformer registered on the handler) to moto's serializer."""
    from moto.core.serialize import BaseJSONSerializer

    generic = BaseJSONSerializer._serialize_type_structure

    def attribute_value_shape(shape):
        # Noted on the shape itself: botocore makes some shapes anew for
        # each use, so an id could name another shape later.
        known = shape.__dict__.get("_oracle_attribute_value")
        if known is None:
            known = shape.__dict__["_oracle_attribute_value"] = (
                shape.name == "AttributeValue"
                and tuple(shape.members) == _ATTRIBUTE_MEMBERS
                and not shape.serialization
                and not any(m.serialization for m in shape.members.values())
            )
        return known

    def structure(self, serialized, value, shape, key):
        if key and attribute_value_shape(shape) and not getattr(self._value_picker, "response_transformers", None):
            try:
                serialized[key] = _attribute_value(value)
                return
            except _Generic:
                pass
        generic(self, serialized, value, shape, key)

    BaseJSONSerializer._serialize_type_structure = structure


def list_handler_methods_once():
    """moto finds whether a request's action is a method of its handler
    class by listing the class's functions with inspect.getmembers on
    every request (a tenth of a GetItem's CPU). The classes' methods are
    fixed once this server has patched them, before it serves, so each
    class's list is made once; each request is given its own copy."""
    import moto.core.responses as responses

    list_methods = responses.method_names_from_class
    lists = {}

    def method_names(cls):
        names = lists.get(cls)
        if names is None:
            names = lists[cls] = tuple(list_methods(cls))
        return list(names)

    responses.method_names_from_class = method_names


def sqs_clock_and_retention():
    """moto's SQS reads the clock through datetime arithmetic (about 30 us
    a reading) twice for every message of a queue each time it lists the
    visible ones, and for each message it receives it asks for the queue's
    retention period through GetQueueAttributes, which counts the queue's
    messages three times over, twice: with a thousand jobs waiting, a
    ReceiveMessage of ten took 1.8 s of CPU. The clock is read as
    time.time() instead (the same seconds since the epoch; moto's only
    reason for datetime is freezegun, which a server does not use), and the
    retention period from the queue itself (the value GetQueueAttributes
    reports)."""
    import moto.sqs.models as sqs

    unix_time, unix_time_millis = sqs.unix_time, sqs.unix_time_millis

    def now(dt=None):
        return unix_time(dt) if dt is not None else time.time()

    def now_millis(dt=None):
        return unix_time_millis(dt) if dt is not None else time.time() * 1000.0

    def retained(self, queue_name, message):
        queue = self.get_queue(queue_name)
        return queue.message_retention_period + message.sent_timestamp / 1000 > now()

    sqs.unix_time, sqs.unix_time_millis = now, now_millis
    sqs.SQSBackend.is_message_valid_based_on_retention_period = retained


def sqs_atomic_per_queue():
    """moto appends a sent message to its queue's list under the queue's
    lock, but a delete rebuilds the list without it, so a message sent
    while another is deleted can be dropped (a job lost, which SQS never
    does), and two receives at once can both take one message. Receiving
    and deleting hold the queue's lock too; a long poll's wait releases it
    (the lock is the queue's condition, which moto waits on), so waiting
    receivers hold up nothing."""
    import moto.sqs.models as sqs

    receive_message = sqs.SQSBackend.receive_message
    delete_message = sqs.Queue.delete_message

    def receive(self, queue_name, *args, **kwargs):
        with self.get_queue(queue_name)._messages_lock:
            return receive_message(self, queue_name, *args, **kwargs)

    def delete(self, receipt_handle):
        with self._messages_lock:
            return delete_message(self, receipt_handle)

    sqs.SQSBackend.receive_message = receive
    sqs.Queue.delete_message = delete


def sns_one_certificate_a_subscription():
    """moto's SNS signs each message it delivers to a queue (SES's events
    reach the feedback queue so) and also makes and signs a new X.509
    certificate for each, to serve at the message's SigningCertURL: half a
    Publish's CPU. AWS signs with one certificate for many messages; so
    does this, once a subscription, each message still signed with the
    subscription's key and verifiable with the certificate its
    SigningCertURL names. The rest is moto's get_post_data unchanged."""
    import moto.sns.models as sns
    from cryptography import x509
    from cryptography.hazmat.primitives import hashes, serialization
    from cryptography.hazmat.primitives.asymmetric import padding
    from cryptography.x509.oid import NameOID

    def certificate(sub, key, region):
        # Each subscription has a key of its own (moto's private_key), so
        # its certificate is kept on it.
        key_name = sub.__dict__.get("_oracle_signing_cert")
        if key_name is not None:
            return key_name
        cert = (
            x509.CertificateBuilder()
            .subject_name(x509.Name([x509.NameAttribute(NameOID.COMMON_NAME, "sns.amazonaws.com")]))
            .issuer_name(
                x509.Name(
                    [
                        x509.NameAttribute(NameOID.COUNTRY_NAME, "US"),
                        x509.NameAttribute(NameOID.ORGANIZATION_NAME, "Amazon"),
                        x509.NameAttribute(NameOID.COMMON_NAME, "Amazon RSA 2048 M01"),
                    ]
                )
            )
            .public_key(key.public_key())
            .serial_number(x509.random_serial_number())
            .not_valid_before(sns.utcnow())
            .not_valid_after(sns.utcnow() + sns.timedelta(days=365))
            .sign(key, hashes.SHA256())
        )
        key_name = f"SimpleNotificationService-{str(sns.mock_random.uuid4()).replace('-', '')}.pem"
        # Served to anyone who asks, from the default account's backend, as moto does.
        sns.sns_backends[sns.DEFAULT_ACCOUNT_ID][region]._message_public_keys[key_name] = cert.public_bytes(serialization.Encoding.PEM)
        sub.__dict__["_oracle_signing_cert"] = key_name
        return key_name

    def get_post_data(self, message, message_id, subject, message_attributes=None):
        key = self.private_key()
        region = self.topic.sns_backend.region_name
        key_name = certificate(self, key, region)
        timestamp = sns.iso_8601_datetime_with_milliseconds()
        string_to_sign = f"Message\n{message}\nMessageId\n{message_id}\nTimestamp\n{timestamp}\nTopicArn\n{self.topic.arn}\nType\nNotification\n"
        signature = key.sign(string_to_sign.encode("UTF-8"), padding.PKCS1v15(), hashes.SHA256())
        post_data = {
            "Type": "Notification",
            "MessageId": message_id,
            "TopicArn": self.topic.arn,
            "Message": message,
            "Timestamp": timestamp,
            "SignatureVersion": "2",
            "Signature": base64.b64encode(signature).decode("utf-8"),
            "SigningCertURL": f"https://sns.{region}.amazonaws.com/{key_name}",
            "UnsubscribeURL": f"https://sns.us-east-1.amazonaws.com/?Action=Unsubscribe&SubscriptionArn=arn:aws:sns:us-east-1:{self.account_id}:{self.topic.name}:2bcfbf39-05c3-41de-beaa-fcfcc21c8f55",
        }
        if subject:
            post_data["Subject"] = subject
        if message_attributes:
            post_data["MessageAttributes"] = message_attributes
        return post_data

    sns.Subscription.get_post_data = get_post_data


def main():
    # ORACLE_MOTO_PLAIN=1 leaves moto's own code in place (the locks and
    # this server's own paths stay): the answers the shortcuts' test
    # (equivalence_test.go) compares theirs with.
    if os.environ.get(PLAIN) != "1":
        parse_update_expressions_once()
        check_kept_update_trees_once()
        copy_kept_update_trees_from_pickles()
        lex_conditions_once()
        map_node_kinds_once()
        serialize_attribute_values_directly()
        list_handler_methods_once()
        sqs_clock_and_retention()
        sqs_atomic_per_queue()
        sns_one_certificate_a_subscription()
    COLLECTOR.start()
    host, port = sys.argv[1], int(sys.argv[2])
    app = Dispatcher(create_backend_app)
    run_simple(host, port, serialise(app), threaded=True)


if __name__ == "__main__":
    main()
