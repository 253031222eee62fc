#!/usr/bin/env python3
"""A REST transition worker in Python, standard library only: the reference implementation of
the wire contract in docs/transition-workers.md.

    python3 worker.py --port 8093 --db render.sqlite3            # serve the `render` step
    python3 worker.py --port 0 --db /tmp/w.sqlite3 --conformance  # also honour conformance inputs

Routes:
    POST /transition          the step call: JSON in, JSON out
    GET  /transition/{key}    the disposition lookup (key URL-encoded): 200 {recorded: true, state}
                              or 404 (never recorded)

What it guarantees, per tenant-qualified Idempotency-Key ({tenantId}/{executionId}:{stepIndex}:{attempt}):
    * the handler runs once; its answer (or its rejection) is stored in SQLite and every later
      delivery of the key gets the stored answer, whatever its body;
    * a delivery that arrives while another delivery of the key runs waits up to
      --duplicate-wait-ms for the answer, then answers "in progress" (425, X-Transition-In-Progress);
    * a handler whose caller gave up (its deadline passed) still stores its answer;
    * failures are application/problem+json with code, detail and retryable; a retryable one is
      not stored, so the next delivery of the key runs the handler again;
    * a claim whose holder died (lease not renewed for --lease-ms) is abandoned: its handler may
      have made its effect, so it is never run again; deliveries answer "in progress" (the
      orchestrator parks the execution REMOTE_OUTCOME_UNKNOWN for an operator) and the lookup
      says ABANDONED.

On start it prints one JSON line {"event": "worker_listening", "port": N, "url": ...} on stdout,
then one JSON line per handled call (ids only, never the payload).
"""
import argparse
import json
import os
import re
import sqlite3
import sys
import threading
import time
import uuid
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from urllib.parse import unquote

ID = r"[A-Za-z0-9][A-Za-z0-9._-]{0,127}"
KEY = re.compile(rf"^({ID})/(({ID}):(\d{{1,9}}):(\d{{1,9}}))$")
TRACEPARENT = re.compile(r"^00-([0-9a-f]{32})-([0-9a-f]{16})-[0-9a-f]{2}$")
PLATFORM_HEADER = "X-Transition-Worker-Platform"
IN_PROGRESS_HEADER = "X-Transition-In-Progress"
PROBLEM = "application/problem+json"


class Rejected(Exception):
    """A failure no retry can fix: stored and replayed like an answer."""

    def __init__(self, status, code, detail):
        super().__init__(detail)
        self.status, self.code, self.detail = status, code, detail


class Retryable(Exception):
    """A failure a retry may fix: not stored, the claim is released."""

    def __init__(self, code, detail):
        super().__init__(detail)
        self.code, self.detail = code, detail


def render(payload, call):
    """The business handler of the `render` step of examples/invoices: a reserved invoice becomes a document."""
    if not isinstance(payload, dict) or not isinstance(payload.get("id"), str):
        raise Rejected(422, "INVALID_INVOICE", "id is required")
    template = payload.get("template", "standard")
    if template not in ("standard", "compact"):
        raise Rejected(422, "TEMPLATE_MISSING", f'template "{template}" is not installed')
    invoice_id = payload["id"]
    return {"invoiceId": invoice_id, "customer": str(payload.get("customer", "")), "pdfUrl": f"https://files.example/invoices/{invoice_id}.pdf"}


def conformance(spec, call):
    """Conformance mode (docs/transition-workers.md): sleep, fail, or answer {echo, run, traceId}."""
    time.sleep(min(60_000, max(0, int(spec.get("sleepMs", 0)))) / 1000)
    fail = spec.get("fail")
    if isinstance(fail, dict):
        if fail.get("retryable"):
            raise Retryable(fail.get("code", "CONFORMANCE_UNAVAILABLE"), fail.get("detail", "retryable failure"))
        raise Rejected(int(fail.get("status", 422)), fail.get("code", "CONFORMANCE_REJECTED"), fail.get("detail", "rejected"))
    answer = {"echo": spec.get("echo"), "run": str(uuid.uuid4())}
    if call["traceId"]:
        answer["traceId"] = call["traceId"]
    return answer


