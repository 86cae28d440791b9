#!/usr/bin/env python3
"""Tables and a chart of the cache-storage churn (CacheChurnBenchmark) runs in one folder.

Reads cache-churn-t<threads>.json (JMH JSON, one file per thread count) and writes results.md
(throughput per store and thread count, and each store's ratio to the best malloc peer) and,
if matplotlib is there, churn.png. Usage: render-churn.py DIR [--table-only]
"""
import argparse
import glob
import json
import os
import re

PEERS = ["MALLOC_FFM", "JEMALLOC_FFM", "MIMALLOC_FFM"]


def load(d):
    """{threads: {store: (score, error)}}"""
    out = {}
    for f in sorted(glob.glob(os.path.join(d, "cache-churn-t*.json"))):
        t = int(re.search(r"-t(\d+)\.json$", f).group(1))
        for r in json.load(open(f)):
            store = r["params"]["store"]
            m = r["primaryMetric"]
            out.setdefault(t, {})[store] = (m["score"], m["scoreError"])
    return out


def table(res):
    threads = sorted(res)
    stores = []
    for t in threads:
        for s in res[t]:
            if s not in stores:
                stores.append(s)
    lines = ["| store | " + " | ".join("%d thread%s (ops/us)" % (t, "" if t == 1 else "s") for t in threads)
             + " | " + " | ".join("vs best malloc, %dT" % t for t in threads) + " |",
             "|---|" + "---:|" * (2 * len(threads))]
    for s in stores:
        cells = []
        ratios = []
        for t in threads:
            sc = res[t].get(s)
            cells.append("%.2f ± %.2f" % sc if sc else "n/a")
            best = max((res[t][p][0] for p in PEERS if p in res[t]), default=None)
            ratios.append("%.2fx" % (sc[0] / best) if sc and best else "n/a")
        lines.append("| %s | %s | %s |" % (s, " | ".join(cells), " | ".join(ratios)))
    return "\n".join(lines)


def chart(plt, d, res):
    threads = sorted(res)
    stores = list(res[threads[0]])
    fig, ax = plt.subplots(figsize=(8, 4))
    w = 0.8 / len(stores)
    for i, s in enumerate(stores):
        xs = [k + i * w for k in range(len(threads))]
        ys = [res[t].get(s, (0, 0))[0] for t in threads]
        ax.bar(xs, ys, w, label=s)
    ax.set_xticks([k + 0.4 - w / 2 for k in range(len(threads))])
    ax.set_xticklabels(["%d thread%s" % (t, "" if t == 1 else "s") for t in threads])
    ax.set_ylabel("operations per microsecond (higher is better)")
    ax.set_title("Cache storage churn: 75% reads, 25% replace, size mix shifting every 2 s")
    ax.legend(fontsize=7)
    fig.tight_layout()
    fig.savefig(os.path.join(d, "churn.png"), dpi=110)
    return "churn.png"


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("dir")
    ap.add_argument("--table-only", action="store_true")
    a = ap.parse_args()
    res = load(a.dir)
    if not res:
        raise SystemExit("render-churn: no cache-churn-t*.json in " + a.dir)
    md = ["# Cache storage churn", "",
          "Throughput of `CacheChurnBenchmark` (JMH; the workload and the stores are described in its",
          "class comment and in [../../compacting-heap.md](../../compacting-heap.md)). Error: JMH's 99.9%",
          "interval over 3 iterations of 4 s; the size mix alternates every 2 s, so every iteration",
          "holds both phases.", "", table(res), ""]
    if not a.table_only:
        import matplotlib
        matplotlib.use("Agg")
        import matplotlib.pyplot as plt
        md += ["![throughput by store and threads](%s)" % chart(plt, a.dir, res), ""]
    open(os.path.join(a.dir, "results.md"), "w").write("\n".join(md))
    print("render-churn: wrote", os.path.join(a.dir, "results.md"))


if __name__ == "__main__":
    main()
