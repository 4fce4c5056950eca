# SQLite file names as URIs, as Debian's SQLite reads them (SQLITE_USE_URI): "file:" names with
# mode=rwc and mode=ro, with and without uri=True.
import os, sqlite3, tempfile
d = tempfile.mkdtemp()
db = sqlite3.connect("file:" + d + "/u.db?mode=rwc")
db.execute("CREATE TABLE t (x)")
db.execute("INSERT INTO t VALUES (1)")
db.commit()
db.close()
print(sorted(os.listdir(d)))
ro = sqlite3.connect("file:" + d + "/u.db?mode=ro")
try:
    ro.execute("INSERT INTO t VALUES (2)")
except sqlite3.OperationalError as e:
    print("read-only:", e)
print(sqlite3.connect("file:" + d + "/u.db?mode=ro", uri=True).execute("SELECT count(*) FROM t").fetchone())
