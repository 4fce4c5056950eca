# Ambiguous and missing local times (fold), and conversions between zones.
from datetime import datetime, timezone
from zoneinfo import ZoneInfo
ny = ZoneInfo("America/New_York")
for fold in (0, 1):
    d = datetime(2024, 11, 3, 1, 30, tzinfo=ny, fold=fold)
    print(fold, d.tzname(), d.astimezone(timezone.utc).isoformat())
gap = datetime(2024, 3, 10, 2, 30, tzinfo=ny)
print(gap.tzname(), gap.astimezone(timezone.utc).isoformat())
utc = datetime(2024, 6, 1, 12, tzinfo=timezone.utc)
for key in ("Asia/Kolkata", "Australia/Adelaide", "Pacific/Chatham", "America/St_Johns", "Europe/London", "UTC"):
    print(key, utc.astimezone(ZoneInfo(key)).isoformat())
