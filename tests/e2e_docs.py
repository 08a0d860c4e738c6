"""docs/DESIGN.md and the other docs against the code they describe, so
that they cannot drift apart silently: every config key of keys[], every
drainer command and option of `webhook-drain --help`, every handler
variable is documented; the receiver's answers table is its steps[],
in order, with the statuses each step can answer; every
section the code cites exists; comments cite docs/, never an issue
number; every repository path the docs and the comments name is
there; lib/'s folders include no cycle, and the store's engines use
nothing of each other.

Reads the source and runs the built drainer's --help (BUILD, as every
e2e suite); starts no server.
"""
import glob
import os
import re
import subprocess
import unittest

from harness import DRAIN, ROOT

DESIGN = os.path.join(ROOT, "docs", "DESIGN.md")

# Files under lib/store/ that another change is rewriting: they keep
# their old citations until it lands, and this list says which.  An entry
# that no longer needs its exemption fails the test, so the list only
# shrinks.
PENDING_ISSUE_CITATIONS = set()
PENDING_BARE_DESIGN = set()
PENDING_OLD_PATHS = set()

# A repository path as prose names it: lib/store/inbox.h, lib/store/sqlite/,
# tests/e2e_*.py (a glob), bench/spawn (a program built from its .c).
REPO_PATH = re.compile(r"(?<![\w/.~$-])((?:lib|tests|conf|bench|docs|fuzz|"
                       r"scripts)/[\w./*-]*[\w/*])")


def missing_paths(text):
    """The repository paths text names that are not there.  A placeholder
    component in capitals (fuzz/regress/TARGET/) names no file."""
    out = []
    for m in REPO_PATH.finditer(text):
        p = m.group(1)
        if re.search(r"/[A-Z]+(/|$)", p):
            continue
        if not (glob.glob(os.path.join(ROOT, p)) or
                os.path.exists(os.path.join(ROOT, p + ".c"))):
            out.append(p)
    return out


def read(rel):
    with open(os.path.join(ROOT, rel), encoding="utf-8") as f:
        return f.read()


def sections(text):
    """{heading: body} for every ## and ### heading of a markdown page;
    a body runs to the next heading of any level."""
    out, name, body = {}, None, []
    for line in text.split("\n"):
        m = re.match(r"^#{2,3} (.+?)\s*$", line)
        if m:
            if name is not None:
                out[name] = "\n".join(body)
            name, body = m.group(1), []
        elif name is not None:
            body.append(line)
    if name is not None:
        out[name] = "\n".join(body)
    return out


def code_files():
    """Code that may cite the docs: lib/ (C, headers, assembly), the mains,
    the schemas, tests/ (C, SQL, Python), and bench/'s and fuzz/'s C."""
    pats = ["lib/**/*.[chS]", "*.c", "*.sql", "tests/*.[ch]", "tests/*.sql",
            "tests/*.py", "bench/*.c", "fuzz/*.c"]
    files = set()
    for p in pats:
        for f in glob.glob(os.path.join(ROOT, p), recursive=True):
            files.add(os.path.relpath(f, ROOT))
    return sorted(files)


