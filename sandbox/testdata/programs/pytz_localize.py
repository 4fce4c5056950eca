# pytz localize, normalize and its zone database.
from datetime import datetime, timedelta
import pytz
tz = pytz.timezone("Europe/Amsterdam")
d = tz.localize(datetime(2024, 3, 31, 1, 30))
print(d.isoformat(), d.tzname())
later = tz.normalize(d + timedelta(hours=1))
print(later.isoformat(), later.tzname())
try:
    tz.localize(datetime(2024, 10, 27, 2, 30), is_dst=None)
except pytz.exceptions.AmbiguousTimeError as e:
    print("ambiguous", e)
print(pytz.utc.localize(datetime(2024, 1, 1)).astimezone(pytz.timezone("Asia/Tokyo")).isoformat())
print("Europe/Amsterdam" in pytz.all_timezones_set, len(pytz.country_timezones["us"]) > 10)
