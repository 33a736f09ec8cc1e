#!/usr/bin/env python3
"""Prints the `use` graph between sibling modules of a Rust crate, and its cycles.

For every module M of the crate (from `src/lib.rs`, following `mod name;` declarations to
`name.rs` or `name/mod.rs`, and inline `mod name { ... }` blocks), the script collects the
paths M's code names: `use` trees (braces expanded), and `crate::`, `super::`, `self::` paths
and paths starting with a child module or an imported module anywhere in the code (comments
and string literals left out, so doc links do not count). A path is resolved to the module
it reaches (through `pub use` re-exports too). A path from M that reaches T is an edge between
the two children of their nearest common ancestor that contain M and T: at every level of
the tree, siblings depend on siblings. A cycle among the children of one module (a strongly
connected component of more than one child) is printed with one path round it.

Usage:
    python3 scripts/module_cycles.py [--src src] [--lib lib.rs] [--under crate::index]
                                     [--edges] [--no-tests]

    --under P    only the levels at or below module P (e.g. `crate::index`, `crate::text`)
    --edges      also print each level's edges and, for an acyclic level, an order of its
                 children in which each uses only those before it
    --no-tests   leave out `#[cfg(test)]` modules (inline or in their own files) and the
                 test harness (`#[cfg(any(test, feature = "testkit"))]`)

Exit status: 0 without cycles, 1 with at least one (at the levels shown), 2 on bad use.
Plain python3, no packages.
"""

import argparse
import os
import re
import signal
import sys

IDENT = r"[A-Za-z_][A-Za-z0-9_]*"


def strip_code(text):
    """`text` with comments, string and char literals blanked (newlines kept)."""
    out = []
    i, n = 0, len(text)
    while i < n:
        c = text[i]
        if text.startswith("//", i):
            j = text.find("\n", i)
            j = n if j < 0 else j
            out.append(" " * (j - i))
            i = j
        elif text.startswith("/*", i):
            depth, j = 1, i + 2
            while j < n and depth:
                if text.startswith("/*", j):
                    depth, j = depth + 1, j + 2
                elif text.startswith("*/", j):
                    depth, j = depth - 1, j + 2
                else:
                    j += 1
            out.append(re.sub(r"[^\n]", " ", text[i:j]))
            i = j
        elif c == "r" and re.match(r'r#*"', text[i:i + 10]) and (i == 0 or not re.match(r"[A-Za-z0-9_]", text[i - 1])):
            m = re.match(r'r(#*)"', text[i:])
            hashes = m.group(1)
            end = text.find('"' + hashes, i + len(m.group(0)))
            end = n if end < 0 else end + 1 + len(hashes)
            out.append(re.sub(r"[^\n]", " ", text[i:end]))
            i = end
        elif c == '"':
            j = i + 1
            while j < n and text[j] != '"':
                j += 2 if text[j] == "\\" else 1
            j = min(j + 1, n)
            out.append(re.sub(r"[^\n]", " ", text[i:j]))
            i = j
        elif c == "'":
            # A char literal ('a', '\n', '\u{..}', b'{'), not a lifetime ('a).
            m = re.match(r"'(\\u\{[0-9A-Fa-f]+\}|\\.|[^\\'])'", text[i:])
            if m:
                out.append(" " * len(m.group(0)))
                i += len(m.group(0))
            else:
                out.append(c)
                i += 1
        else:
            out.append(c)
            i += 1
    return "".join(out)


def matching_brace(code, open_at):
    depth = 0
    for j in range(open_at, len(code)):
        if code[j] == "{":
            depth += 1
        elif code[j] == "}":
            depth -= 1
            if depth == 0:
                return j
    return len(code) - 1


CFG_TEST = re.compile(r"#\[cfg\(\s*(test|all\(\s*test\b[^\]]*)\)\]\s*$")