class DesignDoc(unittest.TestCase):

    @classmethod
    def setUpClass(cls):
        cls.design = read("docs/DESIGN.md")
        cls.sec = sections(cls.design)

    def section(self, name):
        self.assertIn(name, self.sec, "docs/DESIGN.md has no section "
                      "%r" % name)
        return self.sec[name]

    def test_every_config_key_is_in_configuration(self):
        src = read("lib/program/config.c")
        table = src[src.index("static const struct key keys[] = {"):]
        table = table[:table.index("\n};")]
        keys = re.findall(r'^\t\{ "([a-z_]+)",', table, re.M)
        self.assertGreaterEqual(len(keys), 20, "keys[] not found as expected")
        documented = re.findall(r"^\| `([a-z_]+)` \|",
                                self.section("Configuration"), re.M)
        self.assertEqual(sorted(documented), sorted(keys),
                         "the Configuration table and keys[] differ")

    def test_every_command_and_option_is_in_the_drainer(self):
        p = subprocess.run([DRAIN, "--help"], capture_output=True, text=True,
                           timeout=60)
        self.assertEqual(p.returncode, 0, p.stderr)
        usage = p.stdout + p.stderr
        helped = set(re.findall(r"^  ([a-z]+)\b", usage, re.M))
        src = read("webhook-drain.c")
        table = src[src.index("} commands[] = {"):]
        table = table[:table.index("\n};")]
        commands = set(re.findall(r'\{ "([a-z]+)", cmd_', table))
        self.assertGreaterEqual(len(commands), 10)
        self.assertEqual(helped, commands,
                         "--help and the command table differ")
        drainer = self.section("The drainer")
        documented = set(re.findall(r"^\| `([a-z]+)[ `]", drainer, re.M))
        self.assertEqual(documented, commands,
                         "docs/DESIGN.md \"The drainer\" and the command "
                         "table differ")
        options = set(re.findall(r"--[a-z][a-z-]+", usage)) - {"--help",
                                                               "--version"}
        long_opts = set("--" + o for o in re.findall(
            r'\{ "([a-z-]+)", (?:required|no)_argument', src))
        self.assertEqual(options, long_opts, "--help and long_opts differ")
        missing = sorted(o for o in options if o + " " not in drainer and
                         o + "`" not in drainer and o + "]" not in drainer)
        self.assertEqual(missing, [], "options not in \"The drainer\"")

    def test_every_handler_variable_is_in_handler(self):
        names = set()
        for rel in ("lib/drain/drain.c", "lib/operator/trial.c"):
            names |= set(re.findall(r'\{ ?"(WEBHOOK_[A-Z_]+)"', read(rel)))
        self.assertIn("WEBHOOK_ID", names)
        handler = self.section("Handler")
        missing = sorted(n for n in names if "`%s`" % n not in handler)
        self.assertEqual(missing, [], "handler variables not in \"Handler\"")

    def test_the_answers_table_is_steps(self):
        """docs/DESIGN.md "The receiver's answers" against
        lib/receive/receive.c's steps[]: the table's steps (each named by
        its function) in steps[]'s order, and each step with exactly the
        statuses its function can return (and steps[]'s comment says)."""
        src = read("lib/receive/receive.c")
        table = src[src.index("steps[])"):]
        table = table[:table.index("};")]
        # Each entry: the function, then its comment (to the next entry).
        steps = re.findall(r"^\t([a-z_]+),(.*?)(?=^\t[a-z_]+,|\Z)", table,
                           re.M | re.S)
        self.assertGreaterEqual(len(steps), 6, "steps[] not found as expected")
        code = {fn: step_statuses(src, fn) for fn, _ in steps}
        commented = {fn: set(re.findall(r"\b[1-5]\d\d\b", c))
                     for fn, c in steps}
        self.assertEqual(commented, code, "steps[]'s comments and what "
                         "each step can return differ")
        self.assertGreaterEqual(set().union(*code.values()),
                                {"200", "400", "401", "404", "405", "408",
                                 "413", "503"})

        answers = self.section("The receiver's answers")
        page, order = {}, []
        for line in re.findall(r"^\|(.*)\|[ \t]*$", answers, re.M):
            cells = [c.strip() for c in line.split("|")]
            if len(cells) != 3 or cells[0] == "step" or \
                    re.match(r"^-+$", cells[0]):
                continue
            if cells[0]:
                m = re.search(r"\(`([a-z_]+)`\)", cells[0])
                self.assertIsNotNone(m, "a step of the answers table that "
                                     "names no function: %r" % cells[0])
                order.append(m.group(1))
                page[m.group(1)] = set()
            self.assertTrue(order, "a continued row before any step")
            page[order[-1]] |= set(re.findall(r"`([1-5]\d\d)`", cells[2]))
        self.assertEqual(order, [fn for fn, _ in steps],
                         "the answers table's steps and steps[] differ")
        differ = {fn: {"page": sorted(page[fn]), "code": sorted(code[fn])}
                  for fn in code if page.get(fn) != code[fn]}
        self.assertEqual(differ, {}, "statuses of \"The receiver's "
                         "answers\" and of the steps differ")

    def test_every_cited_section_exists(self):
        cited = {}
        for rel in code_files() + ["Makefile", "README.md"] + [
                os.path.relpath(f, ROOT) for f in
                glob.glob(os.path.join(ROOT, "docs", "*.md"))]:
            text = read(rel)
            for m in re.finditer(r'docs/DESIGN\.md\s+"([^"]+)"', text):
                name = re.sub(r"\s*\n\s*(?:\*|--|#)?\s*", " ", m.group(1))
                cited.setdefault(name, []).append(rel)
        self.assertGreaterEqual(len(cited), 10, "too few citations found")
        missing = {n: sorted(set(f)) for n, f in cited.items()
                   if n not in self.sec}
        self.assertEqual(missing, {}, "cited sections missing from "
                         "docs/DESIGN.md")

    def test_code_cites_docs_never_an_issue(self):
        issue = re.compile(r"[Ii]ssues? #?\d+")
        bare = re.compile(r"(?<![\w/])DESIGN\.md")
        found_issue, found_bare = {}, {}
        for rel in code_files():
            text = read(rel)
            n = len(issue.findall(text))
            if n:
                found_issue[rel] = n
            n = len(bare.findall(text)) if rel != "tests/e2e_docs.py" else 0
            if n:
                found_bare[rel] = n
        bad = {f: n for f, n in found_issue.items()
               if f not in PENDING_ISSUE_CITATIONS}
        self.assertEqual(bad, {}, "comments citing an issue number")
        bad = {f: n for f, n in found_bare.items()
               if f not in PENDING_BARE_DESIGN}
        self.assertEqual(bad, {}, "DESIGN.md cited without docs/")
        stale = sorted((PENDING_ISSUE_CITATIONS - set(found_issue)) |
                       (PENDING_BARE_DESIGN - set(found_bare)))
        self.assertEqual(stale, [], "exemptions no longer needed: remove "
                         "them from this test")

    def test_paths_in_the_docs_exist(self):
        pages = ["README.md"] + sorted(
            os.path.relpath(f, ROOT) for f in
            glob.glob(os.path.join(ROOT, "docs", "*.md")) +
            glob.glob(os.path.join(ROOT, "bench", "*.md")) +
            glob.glob(os.path.join(ROOT, "tests", "*.md")))
        link = re.compile(r"\]\(([^)#\s]+)(?:#[^)]*)?\)")
        missing = []
        for rel in pages:
            text = read(rel)
            here = os.path.dirname(os.path.join(ROOT, rel))
            missing += ["%s: %s" % (rel, p) for p in missing_paths(text)]
            for m in link.finditer(text):
                t = m.group(1)
                if re.match(r"^[a-z]+:", t):
                    continue
                # HOSTING.md also ships at the top of the release, beside
                # conf/ (make dist): its links are relative to that.
                if not (os.path.exists(os.path.join(here, t)) or
                        (rel == "docs/HOSTING.md" and
                         os.path.exists(os.path.join(ROOT, t)))):
                    missing.append("%s: (%s)" % (rel, t))
        self.assertGreater(len(pages), 10)
        self.assertEqual(missing, [], "paths the docs name that are not "
                         "in the repository")


    def test_paths_in_the_code_exist(self):
        """Comments name files as the docs do; a file moved (the lib/
        reorganisation) must not leave its old name behind."""
        found = {}
        for rel in code_files():
            if rel.endswith(".py"):
                continue  # their paths are code, run by the suites
            gone = missing_paths(read(rel))
            if gone:
                found[rel] = sorted(set(gone))
        bad = {f: g for f, g in found.items() if f not in PENDING_OLD_PATHS}
        self.assertEqual(bad, {}, "paths named in comments that are not "
                         "in the repository")
        stale = sorted(PENDING_OLD_PATHS - set(found))
        self.assertEqual(stale, [], "exemptions no longer needed: remove "
                         "them from this test")


