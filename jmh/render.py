#!/usr/bin/env python3
"""Renders a results directory of jmh/run-benchmarks.sh into charts and a Markdown table.

    python3 jmh/render.py DIR [--table-only]

Reads DIR/*.json (JMH -rf json), DIR/memory.csv and DIR/memory-summary.csv (MemoryChurn) and
DIR/run-info.md; writes DIR/results.md and, unless --table-only, the PNG charts:
allocfree.png (time per operation by peer and size, one thread), workloads.png (each workload
by peer), scaling.png (throughput against threads), memory.png (resident, committed and live
bytes over the churn). Needs matplotlib only for the charts.
"""

import argparse
import csv
import glob
import json
import math
import os
import sys
from collections import OrderedDict, defaultdict

# Benchmark class -> (short title, what one operation is)
WORKLOADS = OrderedDict([
    ("AllocFreeBenchmark", ("allocate+free", "allocate, write a byte, free one block")),
    ("MixedSizeBenchmark", ("mixed sizes", "free the oldest of 256 live blocks, allocate a random size (16 B..256 KiB)")),
    ("ThreadTestBenchmark", ("threadtest", "one block of a batch of 1000: allocate all, then free all (64 B)")),
    ("LarsonBenchmark", ("larson", "one random replacement (16..256 B) by a short-lived thread")),
    ("ProducerConsumerBenchmark", ("producer-consumer", "one block passed from a producer to a consumer that frees it (64 B)")),
    ("CacheThrashBenchmark", ("cache-thrash", "allocate 16 B, write it 100 times, free (active false sharing)")),
    ("CacheScratchBenchmark", ("cache-scratch", "as cache-thrash after freeing a block another thread allocated (passive false sharing)")),
    ("ArenaCloseBenchmark", ("arena", "open an arena, allocate 64 blocks of 64 B, close it")),
])

PEER_ORDER = [
    "SPANHEAP", "SPANHEAP_ZEROED", "MALLOC_FFM", "MIMALLOC_FFM", "JEMALLOC_FFM",
    "ARENA_CONFINED", "ARENA_SHARED", "NETTY_POOLED", "NETTY_POOLED_NOLEAK",
    "NETTY_ADAPTIVE", "NETTY_ADAPTIVE_NOLEAK", "DIRECT_BYTEBUFFER",
    "SPANHEAP_COMPACTING", "SPANHEAP_COMPACTING_OFF",
]
# ArenaCloseBenchmark's @Param arena -> the peer it stands for
ARENA_PEERS = {"SPANHEAP": "SPANHEAP", "CONFINED": "ARENA_CONFINED", "SHARED": "ARENA_SHARED"}

COLORS = {
    "SPANHEAP": "#d62728", "SPANHEAP_ZEROED": "#ff9896",
    "SPANHEAP_COMPACTING": "#d62728", "SPANHEAP_COMPACTING_OFF": "#ff9896",
    "MALLOC_FFM": "#1f77b4", "MIMALLOC_FFM": "#17becf", "JEMALLOC_FFM": "#aec7e8",
    "ARENA_CONFINED": "#2ca02c", "ARENA_SHARED": "#98df8a",
    "NETTY_POOLED": "#9467bd", "NETTY_POOLED_NOLEAK": "#c5b0d5",
    "NETTY_ADAPTIVE": "#8c564b", "NETTY_ADAPTIVE_NOLEAK": "#c49c94",
    "DIRECT_BYTEBUFFER": "#7f7f7f",
}


def peer_key(p):
    return PEER_ORDER.index(p) if p in PEER_ORDER else len(PEER_ORDER)


def size_label(b):
    b = int(b)
    if b >= 1 << 20 and b % (1 << 20) == 0:
        return "%d MiB" % (b >> 20)
    if b >= 1 << 10 and b % (1 << 10) == 0:
        return "%d KiB" % (b >> 10)
    return "%d B" % b


def fmt_ns(x):
    if x is None or (isinstance(x, float) and math.isnan(x)):
        return "–"
    if x < 10:
        return "%.2f" % x
    if x < 100:
        return "%.1f" % x
    return "{:,.0f}".format(x)


