#!/usr/bin/env python3
"""Keeps docs/ true to the code (docs/testing.md, "The docs check").

Four checks, each failing with one line per problem:

1. Commands and flags. Every command in `gpulet --help`, recursively, is
   documented: a heading of a page in docs/, or the first cell of a row of a
   table marked `<!-- commands: PREFIX -->`, holds it in backticks
   ("`gpulet cdi generate`"; in a marked table the PREFIX may be left out,
   "`xid --gpu G`" under `<!-- commands: gpulet sim -->`). Every flag of a
   command has a row in a table marked `<!-- flags: gpulet CMD -->` (the
   line just before the table; several commands separated by commas; `gpulet`
   alone for the global options). The row's first cell names each of the
   flag's names in backticks ("`--driver-root PATH`, `--nvidia-driver-root`").
   The table's column headed `environment`/`env...` holds, in backticks,
   exactly the variables the help names for the flag ("(Env:X)", "[env: X]",
   "$X" in its description), `—` when none; a table without that column may
   only list flags without variables. A flag with neither a variable nor a
   default may instead be named in its command's row of a commands table
   ("`xid --gpu G --xid N`"). Where the help shows a default
   ("=X", "[default: X]"), the column headed `default` holds it: in
   backticks (a number may be written as the same number), or, for a default
   the help words in prose, as that text. A marked table's rows may only name
   flags the command or the commands above it (global options) have.
2. Every page in docs/ is linked from README.md ("(docs/PAGE.md").
3. Every metric name the code registers (string literals starting
   `gpulet_` or `rest_client_` in the non-test sources under src/ that
   mention the metrics layer: `metrics`, `Registry`) is the first cell of a
   table row of docs/metrics.md, and every such row names a registered
   metric.
4. Runnable examples. A fenced block whose info string has the word
   `runnable` ("```console runnable") is a shell transcript: lines starting
   "$ " are commands (a line ending in "\\" continues on the next), the lines
   after one are its expected output (stdout and stderr), and a line "..."
   stands for any number of lines. Each command runs with bash in a scratch
   directory where `build` is the build tree and `gpulet` is on PATH, must
   exit 0 and print what the block shows. Mark only read-only commands.

Usage: check_docs.py --source DIR --build DIR [--self-test]
"""

import argparse
import glob
import os
import re
import shutil
import subprocess
import sys
import tempfile

HELP_FLAGS = {"-h", "--help"}


# ---------------------------------------------------------------- help text


class Flag:
    def __init__(self, names, env, default):
        self.names = names  # ["--driver-root", "--nvidia-driver-root"]
        self.env = env  # set of variable names
        self.default = default  # string or None

    def primary(self):
        longs = [n for n in self.names if n.startswith("--")]
        return (longs or self.names)[0]


class Command:
    def __init__(self, path):
        self.path = path  # "gpulet cdi generate"
        self.flags = []
        self.subcommands = []


def parse_help(text):
    """The flags and subcommand names of one CLI11 help text."""
    flags, subs = [], []
    section = None
    entries = []  # (first line, continuation lines)
    for line in text.splitlines():
        if line and not line.startswith(" "):
            section = line.rstrip(":")
            continue
        if section == "Subcommands" and line.startswith("  ") and line[2] != " ":
            subs.append(line.split()[0])
        if section != "Options":
            continue
        if line.startswith("  ") and line[2] == "-":
            entries.append([line, []])
        elif entries and line.strip():
            entries[-1][1].append(line)
    for first, rest in entries:
        names = first.split()[0].split(",")
        if set(names) & HELP_FLAGS:
            continue
        whole = " ".join([first] + rest)
        env = set(re.findall(r"\(Env:([A-Z0-9_]+)\)", whole))
        for group in re.findall(r"\[env: ([^\]]+)\]", whole):
            env.update(v.strip() for v in group.split(","))
        env.update(re.findall(r"\$([A-Z][A-Z0-9_]+)", whole))
        default = None
        m = re.match(r"\s+\S+(?: [A-Z]+[^\s=]*)?=(\S+)", first)
        if m:
            default = m.group(1)
        m = re.search(r"\[default: ([^\]]+)\]", whole)
        if m:
            default = m.group(1)
        flags.append(Flag(names, env, default))
    return flags, subs