def c_code(src):
    """C source without its comments and its string and character
    literals: what is left names only what the code uses."""
    src = re.sub(r"/\*.*?\*/", " ", src, flags=re.S)
    src = re.sub(r"//[^\n]*", " ", src)
    src = re.sub(r'"(?:\\.|[^"\\\n])*"', '""', src)
    return re.sub(r"'(?:\\.|[^'\\\n])*'", "''", src)


# A function definition in the house style: the name at the start of a
# line, its parameters, then the body; `static` (on the line above, with
# the type) keeps it inside its file.
C_FUNCTION = re.compile(r"^([a-z_][a-z0-9_]*)\([^;{]*\)\s*\{", re.M)


def c_functions(src):
    """The names of the functions src (without comments) defines for
    other files to call: every definition not static."""
    out = set()
    for m in C_FUNCTION.finditer(src):
        head = src[:m.start()].rstrip("\n").rsplit("\n", 1)[-1]
        if "static" not in head.split():
            out.add(m.group(1))
    return out


def c_function(src, name):
    """The body of function name in src, the house's way: its name at the
    start of a line, its closing brace alone at the start of one; None
    when src defines no such function."""
    m = re.search(r"^%s\([^;{]*\)\s*\{" % re.escape(name), src, re.M)
    if m is None:
        return None
    return src[m.end():src.index("\n}\n", m.end())]