def preceded_by_cfg_test(code, at):
    """Whether the item at `at` carries `#[cfg(test)]` among its attributes."""
    before = code[:at].rstrip()
    # Walk back over attributes (`#[...]`) and visibility.
    before = re.sub(r"\bpub(\([^)]*\))?\s*$", "", before).rstrip()
    while before.endswith("]"):
        start = before.rfind("#[")
        if start < 0:
            return False
        attr = before[start:]
        if re.match(r"#\[cfg\(\s*test\s*\)\]", attr) or re.match(r"#\[cfg\(\s*all\(\s*test\b", attr):
            return True
        # The test harness: built for the crate's tests and the doc-hidden `testkit` feature.
        # (String literals are blanked before this runs: the feature's name is not seen.)
        if re.match(r"#\[cfg\(\s*any\(\s*test\s*,\s*feature\s*=", attr):
            return True
        before = before[:start].rstrip()
    return False


class Module:
    def __init__(self, path, file, code, span, is_test):
        self.path = path  # tuple of names, () for the crate
        self.file = file
        self.code = code  # the whole file's stripped code
        self.span = span  # (start, end) of this module's body in `code`
        self.children = {}  # name -> Module
        self.is_test = is_test
        self.uses = []  # (absolute path tuple, is a `pub use`, alias name)
        self.refs = []  # raw paths (list of segments) named in code
        self.skipped = []  # spans of inline test modules left out (`--no-tests`)


def parse_use_tree(tree, prefix):
    """Expands a use tree into (segments, alias) pairs."""
    tree = tree.strip()
    results = []
    if not tree:
        return results
    brace = tree.find("{")
    if brace >= 0 and tree.rstrip().endswith("}"):
        head = tree[:brace].strip().rstrip(":").strip()
        head_segs = [s for s in head.split("::") if s] if head else []
        inner = tree[brace + 1:tree.rstrip().rfind("}")]
        for part in split_top(inner):
            results.extend(parse_use_tree(part, prefix + head_segs))
        return results
    alias = None
    m = re.match(r"(.*?)\s+as\s+(" + IDENT + r")$", tree)
    if m:
        tree, alias = m.group(1), m.group(2)
    segs = [s.strip() for s in tree.split("::") if s.strip()]
    full = prefix + segs
    if full and full[-1] == "self":
        full = full[:-1]
    if alias is None and full and full[-1] != "*":
        alias = full[-1]
    if full:
        results.append((full, alias))
    return results


def split_top(text):
    parts, depth, cur = [], 0, []
    for c in text:
        if c == "{":
            depth += 1
        elif c == "}":
            depth -= 1
        if c == "," and depth == 0:
            parts.append("".join(cur))
            cur = []
        else:
            cur.append(c)
    if "".join(cur).strip():
        parts.append("".join(cur))
    return parts


def load_crate(src, lib, no_tests):
    modules = {}

    def child_dir(file):
        name = os.path.basename(file)
        if name in ("mod.rs", "lib.rs", "main.rs"):
            return os.path.dirname(file)
        return os.path.join(os.path.dirname(file), name[:-3])

    def load_file(path, file, is_test):
        with open(file, encoding="utf-8") as f:
            code = strip_code(f.read())
        build(path, file, code, (0, len(code)), child_dir(file), is_test)

    def build(path, file, code, span, dir_for_children, is_test):
        module = Module(path, file, code, span, is_test)
        modules[path] = module
        start, end = span
        depth = 0
        i = start
        while i < end:
            c = code[i]
            if c == "{":
                depth += 1
            elif c == "}":
                depth -= 1
            elif depth == 0 and c == "m" and (i == 0 or not re.match(r"[A-Za-z0-9_]", code[i - 1])):
                m = re.match(r"mod\s+(" + IDENT + r")\s*([;{])", code[i:i + 200])
                if m:
                    name = m.group(1)
                    child_test = is_test or preceded_by_cfg_test(code, i)
                    if m.group(2) == ";":
                        if not (no_tests and child_test):
                            for cand in (os.path.join(dir_for_children, name + ".rs"),
                                         os.path.join(dir_for_children, name, "mod.rs")):
                                if os.path.exists(cand):
                                    load_file(path + (name,), cand, child_test)
                                    module.children[name] = modules[path + (name,)]
                                    break
                        i += len(m.group(0))
                        continue
                    open_at = i + len(m.group(0)) - 1
                    close = matching_brace(code, open_at)
                    if not (no_tests and child_test):
                        build(path + (name,), file, code, (open_at + 1, close),
                              os.path.join(dir_for_children, name), child_test)
                        module.children[name] = modules[path + (name,)]
                    else:
                        module.skipped.append((open_at + 1, close))
                    i = close + 1
                    continue
            i += 1

    load_file((), os.path.join(src, lib), False)
    return modules


