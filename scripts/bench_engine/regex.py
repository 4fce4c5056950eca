# Regular-expression scans (findall, finditer, sub) over about 4 MB of text made first, untimed,
# from a fixed linear congruential sequence (the same text in every runtime).
import re
import time

words = ["the", "data", "Subject", "EEG", "session", "run", "channel", "Marker", "epoch", "signal"]
parts = []
x = 12345
for i in range(400_000):
    x = (x * 1103515245 + 12345) % 2**31
    k = x % 100
    if k < 6:
        parts.append(f"user{x % 997}@lab{x % 31}.org")
    elif k < 12:
        parts.append(f"20{x % 30:02d}-{x % 12 + 1:02d}-{x % 28 + 1:02d}")
    elif k < 20:
        parts.append(str(x % 100000))
    else:
        parts.append(words[x % len(words)])
    if i % 17 == 16:
        parts.append(".\n")
text = " ".join(parts)

t0 = time.perf_counter()
emails = re.findall(r"\b[\w.]+@[\w]+\.(?:org|com)\b", text)
dates = [m.group(1) for m in re.finditer(r"\b(\d{4})-(\d{2})-(\d{2})\b", text)]
capitals = len(re.findall(r"\b[A-Z][a-z]+\b", text))
numbers = sum(int(n) for n in re.findall(r"\b\d{3,5}\b", text))
lines = len(re.findall(r"^\s*\w.*$", text, re.MULTILINE))
masked = re.sub(r"\d", "#", text)
elapsed = time.perf_counter() - t0
print("CHECK", len(text), len(emails), len(dates), capitals, numbers, lines, masked.count("#"))
print("ELAPSED", f"{elapsed:.6f}")