def fmt_ratio(x):
    if x >= 10:
        return "%.0fx" % x
    if x >= 1:
        return "%.1fx" % x
    if x >= 0.01:
        return "%.2fx" % x
    return "<0.01x"


class Result:
    def __init__(self, r):
        cls, self.method = r["benchmark"].split(".")[-2:]
        self.cls = cls
        params = r.get("params", {})
        if cls == "ArenaCloseBenchmark":
            self.peer = ARENA_PEERS.get(params.get("arena"), params.get("arena"))
        else:
            self.peer = params.get("allocator", "?")
        self.size = int(params["size"]) if "size" in params else None
        self.threads = int(r["threads"])
        pm = r["primaryMetric"]
        self.score = float(pm["score"])
        err = pm.get("scoreError")
        self.error = float(err) if err not in (None, "NaN") and not (isinstance(err, float) and math.isnan(err)) else float("nan")
        self.unit = pm.get("scoreUnit", "ns/op")
        self.forks = r.get("forks")

    @property
    def workers(self):
        """Independent streams of operations: threads, or pairs for producer-consumer."""
        return self.threads // 2 if self.cls == "ProducerConsumerBenchmark" else self.threads

    @property
    def throughput(self):
        """Operations per microsecond over all threads (score is ns per op per thread)."""
        return self.workers * 1e3 / self.score


def load_results(d):
    """Returns (results of the suite's workloads, raw JMH records of other benchmarks)."""
    latest = OrderedDict()
    others = OrderedDict()
    for f in sorted(glob.glob(os.path.join(d, "*.json"))):
        try:
            with open(f) as fh:
                data = json.load(fh)
        except (OSError, ValueError) as e:
            print("render: skipping %s: %s" % (f, e), file=sys.stderr)
            continue
        for r in data:
            res = Result(r)
            if res.cls not in WORKLOADS:
                # AllocFree64Benchmark, Compact*Benchmark, ...: listed as they are
                key = (r["benchmark"], json.dumps(r.get("params", {}), sort_keys=True), r["threads"])
                others[key] = r
                continue
            latest[(res.cls, res.peer, res.size, res.threads)] = res
    return list(latest.values()), list(others.values())


def load_memory(d):
    rows, summary = [], []
    p = os.path.join(d, "memory.csv")
    if os.path.exists(p):
        with open(p) as fh:
            rows = list(csv.DictReader(fh))
    p = os.path.join(d, "memory-summary.csv")
    if os.path.exists(p):
        with open(p) as fh:
            summary = list(csv.DictReader(fh))
    return rows, summary


def find(results, cls, peer, size=None, threads=1):
    for r in results:
        if r.cls == cls and r.peer == peer and r.threads == threads and (size is None or r.size == size):
            return r
    return None


# ---------------------------------------------------------------------------------------------
# Markdown

def targets(results):
    """The targets, each as (target, measured, met) where data exists."""
    out = []
    a = lambda peer, t=1: find(results, "AllocFreeBenchmark", peer, 64, t)
    sh = a("SPANHEAP")
    if sh:
        for peer, limit, text in [("MALLOC_FFM", 0.5, "at most 0.5x the time of malloc+free through FFM"),
                                  ("ARENA_CONFINED", 0.1, "at most 0.1x Arena.ofConfined() allocate+close")]:
            p = a(peer)
            if p:
                ratio = sh.score / p.score
                out.append(("allocate+free 64 B, 1 thread: " + text,
                            "%.2fx (%s vs %s ns)" % (ratio, fmt_ns(sh.score), fmt_ns(p.score)), ratio <= limit))
        for peer in ["NETTY_POOLED", "NETTY_ADAPTIVE"]:
            p = a(peer)
            if p:
                ratio = p.score / sh.score
                out.append(("allocate+free 64 B, 1 thread: at least 5x faster than %s" % peer,
                            "%.1fx" % ratio, ratio >= 5))
    t1, t2, t16 = a("SPANHEAP", 1), a("SPANHEAP", 2), a("SPANHEAP", 16)
    if t1 and t2:
        ratio = t2.throughput / t1.throughput
        out.append(("allocate+free 64 B: 2 threads at least 1.8x the throughput of 1", "%.2fx" % ratio, ratio >= 1.8))
    if t2 and t16:
        ratio = t16.throughput / t2.throughput
        out.append(("allocate+free 64 B: 16 threads at least 0.9x the throughput of 2", "%.2fx" % ratio, ratio >= 0.9))
    for t in sorted({r.threads for r in results if r.cls == "ProducerConsumerBenchmark"}):
        s = find(results, "ProducerConsumerBenchmark", "SPANHEAP", None, t)
        m = find(results, "ProducerConsumerBenchmark", "MALLOC_FFM", None, t)
        if s and m:
            ratio = m.score / s.score
            out.append(("producer-consumer (%d threads): at least 1.5x malloc's throughput" % t, "%.2fx" % ratio, ratio >= 1.5))
    return out


