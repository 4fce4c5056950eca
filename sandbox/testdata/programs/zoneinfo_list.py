# The zone database is there and complete enough to enumerate.
import zoneinfo
zones = zoneinfo.available_timezones()
print(len(zones) > 400, sorted(z for z in zones if z.startswith("Europe/B")))
print(zoneinfo.ZoneInfo("Europe/Kyiv").key)
try:
    zoneinfo.ZoneInfo("Mars/Olympus_Mons")
except zoneinfo.ZoneInfoNotFoundError as e:
    print("not found:", e)
