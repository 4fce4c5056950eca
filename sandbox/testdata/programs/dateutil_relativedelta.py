# relativedelta arithmetic and rrule recurrences.
from datetime import date, datetime
from dateutil.relativedelta import relativedelta, MO, FR
from dateutil.rrule import rrule, MONTHLY, WEEKLY
d = date(2024, 1, 31)
print([str(d + relativedelta(months=i)) for i in range(1, 5)])
print(relativedelta(date(2026, 12, 1), date(1990, 2, 28)))
print(date(2024, 5, 15) + relativedelta(day=31, weekday=FR(-1)))
print([x.date().isoformat() for x in rrule(MONTHLY, count=6, bymonthday=-1, dtstart=datetime(2024, 1, 1))])
print([x.date().isoformat() for x in rrule(WEEKLY, count=4, byweekday=MO, dtstart=datetime(2024, 2, 28))])
