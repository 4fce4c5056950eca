# dateutil's parser on the kinds of strings data files hold.
from dateutil import parser, tz
for s in ["2024-03-10T02:30:00Z", "March 5, 2021 4:05pm", "05/06/2021", "5 Jun 2021 10:00 +0200", "20210605T101112", "Tue, 01 Dec 2026 09:43:37 GMT", "2021-W05-3"]:
    try:
        print(repr(s), parser.parse(s).isoformat())
    except (ValueError, OverflowError) as e:
        print(repr(s), "error", type(e).__name__)
print(parser.parse("05/06/2021", dayfirst=True).date())
print(parser.parse("10:00 EST", tzinfos={"EST": tz.gettz("America/New_York")}).utcoffset())
