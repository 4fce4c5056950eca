# A recursive CTE (bounded), a subquery and a view.
import sqlite3
db = sqlite3.connect(":memory:")
print(db.execute("WITH RECURSIVE fib(n, a, b) AS (SELECT 1, 0, 1 UNION ALL SELECT n + 1, b, a + b FROM fib WHERE n < 30) SELECT group_concat(a, ',') FROM fib").fetchone()[0])
db.execute("CREATE TABLE edges (src INTEGER, dst INTEGER)")
db.executemany("INSERT INTO edges VALUES (?, ?)", [(1, 2), (2, 3), (3, 4), (2, 5), (5, 6), (7, 8)])
print(db.execute("""WITH RECURSIVE reach(node) AS (SELECT 1 UNION SELECT dst FROM edges JOIN reach ON src = node)
SELECT group_concat(node, ' ') FROM (SELECT node FROM reach ORDER BY node)""").fetchone()[0])
db.execute("CREATE VIEW deg AS SELECT src AS node, COUNT(*) AS out FROM edges GROUP BY src")
print(db.execute("SELECT node, out FROM deg WHERE out = (SELECT MAX(out) FROM deg)").fetchall())
