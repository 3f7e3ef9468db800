#!/usr/bin/env python3
"""arrivals_stats.py -- the shaping figures of bench/gateway_vs_nginx.sh:
reads arrivals_upstream.py's LOG, keeps the lines of KEY, and prints one
JSON line about their spacing against the period (1 / RATE): mean, stdev,
min, max (ms), the share of gaps within 5 % of the period, how many
arrived early against the schedule t0 + i * period (t0 = the first
arrival) by more than 1 ms, with the largest lead, and the burst: the
most arrivals beyond the rate in any interval, max over i < j of
(j - i) - (t_j - t_i) / period (0 when no two arrivals are closer than the
schedule allows; a limit with burst b lets it reach b).

    arrivals_stats.py LOG KEY RATE
"""
import json
import statistics
import sys


def burst(times, period_ns):
    best, low = 0.0, None
    for j, t in enumerate(times):
        x = j - t / period_ns
        if low is not None:
            best = max(best, x - low)
        low = x if low is None else min(low, x)
    return best


def main():
    path, key, rate = sys.argv[1], sys.argv[2], float(sys.argv[3])
    times = sorted(int(t) for t, k in (line.split() for line in open(path)) if k == key)
    period_ms = 1000.0 / rate
    out = {"key": key, "arrived": len(times), "period_ms": round(period_ms, 3)}
    if len(times) >= 3:
        gaps = [(b - a) / 1e6 for a, b in zip(times, times[1:])]
        leads = [(times[0] + i * period_ms * 1e6 - t) / 1e6 for i, t in enumerate(times)]
        out.update({
            "gap_mean_ms": round(statistics.mean(gaps), 3),
            "gap_stdev_ms": round(statistics.stdev(gaps), 3),
            "gap_min_ms": round(min(gaps), 3),
            "gap_max_ms": round(max(gaps), 3),
            "within_5pct": round(100.0 * sum(abs(g - period_ms) <= 0.05 * period_ms for g in gaps)
                                 / len(gaps), 1),
            "early_gt_1ms": sum(lead > 1.0 for lead in leads),
            "max_lead_ms": round(max(leads), 3),
            "burst": round(burst(times, period_ms * 1e6), 2),
            "span_s": round((times[-1] - times[0]) / 1e9, 3),
            "rate_measured": round((len(times) - 1) / ((times[-1] - times[0]) / 1e9), 2),
        })
    print(json.dumps(out))


if __name__ == "__main__":
    main()
