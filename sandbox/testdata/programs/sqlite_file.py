# A database file in the scratch directory, closed and opened again; backup to memory.
import os, sqlite3, tempfile
path = os.path.join(tempfile.mkdtemp(), "study.db")
db = sqlite3.connect(path)
db.execute("CREATE TABLE r (i INTEGER PRIMARY KEY, s TEXT)")
db.executemany("INSERT INTO r (s) VALUES (?)", [("row %d" % i,) for i in range(500)])
db.commit()
db.close()
db = sqlite3.connect(path)
print(db.execute("SELECT COUNT(*), MIN(s), MAX(i) FROM r").fetchone())
mem = sqlite3.connect(":memory:")
db.backup(mem)
print(mem.execute("SELECT s FROM r WHERE i % 100 = 0").fetchall())
print(os.path.getsize(path) > 0)
