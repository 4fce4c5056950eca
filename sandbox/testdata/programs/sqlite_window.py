# Window functions: rank, running totals, lag.
import sqlite3
db = sqlite3.connect(":memory:")
db.execute("CREATE TABLE t (grp TEXT, day INTEGER, value INTEGER)")
db.executemany("INSERT INTO t VALUES (?, ?, ?)", [(g, d, (d * 7 + len(g) * 3) % 11) for g in ("a", "bb", "ccc") for d in range(1, 7)])
q = """SELECT grp, day, value,
  RANK() OVER (PARTITION BY grp ORDER BY value DESC) AS rnk,
  SUM(value) OVER (PARTITION BY grp ORDER BY day ROWS BETWEEN UNBOUNDED PRECEDING AND CURRENT ROW) AS running,
  LAG(value, 1, -1) OVER (PARTITION BY grp ORDER BY day) AS prev,
  ROUND(AVG(value) OVER (ORDER BY day ROWS BETWEEN 1 PRECEDING AND 1 FOLLOWING), 3) AS smooth
FROM t ORDER BY grp, day"""
for row in db.execute(q):
    print(row)
