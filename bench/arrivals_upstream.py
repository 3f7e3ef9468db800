#!/usr/bin/env python3
"""arrivals_upstream.py -- the upstream of bench/gateway_vs_nginx.sh's
shaping case: an HTTP/1.1 server (keep-alive) that answers every request
200 at once and writes one line per request to LOG: the monotonic time in
nanoseconds at which the request's head was complete, and its X-Key
header. Not a test; it exists to time arrivals, not to serve.

    arrivals_upstream.py PORT LOG
"""
import asyncio
import sys
import time

RESPONSE = b"HTTP/1.1 200 OK\r\nContent-Length: 3\r\nContent-Type: text/plain\r\n\r\nok\n"


async def serve(reader, writer, log):
    try:
        while True:
            head = await reader.readuntil(b"\r\n\r\n")
            t = time.monotonic_ns()
            key = b"-"
            length = 0
            for line in head.split(b"\r\n")[1:]:
                name, _, value = line.partition(b":")
                name = name.strip().lower()
                if name == b"x-key":
                    key = value.strip()
                elif name == b"content-length":
                    length = int(value)
            if length:
                await reader.readexactly(length)
            log.write("%d %s\n" % (t, key.decode(errors="replace")))
            log.flush()
            writer.write(RESPONSE)
            await writer.drain()
    except (asyncio.IncompleteReadError, ConnectionError):
        pass
    finally:
        writer.close()


async def main():
    port, path = int(sys.argv[1]), sys.argv[2]
    log = open(path, "a")
    server = await asyncio.start_server(lambda r, w: serve(r, w, log), "127.0.0.1", port,
                                        backlog=4096)
    async with server:
        await server.serve_forever()


if __name__ == "__main__":
    asyncio.run(main())
