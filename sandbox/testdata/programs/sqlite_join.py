# A join and a grouped aggregate in an in-memory database.
import sqlite3
db = sqlite3.connect(":memory:")
db.executescript("""
CREATE TABLE subjects (id TEXT PRIMARY KEY, site TEXT, age INTEGER);
CREATE TABLE sessions (subject TEXT REFERENCES subjects(id), run INTEGER, minutes REAL);
""")
db.executemany("INSERT INTO subjects VALUES (?, ?, ?)", [("s01", "ucsd", 31), ("s02", "ucsd", 45), ("s03", "mit", 28), ("s04", "mit", 52)])
db.executemany("INSERT INTO sessions VALUES (?, ?, ?)", [("s01", 1, 12.5), ("s01", 2, 14.0), ("s02", 1, 9.25), ("s03", 1, 20.0), ("s03", 2, 18.5), ("s03", 3, 19.0), ("s04", 1, 7.75)])
for row in db.execute("""
    SELECT s.site, COUNT(DISTINCT s.id), COUNT(*), ROUND(SUM(x.minutes), 2), ROUND(AVG(s.age), 2)
    FROM subjects s JOIN sessions x ON x.subject = s.id
    GROUP BY s.site ORDER BY s.site"""):
    print(row)
print(db.execute("SELECT s.id FROM subjects s LEFT JOIN sessions x ON x.subject = s.id AND x.run = 2 WHERE x.run IS NULL ORDER BY 1").fetchall())
