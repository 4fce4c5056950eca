# Exact arithmetic for aggregates: decimal and fractions.
from decimal import Decimal, ROUND_HALF_EVEN, getcontext
from fractions import Fraction
getcontext().prec = 30
amounts = [Decimal("19.99"), Decimal("0.01"), Decimal("1234.565"), Decimal("-3.3")]
total = sum(amounts)
print(total, total.quantize(Decimal("0.01"), rounding=ROUND_HALF_EVEN), (total / 7).quantize(Decimal("0.0001")))
print(sum(Fraction(1, n) for n in range(1, 11)), float(Fraction(355, 113)))
