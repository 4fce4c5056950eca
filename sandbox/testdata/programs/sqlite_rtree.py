# SQLite's R*Tree: bounding boxes of electrode regions, queried by overlap and containment.
import sqlite3
db = sqlite3.connect(":memory:")
db.execute("CREATE VIRTUAL TABLE boxes USING rtree(id, minx, maxx, miny, maxy)")
db.execute("CREATE TABLE names (id INTEGER PRIMARY KEY, name TEXT)")
boxes = [(1, 0, 10, 0, 10, "frontal"), (2, 5, 15, 5, 15, "central"), (3, 20, 30, 0, 5, "temporal"), (4, -5, 0.5, -5, 0.5, "corner")]
db.executemany("INSERT INTO boxes VALUES (?, ?, ?, ?, ?)", [b[:5] for b in boxes])
db.executemany("INSERT INTO names VALUES (?, ?)", [(b[0], b[5]) for b in boxes])
print(db.execute("SELECT n.name FROM boxes b JOIN names n USING (id) WHERE b.maxx >= 6 AND b.minx <= 8 AND b.maxy >= 6 AND b.miny <= 8 ORDER BY n.name").fetchall())
print(db.execute("SELECT id FROM boxes WHERE minx >= 0 AND maxx <= 31 AND miny >= 0 AND maxy <= 16 ORDER BY id").fetchall())
print(db.execute("SELECT id, minx, maxy FROM boxes WHERE id = 4").fetchall())
print(db.execute("SELECT count(*) FROM boxes_node").fetchone())