def workload_table(results, cls):
    rs = [r for r in results if r.cls == cls]
    cols = sorted({(r.size, r.threads) for r in rs}, key=lambda c: (c[1], c[0] or 0))
    peers = sorted({r.peer for r in rs}, key=peer_key)
    multi_size = len({c[0] for c in cols}) > 1
    multi_threads = len({c[1] for c in cols}) > 1

    def head(c):
        parts = []
        if multi_size or (c[0] is not None and cls == "AllocFreeBenchmark"):
            parts.append(size_label(c[0]))
        if multi_threads or True:
            parts.append("%d thr" % c[1])
        return ", ".join(parts)

    lines = ["| allocator | " + " | ".join(head(c) for c in cols) + " |",
             "|---|" + "---:|" * len(cols)]
    for p in peers:
        cells = []
        for c in cols:
            r = next((x for x in rs if x.peer == p and (x.size, x.threads) == c), None)
            base = next((x for x in rs if x.peer == "SPANHEAP" and (x.size, x.threads) == c), None)
            if r is None:
                cells.append("–")
                continue
            cell = fmt_ns(r.score)
            if not math.isnan(r.error) and r.error > 0:
                cell += " ± " + fmt_ns(r.error)
            if base is not None and p != "SPANHEAP":
                cell += " (%s)" % fmt_ratio(r.score / base.score)
            cells.append(cell)
        name = "**%s**" % p if p == "SPANHEAP" else p
        lines.append("| %s | %s |" % (name, " | ".join(cells)))
    return lines


def memory_table(summary):
    mib = lambda v: "–" if v is None or int(v) < 0 else "%.0f" % (int(v) / 1048576)
    lines = ["| allocator | baseline RSS | peak live | peak committed | peak RSS − baseline "
             "| final live | final committed | final RSS − baseline | final (RSS − baseline) / live |",
             "|---|---:|---:|---:|---:|---:|---:|---:|---:|"]
    for s in sorted(summary, key=lambda s: peer_key(s["allocator"])):
        base = int(s["baseline_rss"])
        live = int(s["final_live"])
        extra = (int(s["final_rss"]) - base) / live if live > 0 else float("nan")
        lines.append("| %s | %s | %s | %s | %s | %s | %s | %s | %.2f |" % (
            s["allocator"], mib(base), mib(s["peak_live"]), mib(s["peak_committed"]),
            mib(int(s["peak_rss"]) - base), mib(s["final_live"]), mib(s["final_committed"]),
            mib(int(s["final_rss"]) - base), extra))
    return lines


def other_table(others):
    lines = ["| benchmark | params | threads | score | unit |", "|---|---|---:|---:|---|"]
    for r in others:
        pm = r["primaryMetric"]
        err = pm.get("scoreError")
        score = fmt_ns(float(pm["score"]))
        if isinstance(err, (int, float)) and not math.isnan(err) and err > 0:
            score += " ± " + fmt_ns(float(err))
        params = ", ".join("%s=%s" % kv for kv in sorted(r.get("params", {}).items())) or "–"
        lines.append("| %s | %s | %d | %s | %s |" % (".".join(r["benchmark"].split(".")[-2:]), params,
                                                    r["threads"], score, pm.get("scoreUnit", "")))
        for name, sm in sorted(r.get("secondaryMetrics", {}).items()):
            if name.startswith("·"):
                continue  # profiler output
            lines.append("| ↳ %s | | | %s | %s |" % (name, fmt_ns(float(sm["score"])), sm.get("scoreUnit", "")))
    return lines


