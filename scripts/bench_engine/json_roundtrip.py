# A json dumps + loads round trip of a document of about 10 MB (built first, untimed).
import json
import time
import zlib

doc = {
    "version": 1,
    "items": [
        {
            "id": i,
            "name": f"item {i}",
            "active": i % 3 == 0,
            "score": (i * 7919 % 10007) / 100,
            "tags": [f"t{i % 13}", f"t{i % 7}", "común"],
            "meta": {"parent": i // 10, "path": f"/data/{i % 100}/{i}.bin", "note": None},
        }
        for i in range(60_000)
    ],
}

t0 = time.perf_counter()
text = json.dumps(doc)
back = json.loads(text)
elapsed = time.perf_counter() - t0
print("CHECK", len(text), zlib.crc32(text.encode()), back == doc)
print("ELAPSED", f"{elapsed:.6f}")