class DedupeStore:
    """One row per idempotency key: IN_PROGRESS (claimed, with a lease) or DONE (with the stored answer)."""

    def __init__(self, path):
        self.path = path
        with self._connect() as db:
            db.execute("PRAGMA journal_mode=WAL")
            db.execute(
                """CREATE TABLE IF NOT EXISTS transition_dedupe (
                     idempotency_key TEXT PRIMARY KEY, tenant_id TEXT NOT NULL, state TEXT NOT NULL,
                     response_status INTEGER, response_body TEXT, lease_until REAL,
                     created_at REAL NOT NULL, completed_at REAL)"""
            )

    def _connect(self):
        db = sqlite3.connect(self.path, timeout=30, isolation_level=None)
        db.execute("PRAGMA busy_timeout=30000")
        return db

    def claim(self, key, tenant, lease_s):
        """('claimed', None) | ('done', (status, body)) | ('busy', None) | ('abandoned', None)"""
        db = self._connect()
        try:
            db.execute("BEGIN IMMEDIATE")
            row = db.execute("SELECT state, response_status, response_body, lease_until FROM transition_dedupe WHERE idempotency_key = ?", (key,)).fetchone()
            now = time.time()
            if row is None:
                db.execute(
                    "INSERT INTO transition_dedupe (idempotency_key, tenant_id, state, lease_until, created_at) VALUES (?, ?, 'IN_PROGRESS', ?, ?)",
                    (key, tenant, now + lease_s, now),
                )
                db.execute("COMMIT")
                return "claimed", None
            state, status, body, lease_until = row
            if state == "DONE":
                db.execute("COMMIT")
                return "done", (status, body)
            db.execute("COMMIT")
            if lease_until is not None and lease_until < now:
                # The holder died after its handler started (its lease ran out): it may have made
                # its effect, so it is never run again; the caller hears "in progress".
                return "abandoned", None
            return "busy", None
        except Exception:
            db.execute("ROLLBACK") if db.in_transaction else None
            raise
        finally:
            db.close()

    def renew(self, key, lease_s):
        with self._connect() as db:
            db.execute("UPDATE transition_dedupe SET lease_until = ? WHERE idempotency_key = ? AND state = 'IN_PROGRESS'", (time.time() + lease_s, key))

    def complete(self, key, status, body):
        with self._connect() as db:
            db.execute(
                "UPDATE transition_dedupe SET state = 'DONE', response_status = ?, response_body = ?, completed_at = ?, lease_until = NULL WHERE idempotency_key = ?",
                (status, body, time.time(), key),
            )

    def release(self, key):
        with self._connect() as db:
            db.execute("DELETE FROM transition_dedupe WHERE idempotency_key = ? AND state = 'IN_PROGRESS'", (key,))

    def lookup(self, key):
        with self._connect() as db:
            return db.execute(
                "SELECT CASE WHEN state = 'IN_PROGRESS' AND lease_until < ? THEN 'ABANDONED' ELSE state END, completed_at"
                " FROM transition_dedupe WHERE idempotency_key = ?",
                (time.time(), key),
            ).fetchone()


def problem(status, detail, retryable, code=None):
    body = {"type": "about:blank", "status": status, "detail": detail, "retryable": retryable}
    if code:
        body["code"] = code
    return status, PROBLEM, json.dumps(body)