def write_markdown(d, results, others, summary, charts):
    md = ["# spanheap benchmark results", ""]
    info = os.path.join(d, "run-info.md")
    if os.path.exists(info):
        with open(info) as fh:
            body = fh.read().strip().splitlines()
        md += ["## Run", ""] + [l for l in body if l.strip() and not l.startswith("# ")] + [""]
    md += ["## How to read", "", "Times are nanoseconds per operation per thread (JMH average time, ± its 99.9% error where "
           "there was more than one iteration); in brackets the time relative to spanheap "
           "(**SPANHEAP**) in the same column: above 1.0x the peer is slower. A 2-core machine is "
           "noisy: read ratios, not absolute figures, and distrust differences under about 10%. "
           "16 threads on 2 cores show behaviour when threads outnumber cores.", ""]
    t = targets(results)
    if t:
        md += ["## Targets", "", "| target | measured | met |", "|---|---:|:---:|"]
        md += ["| %s | %s | %s |" % (a, b, "yes" if ok else "**no**") for a, b, ok in t]
        md += [""]
    for cls, (title, what) in WORKLOADS.items():
        if not any(r.cls == cls for r in results):
            continue
        md += ["## %s" % title, "", "`%s`: one operation = %s." % (cls, what), ""]
        md += workload_table(results, cls) + [""]
    if others:
        md += ["## Other benchmarks", "",
               "Benchmarks outside the peer suite (spanheap's own paths, the compacting heap), as JMH reports them.", ""]
        md += other_table(others) + [""]
    if summary:
        md += ["## Memory after churn", "",
               "`MemoryChurn`: fill to the live target with 16 B..4 KiB blocks, replace each block once at "
               "random, free a random 75%, then the after-free hook (compaction where there is one) and "
               "one second to settle; *final* is that settled state. MiB. *Committed* is the allocator's "
               "own account (glibc: `mallinfo2` arena+mmapped, which includes the JVM's own malloc use; "
               "Netty: `usedDirectMemory`; `ByteBuffer`: the direct buffer pool; – where there is none). "
               "*Baseline* is the JVM's resident set before the workload, its Java heap fixed and "
               "pre-touched; *RSS − baseline* is what the workload added: the comparable figure.", ""]
        md += memory_table(summary) + [""]
    if charts:
        md += ["## Charts", ""] + ["![%s](%s)" % (c, c) for c in charts] + [""]
    with open(os.path.join(d, "results.md"), "w") as fh:
        fh.write("\n".join(md))


# ---------------------------------------------------------------------------------------------
# Charts

def NullFormatter():
    from matplotlib.ticker import NullFormatter as F
    return F()


def chart_allocfree(plt, d, results):
    rs = [r for r in results if r.cls == "AllocFreeBenchmark" and r.threads == 1]
    if not rs:
        return None
    sizes = sorted({r.size for r in rs})
    peers = sorted({r.peer for r in rs}, key=peer_key)
    fig, ax = plt.subplots(figsize=(max(8, 1.4 * len(sizes) + 4), 5))
    width = 0.8 / len(peers)
    for i, p in enumerate(peers):
        xs, ys, es = [], [], []
        for j, s in enumerate(sizes):
            r = find(rs, "AllocFreeBenchmark", p, s, 1)
            if r:
                xs.append(j + (i - (len(peers) - 1) / 2) * width)
                ys.append(r.score)
                es.append(0 if math.isnan(r.error) else r.error)
        ax.bar(xs, ys, width, yerr=es, label=p, color=COLORS.get(p), edgecolor="black" if p == "SPANHEAP" else None)
    ax.set_yscale("log")
    ax.yaxis.set_minor_formatter(NullFormatter())
    ax.set_xticks(range(len(sizes)))
    ax.set_xticklabels([size_label(s) for s in sizes])
    ax.set_ylabel("ns per allocate+touch+free (log)")
    ax.set_title("allocate + free of one block, 1 thread (lower is better)")
    ax.legend(fontsize=7, ncol=2)
    ax.grid(axis="y", which="both", alpha=0.3)
    fig.tight_layout()
    name = "allocfree.png"
    fig.savefig(os.path.join(d, name), dpi=110)
    plt.close(fig)
    return name


