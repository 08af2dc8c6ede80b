#!/usr/bin/env python3
# SPDX-License-Identifier: GPL-2.0
#
# etcd_proxy.py: an HTTP proxy in front of etcd's JSON gateway that loses
# chosen answers, for test_etcd_unknown.sh. Every request goes to etcd,
# which applies it; then the answer goes back, or not. RULES, in order,
# each for the next request of its KIND after the rule before fired (a
# KIND is the path's last part: txn, range, grant, keepalive, ...):
#
#   pass:KIND   the answer goes back (a step: "pass:txn drop:txn" loses
#               the second transaction's answer)
#   drop:KIND   the connection is closed without an answer (curl: "Server
#               returned nothing")
#   hold:KIND   no answer until the client gives up and closes (its own
#               timeout: krepd --etcd-timeout-ms); then closed
#
# Requests no rule picks go through, all of them after the last rule.
# One line per request on standard output, flushed: "pass txn 200 {...}",
# "drop txn 200 {...}", ... with etcd's answer, so a test knows what etcd
# did with what was lost. The port it listens on (127.0.0.1) is written to
# PORT_FILE once it does.
#
# Usage: etcd_proxy.py UPSTREAM_URL PORT_FILE [RULE...]

import http.client
import http.server
import os
import sys
import threading
import urllib.parse


MODES = ("pass", "drop", "hold")


class Rules:
    def __init__(self, rules):
        self.rules = [r.split(":", 1) for r in rules]
        if any(len(r) != 2 or r[0] not in MODES for r in self.rules):
            sys.exit("etcd_proxy.py: a rule is pass:KIND, drop:KIND or hold:KIND")
        self.lock = threading.Lock()

    def mode(self, kind):
        """What becomes of the answer to this request of @kind."""
        with self.lock:
            if not self.rules or self.rules[0][1] != kind:
                return "pass"
            return self.rules.pop(0)[0]


class Handler(http.server.BaseHTTPRequestHandler):
    protocol_version = "HTTP/1.1"

    def log_message(self, fmt, *args):
        pass

    def upstream(self, body):
        u = self.server.upstream
        conn = http.client.HTTPConnection(u.hostname, u.port, timeout=30)
        headers = {"Content-Type": "application/json"}
        auth = self.headers.get("Authorization")
        if auth:
            headers["Authorization"] = auth
        conn.request("POST", self.path, body, headers)
        ans = conn.getresponse()
        data = ans.read()
        conn.close()
        return ans.status, data

    def do_POST(self):
        body = self.rfile.read(int(self.headers.get("Content-Length", 0)))
        kind = self.path.rstrip("/").rsplit("/", 1)[-1]
        status, data = self.upstream(body)
        mode = self.server.rules.mode(kind)
        print(mode, kind, status, data.decode(errors="replace"), flush=True)
        if mode == "pass":
            self.send_response(status)
            self.send_header("Content-Type", "application/json")
            self.send_header("Content-Length", str(len(data)))
            self.end_headers()
            self.wfile.write(data)
            return
        if mode == "hold":
            # until the client's own timeout closes the connection
            while self.connection.recv(4096):
                pass
        self.close_connection = True


def main():
    if len(sys.argv) < 3:
        sys.exit("usage: etcd_proxy.py UPSTREAM_URL PORT_FILE [RULE...]")
    rules = Rules(sys.argv[3:])
    srv = http.server.ThreadingHTTPServer(("127.0.0.1", 0), Handler)
    srv.daemon_threads = True
    srv.upstream = urllib.parse.urlsplit(sys.argv[1])
    srv.rules = rules
    with open(sys.argv[2] + ".tmp", "w") as f:
        print(srv.server_address[1], file=f)
    os.rename(sys.argv[2] + ".tmp", sys.argv[2])
    srv.serve_forever()


if __name__ == "__main__":
    main()
