# The CPU loop: pure bytecode, no allocation worth speaking of.
import time

t0 = time.perf_counter()
total = sum(i * i for i in range(10**7))
elapsed = time.perf_counter() - t0
print("CHECK", total)
print("ELAPSED", f"{elapsed:.6f}")
