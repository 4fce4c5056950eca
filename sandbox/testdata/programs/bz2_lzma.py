# bz2 and lzma round trips, and their file formats through the scratch directory.
import bz2, hashlib, lzma, os, tempfile
data = b"".join(b"line %d of a log file\n" % i for i in range(5000))
for mod in (bz2, lzma):
    c = mod.compress(data)
    print(mod.__name__, len(c) < len(data) // 5, mod.decompress(c) == data)
d = tempfile.mkdtemp()
with lzma.open(os.path.join(d, "x.xz"), "wt") as f:
    f.write("hello\n" * 3)
with lzma.open(os.path.join(d, "x.xz"), "rt") as f:
    print(f.read().count("hello"))
with bz2.open(os.path.join(d, "x.bz2"), "wb") as f:
    f.write(data)
print(hashlib.sha256(bz2.open(os.path.join(d, "x.bz2")).read()).hexdigest()[:16])
