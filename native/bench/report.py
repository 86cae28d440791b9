#!/usr/bin/env python3
"""report.py DIR — summarise DIR/runs.csv (written by run.sh).

Writes DIR/results.csv (median per workload, allocator and thread count),
DIR/results.md (machine, tables, the issue-2 targets) and, when matplotlib
is importable, DIR/results.png. Standard library only otherwise.
"""
import csv
import os
import statistics
import sys
from collections import defaultdict

ORDER = ["sh", "sh-malloc", "glibc", "mimalloc", "jemalloc", "tcmalloc"]
NPROC = os.cpu_count() or 1
WORKLOADS = ["threadtest", "larson", "prod-con", "cache-thrash", "cache-scratch"]


def read_machine(path):
    info = {}
    if os.path.exists(path):
        with open(path) as f:
            for line in f:
                key, _, value = line.rstrip("\n").partition("=")
                info[key] = value
    return info


def summarise(rows):
    groups = defaultdict(list)
    for r in rows:
        groups[(r["workload"], r["allocator"], int(r["threads"]))].append(r)
    out = {}
    for key, runs in groups.items():
        ok = [r for r in runs if r["status"] == "ok"]
        values = [float(r["value"]) for r in ok]
        rss = [int(r["peak_rss_kb"]) for r in ok]
        share = [float(r["cpu_seconds"]) / (float(r["seconds"]) * min(key[2], NPROC))
                 for r in ok if r.get("cpu_seconds") and float(r["seconds"]) > 0]
        # Work per CPU-second: Mops per CPU-second, or for the cache workloads
        # (fixed work) the CPU seconds themselves. Less sensitive than wall
        # time to other processes taking the cores; false-sharing stalls and
        # lock spinning still count, sleeping in a futex does not.
        if ok and ok[0]["metric"] == "mops":
            by_cpu = [int(r["ops"]) / float(r["cpu_seconds"]) / 1e6 for r in ok
                      if r.get("cpu_seconds") and float(r["cpu_seconds"]) > 0]
        else:
            by_cpu = [float(r["cpu_seconds"]) for r in ok if r.get("cpu_seconds")]
        out[key] = {
            "workload": key[0], "allocator": key[1], "threads": key[2],
            "metric": ok[0]["metric"] if ok else "",
            "size": ok[0]["size"] if ok else "",
            "runs": len(ok), "failed": len(runs) - len(ok),
            "failures": sorted({r["status"] for r in runs if r["status"] != "ok"}),
            "median": statistics.median(values) if values else None,
            "min": min(values) if values else None,
            "max": max(values) if values else None,
            "rss_kb": statistics.median(rss) if rss else None,
            "cpu_share": statistics.median(share) if share else None,
            "by_cpu": statistics.median(by_cpu) if by_cpu else None,
        }
    return out


def throughput(cell, field="median"):
    """Higher is better for every workload (1/seconds for the cache ones)."""
    if cell is None or cell.get(field) is None or cell[field] <= 0:
        return None
    return cell[field] if cell["metric"] == "mops" else 1.0 / cell[field]


def fmt_value(cell):
    if cell is None:
        return "–"
    if cell["median"] is None:
        return "FAIL (" + ",".join(cell["failures"]) + ")"
    v = cell["median"]
    text = f"{v:.1f}" if cell["metric"] == "mops" else f"{v:.3g}"
    if cell["failed"]:
        text += f" ({cell['failed']} failed)"
    return text


def fmt_by_cpu(cell):
    if cell is None or cell["by_cpu"] is None:
        return "–"
    return f"{cell['by_cpu']:.1f}" if cell["metric"] == "mops" else f"{cell['by_cpu']:.3g}"


def fmt_rss(cell):
    if cell is None or cell["rss_kb"] is None:
        return "–"
    return f"{cell['rss_kb'] / 1024:.1f}"


def ordered(allocators):
    return sorted(allocators, key=lambda a: ORDER.index(a) if a in ORDER else len(ORDER))


def ratios(summary, w, t, field):
    """(sh/glibc, sh/mimalloc) throughput ratios by wall time or CPU time."""
    sh = throughput(summary.get((w, "sh", t)), field)
    glibc = throughput(summary.get((w, "glibc", t)), field)
    mi = throughput(summary.get((w, "mimalloc", t)), field)
    return (sh / glibc if sh and glibc else None, sh / mi if sh and mi else None)


def targets(summary, threads_of):
    """Rows: workload, threads, needed vs glibc, needed vs mimalloc (or None),
    then for wall time and for CPU time: (sh/glibc, sh/mimalloc, holds)."""
    rows = []
    for w in WORKLOADS:
        for t in threads_of.get(w, []):
            need_glibc = 1.5 if w in ("threadtest", "prod-con") else 1.0
            need_mi = 0.9 if w == "threadtest" else None
            row = [w, t, need_glibc, need_mi]
            for field in ("median", "by_cpu"):
                vg, vm = ratios(summary, w, t, field)
                holds = vg is not None and vg >= need_glibc
                if need_mi is not None:
                    holds = holds and vm is not None and vm >= need_mi
                row.append((vg, vm if need_mi is not None else None, holds))
            rows.append(row)
    return rows


