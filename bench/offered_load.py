#!/usr/bin/env python3
"""offered_load.py -- an open-loop client for bench/gateway_vs_nginx.sh's
shaping case: sends RATE requests per second for SECONDS seconds, each on
a new connection at its own moment (i / RATE after the start, whatever the
earlier ones are doing), all with the header X-Key: KEY, and waits for
every answer. Prints one JSON line: sent, answers by status, errors, and
how late the sender was against its own schedule (max, ms).

    offered_load.py URL RATE SECONDS KEY
"""
import asyncio
import json
import sys
import time
import urllib.parse


async def one(host, port, path, key, statuses):
    try:
        reader, writer = await asyncio.open_connection(host, port)
        writer.write(("GET %s HTTP/1.1\r\nHost: %s:%d\r\nX-Key: %s\r\nConnection: close\r\n\r\n"
                      % (path, host, port, key)).encode())
        await writer.drain()
        line = await reader.readline()
        status = line.split()[1].decode() if len(line.split()) > 1 else "none"
        await reader.read()
        writer.close()
    except (OSError, asyncio.IncompleteReadError) as e:
        status = "error:" + type(e).__name__
    statuses[status] = statuses.get(status, 0) + 1


async def main():
    url, rate, seconds, key = sys.argv[1], float(sys.argv[2]), float(sys.argv[3]), sys.argv[4]
    u = urllib.parse.urlsplit(url)
    n = int(rate * seconds)
    statuses, tasks, late = {}, [], 0.0
    start = time.monotonic()
    for i in range(n):
        at = start + i / rate
        delay = at - time.monotonic()
        if delay > 0:
            await asyncio.sleep(delay)
        late = max(late, time.monotonic() - at)
        tasks.append(asyncio.ensure_future(one(u.hostname, u.port, u.path, key, statuses)))
    await asyncio.gather(*tasks)
    print(json.dumps({"sent": n, "rate": rate, "seconds": seconds, "statuses": statuses,
                      "sender_late_max_ms": round(late * 1000, 2),
                      "wall_s": round(time.monotonic() - start, 2)}))


if __name__ == "__main__":
    asyncio.run(main())
