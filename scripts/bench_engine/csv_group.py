# csv.DictReader over 200,000 rows (made in memory first, untimed) and the mean of a column per
# group.
import csv
import io
import time

N = 200_000
buf = io.StringIO()
w = csv.writer(buf)
w.writerow(("id", "name", "group", "value", "day"))
for i in range(N):
    w.writerow((i, f"name{i % 1000}", f"g{i % 17}", (i * 37 % 1000) / 10, f"2024-{i % 12 + 1:02d}-{i % 28 + 1:02d}"))
text = buf.getvalue()

t0 = time.perf_counter()
sums = {}
counts = {}
for row in csv.DictReader(io.StringIO(text)):
    g = row["group"]
    sums[g] = sums.get(g, 0.0) + float(row["value"])
    counts[g] = counts.get(g, 0) + 1
means = {g: sums[g] / counts[g] for g in sums}
elapsed = time.perf_counter() - t0
print("CHECK", sum(counts.values()), len(means), f"{sum(means.values()):.6f}")
print("ELAPSED", f"{elapsed:.6f}")