def write_md(path, machine, summary, threads_of, allocators):
    lines = []
    add = lines.append
    add("# Native benchmark results")
    add("")
    add("Produced by `" + machine.get("command", "native/bench/run.sh") + "` "
        f"({machine.get('mode', '?')} mode) on {machine.get('date', '?')}.")
    add(f"Each cell is the median of {machine.get('repeat', '?')} run(s), every run in its own "
        "process (so peak RSS is per run).")
    add("")
    add("## Machine")
    add("")
    for key in ("nproc", "cpu", "kernel", "glibc", "compiler", "git"):
        if key in machine:
            add(f"- {key}: {machine[key]}")
    loads = [k for k in machine if k.startswith("load_")]
    if loads:
        add("- load average (1, 5, 15 min): " + "; ".join(f"{k[5:]} {machine[k]}" for k in loads))
    for key in sorted(k for k in machine if k.endswith(".so")):
        add(f"- {key} (snapshot used for every run): {machine[key]}")
    for key in sorted(k for k in machine if k.startswith("allocator.")):
        add(f"- {key[len('allocator.'):]}: {machine[key]}")
    add("- sh: `sh_alloc`/`sh_free` on one `sh_heap_create(NULL)` heap (native/build/libspanheap.so)")
    add("- glibc: the process's own malloc, no LD_PRELOAD")
    add("")
    add("Peers come from Debian's packages (`apt-get update && apt-get install -y libmimalloc2.0 "
        "libjemalloc2 libtcmalloc-minimal4`); `run.sh` skips those not installed.")
    add("")
    add("The machine is shared with other engineers' builds while the suite runs, so single "
        "figures are noisy (load averages above); medians damp that but do not remove it. "
        "Spread per cell (min, max) is in results.csv, every run in runs.csv.")
    shares = [c["cpu_share"] for c in summary.values()
              if c["cpu_share"] is not None and c["workload"] in ("threadtest", "cache-thrash")]
    if shares:
        add("")
        add(f"CPU share: in threadtest and cache-thrash, whose threads never wait, a run used a "
            f"median {100 * statistics.median(shares):.0f}% (lowest {100 * min(shares):.0f}%) of "
            "the min(threads, cores) CPUs it could have used (process CPU time / wall time); "
            "the rest went to other processes. Per cell: cpu_share_median in results.csv.")
    add("")
    add("## Workloads and parameters")
    add("")
    add("Definitions, defaults and how they relate to the seeds' settings: "
        "[native/bench/README.md](../../../native/bench/README.md). Arguments used here:")
    add("")
    for w in WORKLOADS:
        if w in threads_of:
            add(f"- `{w}` {machine.get('args.' + w, '')}")
    add("")
    add("Command for one run: `native/bench/build/spanheap-bench WORKLOAD --backend sh|malloc "
        "--threads N ARGS` (for peers: `LD_PRELOAD=lib... spanheap-bench ... --backend malloc`).")
    add("")

    add("## Targets")
    add("")
    add("At least glibc's throughput on every workload; at least 1.5x glibc on threadtest and "
        "prod-con; within 10% of mimalloc on threadtest. For cache-* throughput is 1/seconds.")
    add("")
    add("Wall: the figures below (wall-clock throughput; this is what the targets are about). "
        "CPU: the same ratio computed from work per CPU-second of the process, which other "
        "processes on the shared machine disturb much less; where the two disagree, the wall "
        "figure is dominated by noise.")
    add("")
    add("| workload | threads | sh / glibc wall | sh / glibc CPU | needed | sh / mimalloc wall "
        "| sh / mimalloc CPU | needed | holds (wall) | holds (CPU) |")
    add("|---|---:|---:|---:|---:|---:|---:|---:|:---:|:---:|")

    def r2(v):
        return "–" if v is None else f"{v:.2f}"
    for w, t, ng, nm, wall, cpu in targets(summary, threads_of):
        add(f"| {w} | {t} | {r2(wall[0])} | {r2(cpu[0])} | {ng:.1f} | {r2(wall[1])} | {r2(cpu[1])} | "
            f"{'–' if nm is None else f'{nm:.1f}'} | {'yes' if wall[2] else '**no**'} | "
            f"{'yes' if cpu[2] else '**no**'} |")
    add("")

    for w in WORKLOADS:
        if w not in threads_of:
            continue
        cells = [summary.get((w, a, t)) for a in allocators for t in threads_of[w]]
        metric = next((c["metric"] for c in cells if c and c["metric"]), "mops")
        size = next((c["size"] for c in cells if c and c["size"]), "")
        unit = "Mops/s, higher is better" if metric == "mops" else "seconds, lower is better"
        add(f"## {w} (size {size} B; {unit})")
        add("")
        add("| threads | " + " | ".join(allocators) + " |")
        add("|---:|" + "---:|" * len(allocators))
        for t in threads_of[w]:
            add(f"| {t} | " + " | ".join(fmt_value(summary.get((w, a, t))) for a in allocators) + " |")
        add("")
        add("Mops per CPU-second of the process (higher is better):" if metric == "mops"
            else "CPU seconds of the process (lower is better):")
        if w in ("prod-con", "larson"):
            add("")
            add("(includes waiting: prod-con's yield loops and larson's thread creation count as "
                "CPU time, so this view favours neither side cleanly here.)")
        add("")
        add("| threads | " + " | ".join(allocators) + " |")
        add("|---:|" + "---:|" * len(allocators))
        for t in threads_of[w]:
            add(f"| {t} | " + " | ".join(fmt_by_cpu(summary.get((w, a, t))) for a in allocators) + " |")
        add("")
        add("Peak RSS, MiB:")
        add("")
        add("| threads | " + " | ".join(allocators) + " |")
        add("|---:|" + "---:|" * len(allocators))
        for t in threads_of[w]:
            add(f"| {t} | " + " | ".join(fmt_rss(summary.get((w, a, t))) for a in allocators) + " |")
        add("")
    if os.path.exists(os.path.join(os.path.dirname(path), "results.png")):
        add("![throughput, work per CPU-second and peak RSS](results.png)")
        add("")
    with open(path, "w") as f:
        f.write("\n".join(lines))