def read_commands(gpulet):
    """Every command of `gpulet`, by path, from its help, recursively."""
    commands = {}

    def visit(words):
        out = subprocess.run(
            [gpulet] + words + ["--help"], capture_output=True, text=True
        )
        if out.returncode != 0:
            raise SystemExit(
                f"gpulet {' '.join(words)} --help exited {out.returncode}: "
                + out.stderr.strip()
            )
        cmd = Command(" ".join(["gpulet"] + words))
        cmd.flags, cmd.subcommands = parse_help(out.stdout)
        commands[cmd.path] = cmd
        for sub in cmd.subcommands:
            visit(words + [sub])

    visit([])
    return commands


# -------------------------------------------------------------- markdown


class Table:
    def __init__(self, page, line, marks, header, rows):
        self.page, self.line = page, line
        self.marks = marks  # ("flags", ["gpulet dra"]) or ("commands", [...])
        self.header = header
        self.rows = rows  # [(line number, [cells])]

    def column(self, *prefixes):
        for i, h in enumerate(self.header):
            if any(h.lower().startswith(p) for p in prefixes):
                return i
        return None


def split_row(line):
    # Cells split on "|" not escaped as "\|".
    cells = re.split(r"(?<!\\)\|", line.strip())
    return [c.strip() for c in cells[1:-1]]


MARK = re.compile(r"^<!--\s*(flags|commands):\s*(.+?)\s*-->\s*$")


def read_pages(source):
    pages = {}
    for path in sorted(glob.glob(os.path.join(source, "docs", "*.md"))):
        with open(path, encoding="utf-8") as f:
            pages[os.path.relpath(path, source)] = f.read().splitlines()
    return pages


def tables(page, lines):
    out = []
    i = 0
    in_fence = False
    while i < len(lines):
        line = lines[i]
        if line.startswith("```"):
            in_fence = not in_fence
        if not in_fence and line.startswith("|") and i + 1 < len(lines) and \
                re.match(r"^\|[\s:|-]+\|$", lines[i + 1]):
            mark = MARK.match(lines[i - 1]) if i > 0 else None
            marks = None
            if mark:
                marks = (mark.group(1),
                         [p.strip() for p in mark.group(2).split(",")])
            header = split_row(line)
            rows = []
            j = i + 2
            while j < len(lines) and lines[j].startswith("|"):
                rows.append((j + 1, split_row(lines[j])))
                j += 1
            out.append(Table(page, i + 1, marks, header, rows))
            i = j
            continue
        i += 1
    return out


def backticked(cell):
    return re.findall(r"`([^`]+)`", cell)


def flag_names(cell):
    names = []
    for token in backticked(cell):
        m = re.match(r"^(--?[A-Za-z0-9][A-Za-z0-9._-]*)", token)
        if m:
            names.append(m.group(1))
    return names


def command_paths(text, prefix):
    """The command paths a backticked text names: "gpulet vfio bind|unbind
    <gpu>" names gpulet vfio, gpulet vfio bind and gpulet vfio unbind."""
    words = text.replace("\\|", "|").split()
    if not words:
        return set()
    shortest = 2
    if words[0] != "gpulet":
        if prefix is None:
            return set()
        words = prefix.split() + words
        shortest = len(prefix.split()) + 1
    paths = set()
    bases = [["gpulet"]]
    for word in words[1:]:
        alternatives = word.split("|")
        if not all(re.fullmatch(r"[a-z][a-z0-9-]*", a) for a in alternatives):
            break
        bases = [b + [a] for b in bases for a in alternatives]
        paths.update(" ".join(b) for b in bases if len(b) >= shortest)
    return paths


# ---------------------------------------------------------------- checks


def same_default(default, cell):
    if default.startswith("[") and default.endswith("]"):  # a list
        return all(same_default(item, cell)
                   for item in default[1:-1].split(",") if item)
    if " " in default:
        return default.lower() in cell.lower().replace("`", "")
    values = backticked(cell)
    if default in values:
        return True
    try:
        want = float(default)
    except ValueError:
        return False
    for v in values:
        try:
            if float(v) == want:
                return True
        except ValueError:
            pass
    return False


