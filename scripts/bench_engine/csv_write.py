# Writing 200,000 CSV rows with the csv module (into memory: the interpreter is measured, not
# the file system of each runtime).
import csv
import io
import time
import zlib

N = 200_000
t0 = time.perf_counter()
buf = io.StringIO()
w = csv.writer(buf)
w.writerow(("id", "name", "group", "value", "day"))
for i in range(N):
    w.writerow((i, f"name{i % 1000}", f"g{i % 17}", (i * 37 % 1000) / 10, f"2024-{i % 12 + 1:02d}-{i % 28 + 1:02d}"))
text = buf.getvalue()
elapsed = time.perf_counter() - t0
print("CHECK", len(text), zlib.crc32(text.encode()))
print("ELAPSED", f"{elapsed:.6f}")