def primary_threads(results, cls):
    ts = sorted({r.threads for r in results if r.cls == cls})
    return ts[0] if ts else None


def chart_workloads(plt, d, results):
    panels = []
    for cls, (title, _) in WORKLOADS.items():
        rs = [r for r in results if r.cls == cls]
        if not rs:
            continue
        t = primary_threads(results, cls)
        size = 64 if cls == "AllocFreeBenchmark" else None
        sel = [r for r in rs if r.threads == t and (size is None or r.size == size)]
        if sel:
            panels.append(("%s (%d thr%s)" % (title, t, ", 64 B" if size else ""), sel))
    if not panels:
        return None
    cols = 2
    rows = (len(panels) + cols - 1) // cols
    fig, axes = plt.subplots(rows, cols, figsize=(12, 2.6 * rows + 0.5), squeeze=False)
    for ax, (title, sel) in zip(axes.flat, panels):
        sel = sorted(sel, key=lambda r: peer_key(r.peer))
        ys = range(len(sel))
        bars = ax.barh(list(ys), [r.score for r in sel], color=[COLORS.get(r.peer) for r in sel],
                       xerr=[0 if math.isnan(r.error) else r.error for r in sel])
        ax.bar_label(bars, labels=[fmt_ns(r.score) for r in sel], fontsize=6, padding=3)
        ax.set_yticks(list(ys))
        ax.set_yticklabels([r.peer for r in sel], fontsize=7)
        ax.invert_yaxis()
        ax.set_xscale("log")
        ax.xaxis.set_minor_formatter(NullFormatter())
        ax.margins(x=0.15)
        ax.set_title(title, fontsize=9)
        ax.set_xlabel("ns/op (log, lower is better)", fontsize=8)
        ax.grid(axis="x", which="both", alpha=0.3)
    for ax in list(axes.flat)[len(panels):]:
        ax.axis("off")
    fig.tight_layout()
    name = "workloads.png"
    fig.savefig(os.path.join(d, name), dpi=110)
    plt.close(fig)
    return name


def chart_scaling(plt, d, results):
    panels = []
    for cls, (title, _) in WORKLOADS.items():
        rs = [r for r in results if r.cls == cls and (cls != "AllocFreeBenchmark" or r.size == 64)]
        if len({r.threads for r in rs}) >= 2:
            panels.append((title + (" 64 B" if cls == "AllocFreeBenchmark" else ""), rs))
    if not panels:
        return None
    cols = min(3, len(panels))
    rows = (len(panels) + cols - 1) // cols
    fig, axes = plt.subplots(rows, cols, figsize=(4.3 * cols, 3.4 * rows + 0.6), squeeze=False)
    for ax, (title, rs) in zip(axes.flat, panels):
        for p in sorted({r.peer for r in rs}, key=peer_key):
            pts = sorted((r.threads, r.throughput) for r in rs if r.peer == p)
            ax.plot([x for x, _ in pts], [y for _, y in pts], marker="o", label=p, color=COLORS.get(p),
                    linewidth=2.5 if p == "SPANHEAP" else 1.2)
        ax.set_xscale("log", base=2)
        ts = sorted({r.threads for r in rs})
        ax.set_xticks(ts)
        ax.set_xticklabels([str(t) for t in ts])
        ax.set_yscale("log")
        ax.yaxis.set_minor_formatter(NullFormatter())
        ax.set_xlabel("threads (2 cores)", fontsize=8)
        ax.set_ylabel("Mops/s, all threads (log)", fontsize=8)
        ax.set_title(title, fontsize=9)
        ax.grid(which="both", alpha=0.3)
    for ax in list(axes.flat)[len(panels):]:
        ax.axis("off")
    handles, labels = axes.flat[0].get_legend_handles_labels()
    fig.legend(handles, labels, loc="lower center", ncol=6, fontsize=7)
    fig.tight_layout(rect=(0, 0.08, 1, 1))
    name = "scaling.png"
    fig.savefig(os.path.join(d, name), dpi=110)
    plt.close(fig)
    return name


