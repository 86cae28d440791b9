#!/usr/bin/env python3
"""Chart of a soak's memory over time, from the `rss,` lines of a stress program's output.

The stress programs (CompactingHeapStress, CacheStress, RandomizedStress) print, with
--rss-every-seconds N, lines `rss,elapsed_s,rss_kib,committed_bytes,live_bytes`. This reads one
such output and writes an SVG chart (no dependencies: the file is written by hand) of the
process's resident memory, the heap's committed bytes and its live bytes in MiB over minutes.
Usage: render-soak.py LOG OUT.svg [--title TEXT]
"""
import argparse
import sys

SERIES = [("RSS (process)", 1, 1024.0, "#d62728"),        # column, divisor to MiB, colour
          ("committed (heap)", 2, 1048576.0, "#1f77b4"),
          ("live (heap)", 3, 1048576.0, "#2ca02c")]
W, H = 900, 420
LEFT, RIGHT, TOP, BOTTOM = 70, 20, 40, 50


def read(path):
    rows = []
    with open(path) as f:
        for line in f:
            parts = line.strip().split(",")
            if len(parts) == 5 and parts[0] == "rss" and parts[1].isdigit():
                rows.append([int(p) for p in parts[1:]])
    return rows


def nice_step(span, ticks=6):
    """A round step (1, 2 or 5 times a power of ten) giving about `ticks` gridlines."""
    raw = max(span / ticks, 1e-9)
    power = 10 ** len(str(int(raw))) / 10 if raw >= 1 else 1
    for m in (1, 2, 5, 10):
        if raw <= m * power:
            return m * power
    return 10 * power


def svg(rows, title):
    minutes = [r[0] / 60.0 for r in rows]
    values = [[r[col] / div for r in rows] for _, col, div, _ in SERIES]
    x_max = max(minutes[-1], 1e-3)
    y_max = max(max(v) for v in values) * 1.05 or 1.0
    pw, ph = W - LEFT - RIGHT, H - TOP - BOTTOM

    def x(m):
        return LEFT + pw * m / x_max

    def y(v):
        return TOP + ph * (1 - v / y_max)

    out = ['<svg xmlns="http://www.w3.org/2000/svg" width="%d" height="%d" font-family="sans-serif" font-size="12">' % (W, H),
           '<rect width="100%" height="100%" fill="white"/>',
           '<text x="%d" y="22" font-size="14">%s</text>' % (LEFT, title)]
    step = nice_step(y_max)
    v = 0.0
    while v <= y_max:
        out.append('<line x1="%d" x2="%d" y1="%.1f" y2="%.1f" stroke="#ddd"/>' % (LEFT, W - RIGHT, y(v), y(v)))
        out.append('<text x="%d" y="%.1f" text-anchor="end">%g</text>' % (LEFT - 6, y(v) + 4, v))
        v += step
    step = nice_step(x_max)
    m = 0.0
    while m <= x_max:
        out.append('<line x1="%.1f" x2="%.1f" y1="%d" y2="%d" stroke="#ddd"/>' % (x(m), x(m), TOP, H - BOTTOM))
        out.append('<text x="%.1f" y="%d" text-anchor="middle">%g</text>' % (x(m), H - BOTTOM + 16, m))
        m += step
    out.append('<text x="%d" y="%d" text-anchor="middle">minutes</text>' % (LEFT + pw / 2, H - 12))
    out.append('<text x="16" y="%d" transform="rotate(-90 16 %d)" text-anchor="middle">MiB</text>' % (TOP + ph / 2, TOP + ph / 2))
    for (name, _, _, colour), vals, k in zip(SERIES, values, range(len(SERIES))):
        points = " ".join("%.1f,%.1f" % (x(a), y(b)) for a, b in zip(minutes, vals))
        out.append('<polyline fill="none" stroke="%s" stroke-width="1.5" points="%s"/>' % (colour, points))
        lx = LEFT + 10 + 170 * k
        out.append('<line x1="%d" x2="%d" y1="%d" y2="%d" stroke="%s" stroke-width="3"/>' % (lx, lx + 20, TOP + 10, TOP + 10, colour))
        out.append('<text x="%d" y="%d">%s</text>' % (lx + 26, TOP + 14, name))
    out.append("</svg>")
    return "\n".join(out) + "\n"


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("log")
    ap.add_argument("out")
    ap.add_argument("--title", default="memory over the soak")
    a = ap.parse_args()
    rows = read(a.log)
    if len(rows) < 2:
        sys.exit("%s: fewer than two rss, lines (run with --rss-every-seconds N)" % a.log)
    with open(a.out, "w") as f:
        f.write(svg(rows, a.title))
    peak = max(r[1] for r in rows)
    print("%s: %d samples over %.1f min, peak RSS %d MiB, last live %d B" % (a.out, len(rows), rows[-1][0] / 60.0,
                                                                              peak // 1024, rows[-1][3]))


if __name__ == "__main__":
    main()
