# A pipeline: CSV in, sqlite3 join with time zones, xlsx out, read back.
import csv, io, sqlite3
from datetime import datetime
from zoneinfo import ZoneInfo
from openpyxl import Workbook, load_workbook
events = "site,utc\nucsd,2024-03-10T09:30:00\nmit,2024-03-10T06:45:00\nucsd,2024-11-03T08:15:00\n"
sites = "site,zone\nucsd,America/Los_Angeles\nmit,America/New_York\n"
db = sqlite3.connect(":memory:")
db.execute("CREATE TABLE e (site TEXT, utc TEXT)")
db.execute("CREATE TABLE s (site TEXT, zone TEXT)")
db.executemany("INSERT INTO e VALUES (:site, :utc)", csv.DictReader(io.StringIO(events)))
db.executemany("INSERT INTO s VALUES (:site, :zone)", csv.DictReader(io.StringIO(sites)))
wb = Workbook()
ws = wb.active
ws.append(["site", "local"])
for site, utc, zone in db.execute("SELECT e.site, e.utc, s.zone FROM e JOIN s USING (site) ORDER BY e.utc"):
    local = datetime.fromisoformat(utc + "+00:00").astimezone(ZoneInfo(zone))
    ws.append([site, local.strftime("%Y-%m-%d %H:%M %Z")])
buf = io.BytesIO()
wb.save(buf)
print(list(load_workbook(io.BytesIO(buf.getvalue())).active.iter_rows(values_only=True)))
