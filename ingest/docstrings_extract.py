# The docstring extractor (knowledge.md §6.7), run by the server's own Python engine in the
# sandbox. The source files come from a repository, so they are untrusted: each is parsed
# with ast.parse, which builds a syntax tree and never compiles or runs anything, and the
# tree is walked without recursion.
#
# Input, read-only under /data: params.json {"files": [names], "budget": chars,
# "max_doc": chars, "max_symbols": n} and the files it names. Output on stdout, ASCII only
# (so characters and bytes are the same count): one JSON object per line per file, in the
# order given, either {"file": name, "symbols": [[name, type, line, docstring], ...]} or
# {"file": name, "error": why}, then {"end": count}. A file whose line would take the output
# past the budget is not written (nor any after it); the caller sends those again. The first
# file is always written, as an error when it alone is over the budget.
import ast
import json
import sys


def symbols_of(tree, max_doc, max_symbols):
    out = []
    doc = ast.get_docstring(tree, clean=True)
    if doc:
        out.append(["", "module", 1, doc[:max_doc]])
    # Source order, parents before children; a node's kind says what a def inside it is.
    stack = [(tree, False)]
    while stack and len(out) < max_symbols:
        node, in_class = stack.pop()
        children = list(ast.iter_child_nodes(node))
        for child in reversed(children):
            stack.append((child, isinstance(node, ast.ClassDef)))
        if isinstance(node, ast.ClassDef):
            kind = "class"
        elif isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef)):
            kind = "method" if in_class else "function"
        else:
            continue
        doc = ast.get_docstring(node, clean=True)
        if doc:
            out.append([node.name, kind, node.lineno, doc[:max_doc]])
    return out


def extract(name, max_doc, max_symbols):
    try:
        with open("/data/" + name, "rb") as f:
            raw = f.read()
        try:
            text = raw.decode("utf-8")
        except UnicodeDecodeError as e:
            return {"file": name, "error": "not UTF-8 (at byte %d)" % e.start}
        if text.startswith("\ufeff"):
            text = text[1:]
        tree = ast.parse(text, filename=name)
        return {"file": name, "symbols": symbols_of(tree, max_doc, max_symbols)}
    except SyntaxError as e:
        return {"file": name, "error": "syntax error at line %s: %s" % (e.lineno, str(e.msg)[:200])}
    except (RecursionError, MemoryError, ValueError, OverflowError) as e:
        return {"file": name, "error": "%s: %s" % (type(e).__name__, str(e)[:200])}


def main():
    with open("/data/params.json", "rb") as f:
        params = json.load(f)
    budget = int(params["budget"])
    max_doc = int(params["max_doc"])
    max_symbols = int(params["max_symbols"])
    used = 0
    written = 0
    for name in params["files"]:
        line = json.dumps(extract(name, max_doc, max_symbols), ensure_ascii=True, separators=(",", ":"))
        if used + len(line) + 1 > budget:
            if written > 0:
                break
            line = json.dumps({"file": name, "error": "its docstrings are over the %d characters a run may print" % budget})
        sys.stdout.write(line + "\n")
        used += len(line) + 1
        written += 1
    sys.stdout.write(json.dumps({"end": written}) + "\n")


main()