def check_commands(commands, pages):
    problems = []
    documented = set()
    flag_rows = {}  # command path -> [(table, row line, cells, names)]
    synopsis = {}  # command path -> flags in its commands-table row
    for page, lines in pages.items():
        in_fence = False
        for line in lines:
            if line.startswith("```"):
                in_fence = not in_fence
            if not in_fence and line.startswith("#"):
                for text in backticked(line):
                    documented |= command_paths(text, None)
        for table in tables(page, lines):
            if not table.marks:
                continue
            kind, targets = table.marks
            for target in targets:
                if target not in commands:
                    problems.append(
                        f"{page}:{table.line}: the table is marked for "
                        f"'{target}', which is not a command")
            for lineno, cells in table.rows:
                if not cells:
                    continue
                if kind == "commands":
                    for text in backticked(cells[0]):
                        for target in targets:
                            paths = command_paths(text, target)
                            documented |= paths
                            if paths:
                                deepest = max(paths, key=len)
                                synopsis.setdefault(deepest, set()).update(
                                    re.findall(r"(?<![\w-])(--?[A-Za-z][\w.-]*)",
                                               text))
                    continue
                names = flag_names(cells[0])
                for target in targets:
                    flag_rows.setdefault(target, []).append(
                        (table, lineno, cells, names))
    for path in sorted(commands):
        if path != "gpulet" and path not in documented:
            problems.append(f"'{path}' has no entry in docs/ (a heading or "
                            f"a row of a table marked <!-- commands: ... -->)")
    for path, cmd in sorted(commands.items()):
        rows = flag_rows.get(path, [])
        for flag in cmd.flags:
            named = [r for r in rows if set(flag.names) & set(r[3])]
            if not named and not flag.env and flag.default is None and \
                    set(flag.names) & synopsis.get(path, set()):
                continue  # nothing to state but the name: the synopsis does
            if not named:
                problems.append(
                    f"'{path} {flag.primary()}' has no row in a table marked "
                    f"<!-- flags: {path} -->")
                continue
            listed = set().union(*(set(r[3]) for r in named))
            for name in flag.names:
                if name not in listed:
                    problems.append(
                        f"'{path} {flag.primary()}': its name {name} is in "
                        f"none of its rows ({named[0][0].page}:{named[0][1]})")
    # Every row of a marked table, against the flag it names.
    for path, rows in sorted(flag_rows.items()):
        if path not in commands:
            continue
        scope = []
        words = path.split()
        for n in range(len(words), 0, -1):
            scope.extend(commands[" ".join(words[:n])].flags)
        for table, lineno, cells, names in rows:
            where = f"{table.page}:{lineno}"
            flags = []
            for name in names:
                found = [f for f in scope if name in f.names]
                if not found:
                    problems.append(f"{where}: '{path}' has no flag {name}")
                    continue
                if found[0] not in flags:
                    flags.append(found[0])
            if not flags:
                continue
            env_col = table.column("env")
            want_env = set().union(*(f.env for f in flags))
            if env_col is None:
                if want_env:
                    problems.append(
                        f"{where}: {flags[0].primary()} reads "
                        f"{', '.join(sorted(want_env))} but the table has no "
                        f"environment column")
            else:
                cell = cells[env_col] if env_col < len(cells) else ""
                have = {t for t in backticked(cell)
                        if re.fullmatch(r"[A-Z][A-Z0-9_]+", t)}
                if have != want_env:
                    problems.append(
                        f"{where}: the environment of "
                        f"{', '.join(f.primary() for f in flags)} is "
                        f"{sorted(want_env) or 'none'} in '{path} --help', "
                        f"{sorted(have) or 'none'} in the doc")
            default_col = table.column("default")
            for flag in flags:
                if flag.default is None:
                    continue
                if default_col is None:
                    problems.append(
                        f"{where}: {flag.primary()} defaults to "
                        f"'{flag.default}' but the table has no default column")
                    continue
                cell = cells[default_col] if default_col < len(cells) else ""
                if not same_default(flag.default, cell):
                    problems.append(
                        f"{where}: {flag.primary()} defaults to "
                        f"'{flag.default}' in '{path} --help', the doc says "
                        f"'{cell}'")
    return problems


def check_readme_links(source, pages):
    with open(os.path.join(source, "README.md"), encoding="utf-8") as f:
        readme = f.read()
    return [f"{page} is not linked from README.md" for page in pages
            if f"({page}" not in readme]


METRIC = re.compile(r'"((?:gpulet|rest_client)_[a-z0-9_]+)"')
# A file that registers metrics names the metrics layer: its include, the
# metrics:: namespace or a Registry.
REGISTERS = re.compile(r"metrics|Registry")


