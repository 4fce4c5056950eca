# openpyxl: a workbook of 10,000 rows by 6 columns written to a BytesIO. The check reads the
# sheet's XML back (untimed) and counts its rows and cells.
import io
import time
import zipfile

try:
    import openpyxl
except ImportError:
    openpyxl = None

if openpyxl is None:
    print("SKIP no openpyxl")
else:
    t0 = time.perf_counter()
    wb = openpyxl.Workbook()
    ws = wb.active
    ws.title = "data"
    ws.append(["id", "name", "group", "value", "day", "flag"])
    for i in range(10_000):
        ws.append([i, f"name{i % 1000}", f"g{i % 17}", (i * 37 % 1000) / 10, i % 365, i % 2 == 0])
    out = io.BytesIO()
    wb.save(out)
    elapsed = time.perf_counter() - t0
    with zipfile.ZipFile(io.BytesIO(out.getvalue())) as z:
        sheet = z.read("xl/worksheets/sheet1.xml")
    print("CHECK", sheet.count(b"<row "), sheet.count(b"<c "))
    print("ELAPSED", f"{elapsed:.6f}")
