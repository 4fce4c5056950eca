# SQLite's FTS3 and FTS4: MATCH with boolean operators and parentheses, offsets, matchinfo and
# snippet.
import sqlite3
db = sqlite3.connect(":memory:")
db.execute("CREATE VIRTUAL TABLE notes USING fts4(subject, text)")
db.execute("CREATE VIRTUAL TABLE old USING fts3(text)")
notes = [
    ("rest", "eyes closed resting state recording"),
    ("task", "oddball task with deviant and standard tones"),
    ("rest", "eyes open resting state with fixation"),
]
db.executemany("INSERT INTO notes VALUES (?, ?)", notes)
db.executemany("INSERT INTO old VALUES (?)", [(t,) for _, t in notes])
print(db.execute("SELECT rowid FROM notes WHERE notes MATCH 'resting AND (closed OR fixation)' ORDER BY rowid").fetchall())
print(db.execute("SELECT rowid FROM notes WHERE notes MATCH 'subject:task'").fetchall())
print(db.execute("SELECT offsets(notes) FROM notes WHERE notes MATCH 'eyes' ORDER BY rowid").fetchall())
print(db.execute("SELECT length(matchinfo(notes)) FROM notes WHERE notes MATCH 'state'").fetchall())
print(db.execute("SELECT snippet(notes, '[', ']', '...') FROM notes WHERE notes MATCH 'deviant'").fetchall())
print(db.execute("SELECT rowid FROM old WHERE old MATCH 'eyes NOT closed'").fetchall())
