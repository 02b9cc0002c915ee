#!/usr/bin/env python3
"""Import cycles between the files of one crate.

    scripts/import-cycles.py src            # the core
    scripts/import-cycles.py server/src -v  # the server, with each cycle's edges

A file depends on another when it names a path inside it (`crate::a::b`,
`super::x`, `use crate::{a, b::c}`; tests left out). Prints the files, the
edges and every strongly connected component of more than one file (a
cycle); exits 1 when there is one. `scripts/test.sh` runs it on both
crates, so the tree stays free of them (ARCHITECTURE.md, "Dependencies").
"""
import os, re, sys
args = [a for a in sys.argv[1:] if not a.startswith('-')]
root = args[0] if args else 'src'
files = {}
for d, _, fs in os.walk(root):
    for f in fs:
        if f.endswith('.rs'):
            p = os.path.join(d, f)
            rel = os.path.relpath(p, root)[:-3]
            parts = rel.split('/')
            if parts[-1] in ('mod', 'lib', 'main'):
                parts = parts[:-1]
            files[tuple(parts)] = p
def strip_tests(s):
    i = s.find('#[cfg(test)]\nmod tests')
    return s if i < 0 else s[:i]
def resolve(mod, path):
    # longest prefix of path that is a file
    for n in range(len(path), 0, -1):
        if tuple(path[:n]) in files:
            return tuple(path[:n])
    return None
edges = {m: set() for m in files}
ident = r'[A-Za-z_][A-Za-z0-9_]*'
for m, p in files.items():
    s = strip_tests(open(p).read())
    s = re.sub(r'//[^\n]*', '', s)
    # expand use-groups crudely: crate::a::{b, c::d}
    def paths(text):
        out = []
        for g in re.finditer(r'\b(crate|super)((?:::' + ident + r')*)(::\{([^{}]*(?:\{[^{}]*\}[^{}]*)*)\})?', text):
            head = g.group(1); rest = [x for x in g.group(2).split('::') if x]
            # `super` is the parent module: of a leaf file and of a mod.rs alike.
            base = [] if head == 'crate' else list(m[:-1])
            prefix = base + rest
            if g.group(4):
                for item in re.split(r',(?![^{]*\})', g.group(4)):
                    item = item.strip().split(' as ')[0]
                    sub = [x for x in re.split(r'::', item) if x and re.match(ident, x)]
                    out.append(prefix + [x.strip('{} ') for x in sub])
            else:
                out.append(prefix)
        return out
    for path in paths(s):
        t = resolve(m, path)
        if t and t != m and not (len(t) < len(m) and m[:len(t)] == t):
            edges[m].add(t)
# Tarjan
index = {}; low = {}; stack = []; on = set(); sccs = []; i = [0]
sys.setrecursionlimit(10000)
def strong(v):
    index[v] = low[v] = i[0]; i[0] += 1; stack.append(v); on.add(v)
    for w in edges[v]:
        if w not in index:
            strong(w); low[v] = min(low[v], low[w])
        elif w in on:
            low[v] = min(low[v], index[w])
    if low[v] == index[v]:
        comp = []
        while True:
            w = stack.pop(); on.discard(w); comp.append(w)
            if w == v: break
        sccs.append(comp)
for v in files:
    if v not in index:
        strong(v)
big = [c for c in sccs if len(c) > 1]
print(f"{len(files)} files, {sum(len(e) for e in edges.values())} edges, {len(big)} cycles, {sum(len(c) for c in big)} files in cycles")
for c in sorted(big, key=len, reverse=True):
    print(len(c), ' '.join(sorted('/'.join(x) or 'lib' for x in c)))
if '-v' in sys.argv:
    for c in big:
        cs = set(c)
        for v in sorted(c):
            print('  ', '/'.join(v), '->', ', '.join(sorted('/'.join(w) or 'lib' for w in edges[v] if w in cs)))
sys.exit(1 if big else 0)
