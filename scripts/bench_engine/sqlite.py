# sqlite3 in memory: 200,000 rows inserted with executemany, then a GROUP BY and a window query
# whose rows are all fetched. Integer values, so every SQLite version sums them alike.
import time

try:
    import sqlite3
except ImportError:
    sqlite3 = None

if sqlite3 is None:
    print("SKIP no sqlite3")
else:
    N = 200_000
    rows = [(i, f"g{i % 17}", i * 37 % 1000, i % 365) for i in range(N)]
    db = sqlite3.connect(":memory:")
    db.execute("CREATE TABLE t (id INTEGER PRIMARY KEY, grp TEXT, value INTEGER, day INTEGER)")

    t0 = time.perf_counter()
    with db:
        db.executemany("INSERT INTO t VALUES (?, ?, ?, ?)", rows)
    groups = db.execute(
        "SELECT grp, count(*), sum(value), max(value), min(day) FROM t GROUP BY grp ORDER BY grp"
    ).fetchall()
    window = db.execute(
        "SELECT id, sum(value) OVER (PARTITION BY grp ORDER BY id ROWS BETWEEN 9 PRECEDING AND CURRENT ROW),"
        " rank() OVER (PARTITION BY day ORDER BY value DESC) FROM t"
    ).fetchall()
    elapsed = time.perf_counter() - t0
    print("CHECK", len(groups), sum(g[2] for g in groups), len(window), sum(r[1] for r in window), sum(r[2] for r in window))
    print("ELAPSED", f"{elapsed:.6f}")
