# Write a workbook with openpyxl and read it back: values, types, formulas, number formats.
import io
from datetime import date
from openpyxl import Workbook, load_workbook
wb = Workbook()
ws = wb.active
ws.title = "measures"
ws.append(["subject", "date", "score", "passed"])
for i in range(1, 6):
    ws.append([f"s{i:02d}", date(2024, 1, i), i * 1.5, i % 2 == 1])
ws["F1"] = "total"
ws["F2"] = "=SUM(C2:C6)"
ws["C2"].number_format = "0.00"
buf = io.BytesIO()
wb.save(buf)
wb2 = load_workbook(io.BytesIO(buf.getvalue()))
ws2 = wb2["measures"]
for row in ws2.iter_rows(values_only=True):
    print(row)
print(ws2["F2"].value, ws2["C2"].number_format, ws2.max_row, ws2.max_column, wb2.sheetnames)
