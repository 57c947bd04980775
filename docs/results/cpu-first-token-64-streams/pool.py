"""Pools the A/B commands: per build and workload, the median-of-pairs of each command, all pairs
together, and the run's edges (first token after the start, end after the last token)."""
import glob, re, statistics, sys

for out in sys.argv[1:]:
    for b in "AB":
        for w in ("short", "long"):
            meds, pairs, firsts, ends = [], [], [], []
            for f in sorted(glob.glob(f"{out}/{b}-{w}-*/benchmark.md")):
                t = open(f).read()
                m = re.search(r"d/a throughput, per repeat.*?median \*\*([0-9.]+)\*\*.*?in run order: ([0-9. ]+)", t)
                e = re.search(r"last token: \(a\) ([0-9.]+) / [0-9.]+, \(d\) ([0-9.]+) / ([0-9.]+)", t)
                if not m or not e:
                    continue
                meds.append(float(m.group(1)))
                pairs += [float(x) for x in m.group(2).split()]
                firsts.append(float(e.group(2)) - float(e.group(1)))
                ends.append(float(e.group(3)))
            if meds:
                print(f"{out} build {b} {w}: {len(meds)} commands, medians {' '.join(f'{x:.3f}' for x in meds)}; "
                      f"mean {statistics.mean(meds):.3f}, {sum(x >= 0.98 for x in meds)} at >= 0.98; "
                      f"all {len(pairs)} pairs: median {statistics.median(pairs):.3f}; "
                      f"(d)'s first token later than (a)'s by {statistics.mean(firsts):.1f} ms, "
                      f"its end {statistics.mean(ends):.1f} ms after the last token")