def make_handler(store, options):
    lease_s = options.lease_ms / 1000

    class Handler(BaseHTTPRequestHandler):
        protocol_version = "HTTP/1.1"
        server_version = "python-reference-worker"

        def log_message(self, *args):  # the access log is replaced by log() lines
            pass

        def log(self, **fields):
            print(json.dumps(fields), flush=True)

        def answer(self, status, content_type, body, headers=None):
            data = body.encode("utf-8")
            try:
                self.send_response(status)
                self.send_header("Content-Type", content_type)
                self.send_header("Content-Length", str(len(data)))
                self.send_header(PLATFORM_HEADER, options.platform)
                for name, value in (headers or {}).items():
                    self.send_header(name, value)
                self.end_headers()
                self.wfile.write(data)
            except (BrokenPipeError, ConnectionResetError):
                # The caller gave up (its deadline passed); the outcome is stored, a redelivery gets it.
                self.close_connection = True

        def stored(self, status, body, replayed):
            headers = {"Idempotent-Replayed": "true"} if replayed else {}
            return self.answer(status, "application/json" if status < 400 else PROBLEM, body, headers)

        def do_GET(self):
            prefix = "/transition/"
            if not self.path.startswith(prefix):
                return self.answer(*problem(404, "no such route", False, "ROUTE_NOT_FOUND"))
            key = unquote(self.path[len(prefix):])
            if not KEY.match(key):
                return self.answer(*problem(400, "not a tenant-qualified transition identity", False, "INVALID_IDEMPOTENCY_KEY"))
            row = store.lookup(key)
            if row is None:
                return self.answer(*problem(404, "this key was never recorded", False, "NOT_RECORDED"))
            state, completed_at = row
            completed = time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime(completed_at)) if completed_at else None
            return self.answer(200, "application/json", json.dumps({"idempotencyKey": key, "recorded": True, "state": state, "completedAt": completed}))

        def do_POST(self):
            length = int(self.headers.get("Content-Length") or 0)
            raw = self.rfile.read(length) if length else b""
            if self.path != "/transition":
                return self.answer(*problem(404, "no such route", False, "ROUTE_NOT_FOUND"))
            key = self.headers.get("Idempotency-Key") or ""
            match = KEY.match(key)
            if not match:
                return self.answer(*problem(400, "Idempotency-Key must be {tenantId}/{executionId}:{stepIndex}:{attempt}", False, "INVALID_IDEMPOTENCY_KEY"))
            try:
                payload = json.loads(raw or b"null")
            except ValueError:
                return self.answer(*problem(400, "the body is not JSON", False, "INVALID_INPUT"))
            trace = TRACEPARENT.match(self.headers.get("traceparent") or "")
            call = {
                "idempotencyKey": key,
                "tenantId": match.group(1),
                "transitionKey": match.group(2),
                "executionId": match.group(3),
                "attempt": int(match.group(5)),
                "step": self.headers.get("X-Transition-Step"),
                "deadlineMs": int(self.headers.get("X-Transition-Deadline-Ms") or 0) or None,
                "traceId": trace.group(1) if trace and trace.group(1) != "0" * 32 else None,
            }
            waited_until = time.time() + options.duplicate_wait_ms / 1000
            while True:
                outcome, stored = store.claim(key, call["tenantId"], lease_s)
                if outcome == "done":
                    return self.stored(stored[0], stored[1], True)
                if outcome == "claimed":
                    break
                if outcome == "abandoned" or time.time() > waited_until:
                    if outcome == "abandoned":
                        self.log(event="worker_claim_abandoned", tenantId=call["tenantId"], transitionKey=call["transitionKey"])
                    self.log(event="transition_in_progress", tenantId=call["tenantId"], transitionKey=call["transitionKey"])
                    status, content_type, body = problem(425, "the same transition is still being handled; deliver it again later", True)
                    return self.answer(status, content_type, body, {IN_PROGRESS_HEADER: "true", "Retry-After": "1"})
                time.sleep(0.05)
            self.run_claimed(key, payload, call)

        def run_claimed(self, key, payload, call):
            stop = threading.Event()

            def renew():
                while not stop.wait(lease_s / 3):
                    try:
                        store.renew(key, lease_s)
                    except sqlite3.Error:
                        pass

            threading.Thread(target=renew, daemon=True).start()
            try:
                if options.conformance and isinstance(payload, dict) and isinstance(payload.get("conformance"), dict):
                    result = conformance(payload["conformance"], call)
                else:
                    result = render(payload, call)
                status, body = 200, json.dumps(result)
            except Rejected as rejected:
                status, _, body = problem(rejected.status, rejected.detail, False, rejected.code)
            except Retryable as failure:
                stop.set()
                store.release(key)
                self.log(event="transition_failed_retryable", tenantId=call["tenantId"], transitionKey=call["transitionKey"], code=failure.code)
                return self.answer(*problem(503, failure.detail, True, failure.code))
            except Exception as err:  # an unexpected failure: retryable, its text never sent (it may carry payload)
                stop.set()
                store.release(key)
                self.log(event="transition_failed_retryable", tenantId=call["tenantId"], transitionKey=call["transitionKey"], kind=type(err).__name__)
                return self.answer(*problem(503, "transition failed; retry", True, "WORKER_ERROR"))
            store.complete(key, status, body)
            stop.set()
            self.log(event="transition_handled", tenantId=call["tenantId"], transitionKey=call["transitionKey"], status=status)
            return self.stored(status, body, False)

    return Handler


def main():
    parser = argparse.ArgumentParser(description="Python reference transition worker (REST)")
    parser.add_argument("--host", default="127.0.0.1")
    parser.add_argument("--port", type=int, default=8093, help="0 picks a free port (printed on the first line)")
    parser.add_argument("--db", default=os.environ.get("WORKER_DB", "transition-dedupe.sqlite3"), help="SQLite file of the dedupe table")
    parser.add_argument("--platform", default=f"python-reference/{sys.version_info.major}.{sys.version_info.minor}")
    parser.add_argument("--lease-ms", type=int, default=60_000, help="how long a claim holds without renewal")
    parser.add_argument("--duplicate-wait-ms", type=int, default=1_000, help="how long a concurrent duplicate waits before answering in progress")
    parser.add_argument("--conformance", action="store_true", help="honour conformance inputs (test deployments only)")
    options = parser.parse_args()
    store = DedupeStore(options.db)
    server = ThreadingHTTPServer((options.host, options.port), make_handler(store, options))
    server.daemon_threads = True
    port = server.server_address[1]
    print(json.dumps({"event": "worker_listening", "port": port, "url": f"http://{options.host}:{port}/transition"}), flush=True)
    try:
        server.serve_forever()
    except KeyboardInterrupt:
        pass
    finally:
        server.server_close()


if __name__ == "__main__":
    main()
