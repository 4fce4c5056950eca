# csv and statistics: the aggregates a data question needs.
import csv, io, statistics
from collections import defaultdict
text = "subject,group,rt_ms\n" + "\n".join(f"s{i:02d},{'ab'[i % 2]},{300 + (i * 37) % 97}" for i in range(40))
rows = list(csv.DictReader(io.StringIO(text)))
by = defaultdict(list)
for r in rows:
    by[r["group"]].append(int(r["rt_ms"]))
for g, xs in sorted(by.items()):
    print(g, len(xs), statistics.mean(xs), statistics.median(xs), round(statistics.stdev(xs), 6), statistics.quantiles(xs, n=4))
print(round(statistics.correlation([int(r["rt_ms"]) for r in rows], list(range(40))), 6))
out = io.StringIO()
w = csv.writer(out, lineterminator="\n")
w.writerow(["group", "n", "mean"])
for g, xs in sorted(by.items()):
    w.writerow([g, len(xs), f"{statistics.fmean(xs):.3f}"])
print(out.getvalue(), end="")