def chart_memory(plt, d, rows):
    if not rows:
        return None
    by = defaultdict(list)
    for r in rows:
        by[r["allocator"]].append(r)
    peers = sorted(by, key=peer_key)
    cols = min(4, len(peers))
    nrows = (len(peers) + cols - 1) // cols
    fig, axes = plt.subplots(nrows, cols, figsize=(4 * cols, 3.2 * nrows + 0.5), squeeze=False)
    for ax, p in zip(axes.flat, peers):
        rs = by[p]
        t = [int(r["op"]) / 1e6 for r in rs]
        mib = lambda k: [int(r[k]) / 1048576 if int(r[k]) >= 0 else float("nan") for r in rs]
        rss, live, committed = mib("rss_bytes"), mib("live_bytes"), mib("committed_bytes")
        base = next((x for r, x in zip(rs, rss) if r["phase"] == "baseline"), 0.0)
        rss = [x - base for x in rss]
        ax.plot(t, rss, label="RSS − baseline", color="black")
        top = 1.15 * max(max(rss), max(live))
        if any(not math.isnan(c) for c in committed):
            ax.plot(t, committed, label="committed", color=COLORS.get(p, "tab:blue"), linestyle="--")
            peak = max(c for c in committed if not math.isnan(c))
            if peak > 3 * top:  # an allocator whose "committed" counts untouched address space
                ax.set_ylim(0, top)
                ax.text(0.02, 0.95, "committed off scale (up to %.0f MiB)" % peak,
                        transform=ax.transAxes, fontsize=7, va="top", color=COLORS.get(p, "tab:blue"))
        ax.plot(t, live, label="live", color="tab:green", linestyle=":")
        # phase boundaries
        last = None
        for r, x in zip(rs, t):
            if r["phase"] != last and last is not None:
                ax.axvline(x, color="grey", alpha=0.25, linewidth=0.8)
            last = r["phase"]
        ax.set_title(p, fontsize=9)
        ax.set_xlabel("million operations", fontsize=8)
        ax.set_ylabel("MiB", fontsize=8)
        ax.grid(alpha=0.3)
    for ax in list(axes.flat)[len(peers):]:
        ax.axis("off")
    axes.flat[0].legend(fontsize=7, loc="center right")
    fig.suptitle("memory churn: RSS above the JVM's baseline, committed and live bytes; "
                 "phases fill, churn, free 75%, settle, end (grey lines)", fontsize=10)
    fig.tight_layout()
    name = "memory.png"
    fig.savefig(os.path.join(d, name), dpi=110)
    plt.close(fig)
    return name


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("dir")
    ap.add_argument("--table-only", action="store_true", help="write results.md only (no matplotlib)")
    args = ap.parse_args()
    results, others = load_results(args.dir)
    rows, summary = load_memory(args.dir)
    if not results and not others and not summary:
        sys.exit("render: no JMH JSON or memory CSV in %s" % args.dir)
    charts = []
    if not args.table_only:
        import matplotlib
        matplotlib.use("Agg")
        import matplotlib.pyplot as plt
        for f in (chart_allocfree, chart_workloads, chart_scaling):
            name = f(plt, args.dir, results)
            if name:
                charts.append(name)
        name = chart_memory(plt, args.dir, rows)
        if name:
            charts.append(name)
    write_markdown(args.dir, results, others, summary, charts)
    print("render: wrote %s" % ", ".join([os.path.join(args.dir, "results.md")] + charts))


if __name__ == "__main__":
    main()
