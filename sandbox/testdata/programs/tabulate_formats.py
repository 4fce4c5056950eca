# tabulate's table formats.
from tabulate import tabulate
rows = [["ucsd", 12, 3.25], ["mit", 7, 4.5], ["nyu", 9, 2.75]]
for fmt in ("plain", "simple", "github", "grid", "pipe", "tsv"):
    print(tabulate(rows, headers=["site", "n", "mean"], tablefmt=fmt, floatfmt=".2f"))
    print("--")
