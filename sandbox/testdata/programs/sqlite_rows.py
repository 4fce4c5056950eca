# Row factories, parameters by name, transactions and rollbacks, type affinity.
import sqlite3
db = sqlite3.connect(":memory:")
db.row_factory = sqlite3.Row
db.execute("CREATE TABLE m (k TEXT UNIQUE, v NUMERIC, b BLOB)")
with db:
    db.execute("INSERT INTO m VALUES (:k, :v, :b)", {"k": "x", "v": "12", "b": b"\x00\x01"})
    db.execute("INSERT INTO m VALUES (:k, :v, :b)", {"k": "y", "v": 3.5, "b": None})
try:
    with db:
        db.execute("INSERT INTO m VALUES ('z', 1, NULL)")
        db.execute("INSERT INTO m VALUES ('x', 2, NULL)")
except sqlite3.IntegrityError as e:
    print("IntegrityError:", e)
for r in db.execute("SELECT k, v, typeof(v) AS t, b FROM m ORDER BY k"):
    print(dict(r))
print(db.execute("SELECT COUNT(*) FROM m").fetchone()[0], db.total_changes)
