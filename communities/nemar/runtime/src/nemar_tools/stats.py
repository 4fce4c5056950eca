"""Summary statistics without numpy."""

import math
from dataclasses import dataclass
from numbers import Real


@dataclass(frozen=True)
class Summary:
    """What describe() found. Statistics are over the finite values only."""

    count: int  # finite values
    nan: int  # NaN values, skipped
    inf: int  # infinite values, skipped
    mean: float
    std: float  # population standard deviation
    min: float
    median: float
    max: float

    def __str__(self):
        if self.count == 0:
            text = "no finite values"
        else:
            text = (
                f"n={self.count} mean={self.mean:.6g} std={self.std:.6g} "
                f"min={self.min:.6g} median={self.median:.6g} max={self.max:.6g}"
            )
        skipped = []
        if self.nan:
            skipped.append(f"{self.nan} NaN")
        if self.inf:
            skipped.append(f"{self.inf} infinite")
        if skipped:
            text += " (skipped " + ", ".join(skipped) + ")"
        return text


def _flatten(values):
    # numpy arrays and their scalars work through tolist()/item() without importing numpy.
    if hasattr(values, "tolist"):
        values = values.tolist()
    if isinstance(values, (str, bytes)):
        raise TypeError("describe() needs numbers, not text")
    if isinstance(values, Real):
        yield float(values)
        return
    for v in values:
        if isinstance(v, Real):
            yield float(v)
        else:
            yield from _flatten(v)


def describe(values):
    """Summarise numbers: count, mean, standard deviation, min, median and max.

    values may be a number, any iterable of numbers, nested sequences, or a numpy array of
    any shape; everything is flattened. NaN and infinite values are counted and skipped.

    >>> print(describe([[1, 2], [3, float("nan")]]))
    n=3 mean=2 std=0.816497 min=1 median=2 max=3 (skipped 1 NaN)
    """
    finite = []
    nan = inf = 0
    for x in _flatten(values):
        if math.isnan(x):
            nan += 1
        elif math.isinf(x):
            inf += 1
        else:
            finite.append(x)
    n = len(finite)
    if n == 0:
        m = float("nan")
        return Summary(0, nan, inf, m, m, m, m, m)
    finite.sort()
    mean = math.fsum(finite) / n
    var = math.fsum((x - mean) ** 2 for x in finite) / n
    mid = n // 2
    median = finite[mid] if n % 2 else (finite[mid - 1] + finite[mid]) / 2
    return Summary(n, nan, inf, mean, math.sqrt(var), finite[0], median, finite[-1])
