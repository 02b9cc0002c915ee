#!/usr/bin/env python3
"""The example cluster's manager: runboard starts it first, waits for GET
/health to answer 200, then POSTs the batch's cells to /cells. It "runs" each
cell by writing the cell's record into the run set (docs/formats.md,
`cells/<cell id>.json`) and exits 0 when every cell is done — how a manager
says the batch is over. Replace the work with your own orchestration.

    python3 manager.py PORT
"""
import http.server
import json
import os
import sys
import threading
import time
from datetime import datetime, timezone

port = int(sys.argv[1])


def now():
    return datetime.now(timezone.utc).strftime("%Y-%m-%dT%H:%M:%SZ")


def record(cell, status, **more):
    """Writes a cell's record whole (a temporary file renamed over it)."""
    cells = os.path.join(os.environ["RUNBOARD_RUNSET"], "cells")
    rec = {"schema_version": 1, "cell": cell["id"], "factors": cell["factors"], "status": status, "attempts": 1}
    rec.update(more)
    tmp = os.path.join(cells, "." + cell["id"] + ".tmp")
    with open(tmp, "w") as f:
        json.dump(rec, f)
    os.replace(tmp, os.path.join(cells, cell["id"] + ".json"))


def work(cells):
    for cell in cells:
        started = now()
        record(cell, "running", started_at=started)
        time.sleep(1.0)  # the work
        record(cell, "done", started_at=started, ended_at=now(), exit_code=0, tokens=100)
        print("manager: cell", cell["id"], "done", flush=True)
    os._exit(0)


class Handler(http.server.BaseHTTPRequestHandler):
    def do_GET(self):
        self.send_response(200 if self.path == "/health" else 404)
        self.end_headers()
        self.wfile.write(b"ok")

    def do_POST(self):
        body = json.loads(self.rfile.read(int(self.headers.get("Content-Length", 0))))
        self.send_response(202)
        self.end_headers()
        self.wfile.write(b"accepted")
        threading.Thread(target=work, args=(body["cells"],), daemon=True).start()

    def log_message(self, fmt, *args):
        print("manager:", fmt % args, file=sys.stderr, flush=True)


print("manager: listening on", port, flush=True)
http.server.ThreadingHTTPServer(("127.0.0.1", port), Handler).serve_forever()