def own_code(module):
    """The module's code without its inline child modules' bodies."""
    start, end = module.span
    code = module.code[start:end]
    holes = []
    for child in module.children.values():
        if child.file == module.file and child.span != (0, len(child.code)):
            cs, ce = child.span
            if start <= cs and ce <= end:
                holes.append((cs - start, ce - start))
    for cs, ce in module.skipped:
        if start <= cs and ce <= end:
            holes.append((cs - start, ce - start))
    for cs, ce in sorted(holes, reverse=True):
        code = code[:cs] + " " * (ce - cs) + code[ce:]
    return code


def collect(modules):
    for module in modules.values():
        code = own_code(module)
        for m in re.finditer(r"(?<![A-Za-z0-9_])(pub(?:\([^)]*\))?\s+)?use\s+([^;]*);", code):
            public = m.group(1) is not None
            for segs, alias in parse_use_tree(m.group(2), []):
                module.uses.append((segs, public, alias))
            # Blank the use statement so its paths are not counted twice.
            code = code[:m.start()] + " " * (m.end() - m.start()) + code[m.end():]
        for m in re.finditer(r"(?<![A-Za-z0-9_:$])((?:" + IDENT + r")(?:\s*::\s*" + IDENT + r")+)", code):
            segs = [s.strip() for s in m.group(1).split("::")]
            module.refs.append(segs)


def resolve_start(modules, here, segs):
    """The absolute path `segs`, named in module `here`, starts at; None if external."""
    first = segs[0]
    if first == "crate":
        return (), segs[1:]
    if first == "self":
        return here, segs[1:]
    if first == "super":
        at = here
        rest = segs
        while rest and rest[0] == "super":
            at = at[:-1]
            rest = rest[1:]
        return at, rest
    module = modules.get(here)
    if module is not None and first in module.children:
        return here, segs
    return None, None


def build_resolver(modules):
    """Maps (module, name) to the absolute path a `use` there binds the name to."""
    bindings = {}
    for module in modules.values():
        for segs, public, alias in module.uses:
            if alias is None:
                continue
            base, rest = resolve_start(modules, module.path, segs)
            if base is None:
                continue
            bindings[(module.path, alias)] = (base, rest)

    def resolve(base, rest, depth=0):
        """Walks `rest` from module `base`: the deepest module reached and its item, if any."""
        at = base
        for i, name in enumerate(rest):
            if depth > 20:
                break
            module = modules.get(at)
            if module is None:
                break
            if name in module.children:
                at = at + (name,)
                continue
            bound = bindings.get((at, name))
            if bound is not None:
                b_base, b_rest = bound
                target = resolve(b_base, b_rest, depth + 1)
                if target in modules and i + 1 < len(rest):
                    return resolve(target, rest[i + 1:], depth + 1)
                return target
            return at + (name,) if i + 1 == len(rest) else at
        return at

    return bindings, resolve


def module_of(modules, target):
    while target and target not in modules:
        target = target[:-1]
    return target


def edges(modules, no_tests):
    bindings, resolve = build_resolver(modules)
    result = {}  # parent path -> {child: {child: [(from module, to path)]}}

    def add(src, target):
        target_module = module_of(modules, target)
        common = 0
        while common < len(src) and common < len(target_module) and src[common] == target_module[common]:
            common += 1
        if common >= len(src) or common >= len(target_module):
            return  # an ancestor or a descendant: not between siblings
        parent = src[:common]
        a, b = src[common], target_module[common]
        result.setdefault(parent, {}).setdefault(a, {}).setdefault(b, []).append((src, target))

    for module in modules.values():
        here = module.path
        for segs, public, alias in module.uses:
            base, rest = resolve_start(modules, here, segs)
            if base is None:
                continue
            if rest and rest[-1] == "*":
                rest = rest[:-1]
            add(here, resolve(base, rest))
        for segs in module.refs:
            base, rest = resolve_start(modules, here, segs)
            if base is None:
                bound = bindings.get((here, segs[0]))
                if bound is None:
                    continue
                b_base, b_rest = bound
                target = resolve(b_base, b_rest)
                if target not in modules:
                    continue
                add(here, resolve(target, segs[1:]))
                continue
            add(here, resolve(base, rest))
    return result