def registered_metrics(source):
    names = {}
    for path in glob.glob(os.path.join(source, "src", "**", "*.*"),
                          recursive=True):
        rel = os.path.relpath(path, source)
        if not rel.endswith((".cc", ".h")) or rel.endswith("_test.cc") or \
                "/testing/" in rel or "fuzz" in rel:
            continue
        with open(path, encoding="utf-8") as f:
            text = f.read()
        if not REGISTERS.search(text):
            continue
        for name in METRIC.findall(text):
            names.setdefault(name, rel)
    return names


def check_metrics(source, pages):
    code = registered_metrics(source)
    page = os.path.join("docs", "metrics.md")
    documented = {}
    for table in tables(page, pages.get(page, [])):
        for lineno, cells in table.rows:
            if cells:
                for name in backticked(cells[0]):
                    if re.fullmatch(r"(gpulet|rest_client)_[a-z0-9_]+", name):
                        documented[name] = lineno
    problems = [f"metric {name} ({where}) has no row in docs/metrics.md"
                for name, where in sorted(code.items())
                if name not in documented]
    problems += [f"docs/metrics.md:{line}: {name} is registered nowhere in src/"
                 for name, line in sorted(documented.items())
                 if name not in code]
    if not code:
        problems.append("no metric registration found under src/")
    return problems


# -------------------------------------------------------------- examples


def examples(pages):
    """(page, line, [(command, [expected lines])]) of every runnable block."""
    out = []
    for page, lines in pages.items():
        i = 0
        while i < len(lines):
            m = re.match(r"^```(.*)$", lines[i])
            if not m:
                i += 1
                continue
            info = m.group(1).split()
            start = i + 1
            j = start
            while j < len(lines) and not lines[j].startswith("```"):
                j += 1
            if "runnable" in info:
                steps = []
                k = start
                while k < j:
                    line = lines[k]
                    if line.startswith("$ "):
                        command = line[2:]
                        while command.endswith("\\") and k + 1 < j:
                            k += 1
                            command = command[:-1] + " " + lines[k].strip()
                        steps.append((command, []))
                    elif steps:
                        steps[-1][1].append(line)
                    else:
                        out.append((page, k + 1, None))
                    k += 1
                out.append((page, start, steps))
            i = j + 1
    return out


def matches(expected, actual):
    """Whether `actual` lines are `expected` lines, "..." matching any run."""
    if not expected:
        return not actual
    if expected[0] == "...":
        return any(matches(expected[1:], actual[n:])
                   for n in range(len(actual) + 1))
    return bool(actual) and actual[0] == expected[0] and \
        matches(expected[1:], actual[1:])


def check_examples(build, pages):
    problems = []
    scratch = tempfile.mkdtemp(prefix="gpulet-docs-")
    try:
        os.symlink(os.path.abspath(build), os.path.join(scratch, "build"))
        env = {
            "PATH": os.path.join(os.path.abspath(build), "bin") +
            ":/usr/bin:/bin",
            "HOME": scratch,
            "LANG": "C.UTF-8",
        }
        found = 0
        for page, line, steps in examples(pages):
            if steps is None:
                problems.append(f"{page}:{line}: a runnable block must start "
                                f"with a command ('$ ...')")
                continue
            for command, expected in steps:
                found += 1
                run = subprocess.run(
                    ["bash", "-c", command], cwd=scratch, env=env,
                    stdout=subprocess.PIPE, stderr=subprocess.STDOUT,
                    text=True, timeout=120)
                actual = run.stdout.splitlines()
                while expected and expected[-1] == "":
                    expected = expected[:-1]
                if run.returncode != 0:
                    problems.append(
                        f"{page}:{line}: '{command}' exited "
                        f"{run.returncode}: {run.stdout.strip()[:300]}")
                elif not matches(expected, actual):
                    problems.append(
                        f"{page}:{line}: '{command}' printed\n  " +
                        "\n  ".join(actual[:40]) + "\nwhere the doc shows\n  " +
                        "\n  ".join(expected[:40]))
        if found == 0:
            problems.append("no runnable example found in docs/")
    finally:
        shutil.rmtree(scratch, ignore_errors=True)
    return problems


# ------------------------------------------------------------- self-test


