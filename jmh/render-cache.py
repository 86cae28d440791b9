#!/usr/bin/env python3
"""Tables (Markdown) and a chart (PNG) from CacheBenchmark's JMH JSON files.

usage: render-cache.py OUT.png RESULT-t2.json RESULT-t16.json ...
Prints one table per file; the chart needs matplotlib (pip install matplotlib).
"""
import collections
import json
import os
import sys

PEERS = ["SPANHEAP", "OHC", "OHC_TINYLFU", "CAFFEINE_HEAP", "EHCACHE_OFFHEAP"]


def load(path):
    rows = collections.defaultdict(dict)
    threads = None
    for r in json.load(open(path)):
        p = r["params"]
        threads = r["threads"]
        sm = r["secondaryMetrics"]
        hits, misses = sm["hits"]["score"], sm["misses"]["score"]
        gc = sm.get("gc.time", {}).get("score", float("nan"))
        key = (p["values"], int(p["writePercent"]), float(p["zipf"]))
        rows[key][p["peer"]] = (r["primaryMetric"]["score"], hits / (hits + misses), gc)
    return threads, rows


def table(threads, rows):
    print(f"\n{threads} threads: operations per microsecond (hit ratio %)\n")
    print("| values | writes | Zipf | " + " | ".join(PEERS) + " | spanheap / OHC |")
    print("|---|---:|---:|" + "---:|" * len(PEERS) + "---:|")
    for k in sorted(rows):
        r = rows[k]
        cells = [f"{r[p][0]:.2f} ({100 * r[p][1]:.1f})" if p in r else "-" for p in PEERS]
        ratio = r["SPANHEAP"][0] / r["OHC"][0] if "SPANHEAP" in r and "OHC" in r else float("nan")
        print(f"| {k[0]} B | {k[1]}% | {k[2]} | " + " | ".join(cells) + f" | {ratio:.2f}x |")


def main():
    out, files = sys.argv[1], sys.argv[2:]
    data = [load(f) for f in files]
    for threads, rows in data:
        table(threads, rows)
    try:
        import matplotlib
        matplotlib.use("Agg")
        import matplotlib.pyplot as plt
    except ImportError:
        print("\n(no matplotlib: chart skipped)", file=sys.stderr)
        return
    fig, axes = plt.subplots(len(data), 1, figsize=(11, 4.2 * len(data)), squeeze=False)
    for ax, (threads, rows) in zip(axes[:, 0], data):
        keys = sorted(rows)
        width = 0.16
        for i, peer in enumerate(PEERS):
            ys = [rows[k][peer][0] if peer in rows[k] else 0 for k in keys]
            ax.bar([x + (i - 2) * width for x in range(len(keys))], ys, width, label=peer)
        ax.set_xticks(range(len(keys)))
        ax.set_xticklabels([f"{k[0]} B\n{k[1]}% writes\nZipf {k[2]}" for k in keys], fontsize=8)
        ax.set_ylabel("ops / µs")
        ax.set_title(f"CacheBenchmark, {threads} threads, 64 MiB bound (higher is better)")
        ax.legend(fontsize=8, ncol=5)
    fig.tight_layout()
    fig.savefig(out, dpi=110)
    print(f"\nchart: {os.path.relpath(out)}", file=sys.stderr)


if __name__ == "__main__":
    main()
