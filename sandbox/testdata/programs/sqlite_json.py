# SQLite's JSON functions over a table of JSON documents.
import json, sqlite3
db = sqlite3.connect(":memory:")
db.execute("CREATE TABLE docs (body TEXT)")
docs = [{"id": i, "tags": ["eeg", "rest"] if i % 2 else ["mri"], "n": i * i} for i in range(6)]
db.executemany("INSERT INTO docs VALUES (?)", [(json.dumps(d),) for d in docs])
print(db.execute("SELECT json_extract(body, '$.id'), json_array_length(body, '$.tags') FROM docs ORDER BY 1").fetchall())
print(db.execute("SELECT value, COUNT(*) FROM docs, json_each(docs.body, '$.tags') GROUP BY value ORDER BY value").fetchall())
print(db.execute("SELECT json_group_array(json_extract(body, '$.n')) FROM docs").fetchone()[0])