def step_statuses(src, name):
    """The statuses a step of lib/receive/receive.c (src) can answer: the
    numbers of its return statements; a `return table[i]` adds those of
    the function's array `table`, a `return f(...)` those of f, when src
    defines it (verify hands a named source to verify_source).  A regex,
    enough for the way these steps are written."""
    body = c_code(c_function(src, name))
    out = set()
    for ret in re.findall(r"\breturn\b([^;]*);", body):
        out |= set(re.findall(r"\b[1-5]\d\d\b", ret))
        m = re.match(r"\s*([a-z_]+)\s*([\[(])", ret)
        if m and m.group(2) == "[":
            init = re.search(r"\b%s\[\]\s*=\s*\{([^}]*)\}" % m.group(1),
                             body)
            out |= set(re.findall(r"\b[1-5]\d\d\b", init.group(1)))
        elif m and m.group(1) != name and c_function(src, m.group(1)):
            out |= step_statuses(src, m.group(1))
    return out


class Layout(unittest.TestCase):
    """docs/DESIGN.md "Layout": lib/'s folders are layers, and no folder
    includes one that includes it back (directly or through others); the
    store's engines sit side by side and never reach into each other."""

    def test_folders_include_no_cycle(self):
        edges = {}
        for path in glob.glob(os.path.join(ROOT, "lib", "**", "*.[ch]"),
                              recursive=True):
            top = os.path.relpath(path, os.path.join(ROOT, "lib")).split(
                os.sep)[0]
            with open(path, encoding="utf-8") as f:
                for inc in re.findall(r'#include "lib/([a-z_]+)/', f.read()):
                    if inc != top:
                        edges.setdefault(top, set()).add(inc)
        self.assertGreater(len(edges), 3, "no folders found under lib/")

        def reaches(a, b, seen):
            for n in edges.get(a, ()):
                if n == b or (n not in seen and
                              reaches(n, b, seen | {n})):
                    return True
            return False
        cycles = sorted(a for a in edges if reaches(a, a, {a}))
        self.assertEqual(cycles, [], "folders on an include cycle: %s "
                         "(edges: %s)" % (cycles, {k: sorted(v) for k, v
                                                   in edges.items()}))
        # The bottom layer includes nothing else of lib/.
        self.assertEqual(edges.get("common", set()), set())

    def test_engines_use_nothing_of_each_other(self):
        """docs/DESIGN.md "The store contract": each engine (a folder under
        lib/store/) includes no file of another engine and uses no
        function another engine's files define; what both need lives in
        lib/store/ itself, as SQLite's os.c holds what os_unix.c and
        os_win.c share.  A regex over the C (definitions at the start of a
        line, as the house writes them), which is enough here."""
        store = os.path.join(ROOT, "lib", "store")
        engines = sorted(d for d in os.listdir(store)
                         if os.path.isdir(os.path.join(store, d)))
        self.assertGreaterEqual(len(engines), 2, "no engines in lib/store/")
        raw, code, defined = {}, {}, {}
        for e in engines:
            raw[e] = {}
            for path in sorted(glob.glob(os.path.join(store, e, "*.[ch]"))):
                with open(path, encoding="utf-8") as f:
                    raw[e][os.path.relpath(path, ROOT)] = f.read()
            code[e] = {rel: c_code(t) for rel, t in raw[e].items()}
            defined[e] = set().union(*(c_functions(t) for rel, t in
                                       code[e].items() if rel.endswith(".c")))
            self.assertGreater(len(defined[e]), 5, "no functions found "
                               "defined in lib/store/%s/" % e)
        crossings = []
        for a in engines:
            for b in engines:
                if a == b:
                    continue
                for rel in sorted(code[a]):
                    if re.search(r'#include "lib/store/%s/' % b, raw[a][rel]):
                        crossings.append("%s includes lib/store/%s/" % (rel, b))
                    used = sorted(n for n in defined[b] if re.search(
                        r"\b%s\b" % n, code[a][rel]))
                    if used:
                        crossings.append("%s uses lib/store/%s/'s %s" % (
                            rel, b, ", ".join(used)))
        self.assertEqual(crossings, [], "an engine reaching into another "
                         "(move what both need to lib/store/)")


if __name__ == "__main__":
    unittest.main(verbosity=2)
