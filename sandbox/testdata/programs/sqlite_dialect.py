# SQL that Debian's SQLite accepts: double-quoted strings where no column has the name (as in
# group_concat(x, ",")), soundex, DELETE and UPDATE with LIMIT, LIKE that does not match
# blobs, many bound parameters, secure_delete on, and the math functions.
import sqlite3
db = sqlite3.connect(":memory:")
db.execute("CREATE TABLE t (x INTEGER, name TEXT, b BLOB)")
db.executemany("INSERT INTO t VALUES (?, ?, ?)", [(i, f"sub-{i:02d}", b"sub-blob") for i in range(10)])
print(db.execute('SELECT group_concat(x, ",") FROM t').fetchone())
print(db.execute('SELECT "no such column" FROM t LIMIT 1').fetchone())
print(db.execute("SELECT soundex('Robert'), soundex('Rupert'), soundex('Tymczak')").fetchone())
db.execute("DELETE FROM t WHERE x > 4 ORDER BY x DESC LIMIT 2")
db.execute("UPDATE t SET name = 'first' ORDER BY x LIMIT 1")
print(db.execute("SELECT x, name FROM t ORDER BY x").fetchall())
print(db.execute("SELECT count(*) FROM t WHERE name LIKE 'sub%'").fetchone(), db.execute("SELECT count(*) FROM t WHERE b LIKE 'sub%'").fetchone())
params = list(range(40000))
print(db.execute("SELECT " + "+".join("?" * 1) + " + " + str(len(params)), params[:1]).fetchone())
print(db.execute("SELECT count(*) FROM t WHERE x IN (" + ",".join("?" * len(params)) + ")", params).fetchone())
print(db.execute("PRAGMA secure_delete").fetchone())
print(db.execute("SELECT round(sqrt(2), 6), round(log10(1000), 6), pow(2, 10), floor(-1.5), round(atan2(1, 1) * 4, 6), mod(7, 3)").fetchone())