def sccs(nodes, graph):
    index, low, on, stack, out = {}, {}, set(), [], []
    counter = [0]

    def visit(v):
        index[v] = low[v] = counter[0]
        counter[0] += 1
        stack.append(v)
        on.add(v)
        for w in sorted(graph.get(v, ())):
            if w not in index:
                visit(w)
                low[v] = min(low[v], low[w])
            elif w in on:
                low[v] = min(low[v], index[w])
        if low[v] == index[v]:
            comp = []
            while True:
                w = stack.pop()
                on.discard(w)
                comp.append(w)
                if w == v:
                    break
            out.append(sorted(comp))

    sys.setrecursionlimit(10000)
    for v in sorted(nodes):
        if v not in index:
            visit(v)
    return out


def cycle_in(comp, graph):
    """One cycle through the first node of a strongly connected component."""
    members = set(comp)
    start = comp[0]
    # Breadth-first search back to `start` inside the component.
    prev = {start: None}
    queue = [start]
    while queue:
        v = queue.pop(0)
        for w in sorted(graph.get(v, ())):
            if w not in members:
                continue
            if w == start:
                path = [v]
                while prev[path[-1]] is not None:
                    path.append(prev[path[-1]])
                return list(reversed(path)) + [start]
            if w not in prev:
                prev[w] = v
                queue.append(w)
    return comp


def topo_order(nodes, graph):
    """Children ordered so that each uses only those before it (graph acyclic)."""
    order, done = [], set()
    remaining = set(nodes)
    while remaining:
        ready = sorted(v for v in remaining if all(w in done or w == v for w in graph.get(v, ()) if w in nodes))
        if not ready:
            return None
        for v in ready:
            order.append(v)
            done.add(v)
            remaining.discard(v)
    return order


def name(path):
    return "::".join(("crate",) + tuple(path))


def main():
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--src", default="src")
    parser.add_argument("--lib", default="lib.rs")
    parser.add_argument("--under", default="crate")
    parser.add_argument("--edges", action="store_true")
    parser.add_argument("--no-tests", action="store_true")
    args = parser.parse_args()
    if not os.path.exists(os.path.join(args.src, args.lib)):
        print(f"no {os.path.join(args.src, args.lib)}", file=sys.stderr)
        return 2
    under = tuple(s for s in args.under.split("::") if s and s != "crate")
    modules = load_crate(args.src, args.lib, args.no_tests)
    if under not in modules:
        print(f"no module {args.under}", file=sys.stderr)
        return 2
    collect(modules)
    graph = edges(modules, args.no_tests)
    found = 0
    for parent in sorted(p for p in modules if p[:len(under)] == under and modules[p].children):
        children = set(modules[parent].children)
        level = {a: set(bs) for a, bs in graph.get(parent, {}).items()}
        comps = [c for c in sccs(children, level) if len(c) > 1]
        if args.edges:
            print(f"{name(parent)}:")
            for a in sorted(level):
                for b in sorted(level[a]):
                    where = graph[parent][a][b][0]
                    print(f"  {a} -> {b}    ({name(where[0])} uses {name(where[1])})")
            order = topo_order(children, level)
            if order is not None:
                print(f"  order: {' < '.join(order)}")
        for comp in comps:
            found += 1
            cycle = cycle_in(comp, level)
            print(f"cycle in {name(parent)}: {' -> '.join(cycle)}")
            for a, b in zip(cycle, cycle[1:]):
                src, target = graph[parent][a][b][0]
                print(f"    {a} -> {b}: {name(src)} uses {name(target)}")
            if len(comp) > len(cycle) - 1:
                print(f"    (strongly connected: {', '.join(comp)})")
                mutual = [(a, b) for a in comp for b in comp if a < b and b in level.get(a, ()) and a in level.get(b, ())]
                for a, b in mutual:
                    print(f"    mutual: {a} <-> {b}")
    if not found:
        print(f"no cycles between sibling modules under {name(under)}")
    return 1 if found else 0


if __name__ == "__main__":
    if hasattr(signal, "SIGPIPE"):
        signal.signal(signal.SIGPIPE, signal.SIG_DFL)  # quiet when piped into `head`
    sys.exit(main())
