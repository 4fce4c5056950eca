# A workbook written with xlsxwriter, read back with openpyxl.
import io
import xlsxwriter
from openpyxl import load_workbook
buf = io.BytesIO()
wb = xlsxwriter.Workbook(buf, {"in_memory": True})
ws = wb.add_worksheet("results")
bold = wb.add_format({"bold": True})
ws.write_row(0, 0, ["site", "n", "mean"], bold)
rows = [("ucsd", 12, 3.25), ("mit", 7, 4.5), ("nyu", 9, 2.75)]
for i, r in enumerate(rows, start=1):
    ws.write_row(i, 0, r)
ws.write_formula(4, 1, "=SUM(B2:B4)", None, 28)
wb.close()
w = load_workbook(io.BytesIO(buf.getvalue()))
s = w["results"]
print([tuple(c.value for c in row) for row in s.iter_rows()])
print(s["A1"].font.b, load_workbook(io.BytesIO(buf.getvalue()), data_only=True)["results"]["B5"].value)