def write_csv(path, summary):
    keys = sorted(summary, key=lambda k: (WORKLOADS.index(k[0]) if k[0] in WORKLOADS else 99,
                                          ORDER.index(k[1]) if k[1] in ORDER else 99, k[2]))
    with open(path, "w", newline="") as f:
        out = csv.writer(f)
        out.writerow(["workload", "allocator", "threads", "size", "metric", "runs", "failed",
                      "median", "min", "max", "peak_rss_kb_median", "cpu_share_median",
                      "by_cpu_median"])
        for k in keys:
            c = summary[k]
            out.writerow([c["workload"], c["allocator"], c["threads"], c["size"], c["metric"],
                          c["runs"], c["failed"], c["median"], c["min"], c["max"], c["rss_kb"],
                          None if c["cpu_share"] is None else round(c["cpu_share"], 3),
                          None if c["by_cpu"] is None else round(c["by_cpu"], 4)])


def write_png(path, summary, threads_of, allocators):
    try:
        import matplotlib
        matplotlib.use("Agg")
        import matplotlib.pyplot as plt
    except ImportError:
        print("report.py: matplotlib not available, no chart", file=sys.stderr)
        return False
    ws = [w for w in WORKLOADS if w in threads_of]
    fig, axes = plt.subplots(3, len(ws), figsize=(4.2 * len(ws), 11), squeeze=False)
    for i, w in enumerate(ws):
        top, middle, bottom = axes[0][i], axes[1][i], axes[2][i]
        metric = "mops"
        for a in allocators:
            pts = [(t, summary.get((w, a, t))) for t in threads_of[w]]
            pts = [(t, c) for t, c in pts if c and c["median"] is not None]
            if not pts:
                continue
            metric = pts[0][1]["metric"]
            style = dict(marker="o", linewidth=2.5 if a == "sh" else 1.2)
            top.plot([t for t, _ in pts], [c["median"] for _, c in pts], label=a, **style)
            cpu_pts = [(t, c) for t, c in pts if c["by_cpu"] is not None]
            middle.plot([t for t, _ in cpu_pts], [c["by_cpu"] for _, c in cpu_pts], label=a, **style)
            bottom.plot([t for t, _ in pts], [c["rss_kb"] / 1024 for _, c in pts], label=a, **style)
        top.set_title(w)
        top.set_ylabel("Mops/s (higher is better)" if metric == "mops" else "seconds (lower is better)")
        middle.set_ylabel("Mops per CPU-second" if metric == "mops" else "CPU seconds")
        bottom.set_ylabel("peak RSS, MiB")
        for ax in (top, middle, bottom):
            ax.set_xscale("log", base=2)
            ax.set_xticks(threads_of[w])
            ax.set_xticklabels([str(t) for t in threads_of[w]])
            ax.set_xlabel("threads")
            ax.grid(True, alpha=0.3)
            ax.set_ylim(bottom=0)
    axes[0][0].legend(fontsize="small")
    fig.tight_layout()
    fig.savefig(path, dpi=90)
    return True


def main():
    if len(sys.argv) != 2:
        sys.exit("usage: report.py DIR (the output directory of run.sh)")
    out = sys.argv[1]
    machine = read_machine(os.path.join(out, "machine.txt"))
    with open(os.path.join(out, "runs.csv")) as f:
        rows = list(csv.DictReader(f))
    summary = summarise(rows)
    allocators = ordered({k[1] for k in summary})
    threads_of = {}
    for w, _, t in summary:
        threads_of.setdefault(w, set()).add(t)
    threads_of = {w: sorted(ts) for w, ts in threads_of.items()}

    write_csv(os.path.join(out, "results.csv"), summary)
    png = os.path.join(out, "results.png")
    if not write_png(png, summary, threads_of, allocators) and os.path.exists(png):
        os.remove(png)
    write_md(os.path.join(out, "results.md"), machine, summary, threads_of, allocators)


if __name__ == "__main__":
    main()
