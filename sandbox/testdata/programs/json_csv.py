# JSON and CSV conversions with sorted, stable output.
import csv, io, json
records = [{"id": i, "name": f"item {i}", "tags": ";".join(sorted({"x", "y"} if i % 2 else {"z"}))} for i in range(5)]
buf = io.StringIO()
w = csv.DictWriter(buf, fieldnames=["id", "name", "tags"], lineterminator="\n")
w.writeheader()
w.writerows(records)
back = list(csv.DictReader(io.StringIO(buf.getvalue())))
print(json.dumps(back, sort_keys=True, indent=1))
print(json.loads(json.dumps({"a": [1.5, None, True]}, separators=(",", ":"))))
