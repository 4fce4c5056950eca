# Several sheets, merged cells, column widths, a formula-free read with data_only.
import io
from openpyxl import Workbook, load_workbook
from openpyxl.utils import get_column_letter
wb = Workbook()
a = wb.active
a.title = "a"
b = wb.create_sheet("b")
for r in range(1, 4):
    for c in range(1, 5):
        a.cell(row=r, column=c, value=r * c)
a.merge_cells("A5:D5")
a["A5"] = "merged"
a.column_dimensions["B"].width = 21.5
b["A1"] = "only"
buf = io.BytesIO()
wb.save(buf)
w = load_workbook(io.BytesIO(buf.getvalue()), data_only=True)
print(w.sheetnames, [str(m) for m in w["a"].merged_cells.ranges], w["a"].column_dimensions["B"].width)
print([[c.value for c in row] for row in w["a"].iter_rows(min_row=1, max_row=3)])
print(get_column_letter(28), w["b"]["A1"].value, w["b"].dimensions)
