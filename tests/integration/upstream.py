"""upstream.py -- a small HTTP/1.1 application in a thread on a free
loopback port, for the tests that put sluiced's gateway, or a proxy asking
sluiced (nginx), in front of it. Not a test itself.

A subclass says what a request gets: answer(request, body) returns the
status and the body (bytes), request being the http.server handler
(command, path, headers). Every method is answered the same way, with
Content-Length (keep-alive works), and a client that goes away meanwhile is
not an error.
"""
import http.server
import threading


class Upstream:
    def answer(self, request, body):
        raise NotImplementedError

    def __init__(self):
        up = self

        class Handler(http.server.BaseHTTPRequestHandler):
            protocol_version = "HTTP/1.1"

            def any_method(self):
                n = int(self.headers.get("Content-Length") or 0)
                status, out = up.answer(self, self.rfile.read(n) if n else b"")
                try:
                    self.send_response(status)
                    self.send_header("Content-Type", "text/plain")
                    self.send_header("Content-Length", str(len(out)))
                    self.end_headers()
                    self.wfile.write(out)
                except OSError:
                    pass  # the client went away (a proxy stopping, a timeout)

            do_GET = do_POST = do_PUT = do_DELETE = any_method

            def log_message(self, *args):
                pass

        self.server = http.server.ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self.server.daemon_threads = True
        self.port = self.server.server_address[1]
        self.thread = threading.Thread(target=self.server.serve_forever, daemon=True)
        self.thread.start()

    def close(self):
        self.server.shutdown()
        self.server.server_close()