def self_test():
    help_text = """x
Usage: gpulet [OPTIONS] SUBCOMMAND

Options:
  -h,--help                   Print this help message and exit
  --driver-root,--nvidia-driver-root TEXT=/ (Env:NVIDIA_DRIVER_ROOT)
                              Root
  --timeout-ms INT:POSITIVE=10000
                              How long
  --oneshot                   Label once and exit [env: GFD_ONESHOT]
  --kubeconfig TEXT           file (default: the files of $KUBECONFIG merged)
  --mig-strategy              How [env: MIG_STRATEGY] [default: none]

Subcommands:
  devices                     List
"""
    flags, subs = parse_help(help_text)
    assert subs == ["devices"], subs
    got = {f.primary(): (f.names, f.env, f.default) for f in flags}
    assert got["--driver-root"] == (
        ["--driver-root", "--nvidia-driver-root"], {"NVIDIA_DRIVER_ROOT"}, "/"
    ), got
    assert got["--timeout-ms"] == (["--timeout-ms"], set(), "10000"), got
    assert got["--oneshot"] == (["--oneshot"], {"GFD_ONESHOT"}, None), got
    assert got["--kubeconfig"][1] == {"KUBECONFIG"}, got
    assert got["--mig-strategy"][1:] == ({"MIG_STRATEGY"}, "none"), got
    assert command_paths("gpulet vfio bind\\|unbind <gpu>...", None) == {
        "gpulet vfio", "gpulet vfio bind", "gpulet vfio unbind"}
    assert command_paths("xid --gpu G", "gpulet sim") == {"gpulet sim xid"}
    assert command_paths("--socket PATH", "gpulet sim") == set()
    assert same_default("20", "`20.0`")
    assert not same_default("20", "`40`")
    assert same_default("the driver root", "the driver root")
    assert same_default("[a,b]", "`a`, `b`")
    assert not same_default("[a,b]", "`a`")
    assert matches(["a", "...", "d"], ["a", "b", "c", "d"])
    assert not matches(["a", "...", "d"], ["a", "b"])

    cmd = Command("gpulet")
    cmd.flags = flags
    commands = {"gpulet": cmd, "gpulet devices": Command("gpulet devices")}
    good = [
        "# `gpulet devices`",
        "<!-- flags: gpulet -->",
        "| flag | environment | default |",
        "|---|---|---|",
        "| `--driver-root`, `--nvidia-driver-root` | `NVIDIA_DRIVER_ROOT` | `/` |",
        "| `--timeout-ms N` | — | `10000` |",
        "| `--oneshot` | `GFD_ONESHOT` | off |",
        "| `--kubeconfig` | `KUBECONFIG` | none |",
        "| `--mig-strategy` | `MIG_STRATEGY` | `none` |",
    ]
    assert check_commands(commands, {"p.md": good}) == []

    def fails(lines, why):
        problems = check_commands(commands, {"p.md": lines})
        assert problems, why

    fails([l for l in good if "--oneshot" not in l], "a flag without a row")
    fails([l.replace("`10000`", "`5000`") for l in good], "another default")
    fails([l.replace("`GFD_ONESHOT`", "—") for l in good], "no variable")
    fails([l.replace("| `NVIDIA_DRIVER_ROOT` |", "| `X` |") for l in good],
          "another variable")
    fails(good[1:], "a command without an entry")
    fails(good + ["| `--bogus` | — | none |"], "a flag the command lacks")
    fails([l.replace(", `--nvidia-driver-root`", "") for l in good],
          "an alias left out")
    print("self-test passed")


def main():
    parser = argparse.ArgumentParser()
    parser.add_argument("--source")
    parser.add_argument("--build")
    parser.add_argument("--self-test", action="store_true")
    parser.add_argument("--only", choices=["commands", "links", "metrics",
                                           "examples"])
    args = parser.parse_args()
    if args.self_test:
        self_test()
        return 0
    pages = read_pages(args.source)
    problems = []
    if args.only in (None, "commands"):
        gpulet = os.path.join(args.build, "bin", "gpulet")
        problems += check_commands(read_commands(gpulet), pages)
    if args.only in (None, "links"):
        problems += check_readme_links(args.source, pages)
    if args.only in (None, "metrics"):
        problems += check_metrics(args.source, pages)
    if args.only in (None, "examples"):
        problems += check_examples(args.build, pages)
    for p in problems:
        print(p)
    if problems:
        print(f"{len(problems)} problem(s); see the top of "
              f"test/docs/check_docs.py for the doc formats checked")
        return 1
    print("docs match the code")
    return 0


if __name__ == "__main__":
    sys.exit(main())
