# SQLite's FTS5: a full-text index over short documents, ranked with bm25, with highlight and
# snippet, a prefix query and a column filter.
import sqlite3
db = sqlite3.connect(":memory:")
db.execute("CREATE VIRTUAL TABLE docs USING fts5(title, body, tokenize = 'porter unicode61')")
rows = [
    ("Event tags", "HED annotates events in EEG recordings with hierarchical tags."),
    ("BIDS layout", "BIDS organises MRI and EEG datasets in folders with sidecar JSON files."),
    ("Validation", "The validator checks that every tag is in the schema and every event is annotated."),
    ("Schemas", "A HED schema lists tags; libraries extend the standard schema."),
]
db.executemany("INSERT INTO docs VALUES (?, ?)", rows)
print(db.execute("SELECT title, round(bm25(docs), 4) FROM docs WHERE docs MATCH 'schema OR validator OR folders' ORDER BY bm25(docs), rowid").fetchall())
print(db.execute("SELECT highlight(docs, 1, '[', ']') FROM docs WHERE docs MATCH 'schema' ORDER BY rowid").fetchall())
print(db.execute("SELECT snippet(docs, 1, '<', '>', '...', 4) FROM docs WHERE docs MATCH 'annot*' ORDER BY rowid").fetchall())
print(db.execute("SELECT rowid FROM docs WHERE docs MATCH 'title:schemas OR title:layout' ORDER BY rowid").fetchall())
print(db.execute("SELECT count(*) FROM docs WHERE docs MATCH '\"every event\"'").fetchone())
db.execute("CREATE VIRTUAL TABLE v USING fts5vocab(docs, 'row')")
print(db.execute("SELECT term, doc FROM v WHERE term LIKE 'e%' ORDER BY term").fetchall())
