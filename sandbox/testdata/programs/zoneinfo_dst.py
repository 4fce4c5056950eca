# DST transitions in two zones, and arithmetic across them.
from datetime import datetime, timedelta, timezone
from zoneinfo import ZoneInfo
ny, berlin = ZoneInfo("America/New_York"), ZoneInfo("Europe/Berlin")
for z in (ny, berlin):
    for month, day in ((3, 9), (3, 10), (3, 30), (3, 31), (11, 2), (11, 3), (10, 27)):
        d = datetime(2024, month, day, 12, tzinfo=z)
        print(z.key, d.isoformat(), d.tzname(), d.utcoffset())
start = datetime(2024, 3, 9, 12, tzinfo=ny)
print((start + timedelta(days=1)).isoformat(), (start.astimezone(timezone.utc) + timedelta(days=1)).astimezone(ny).isoformat())
