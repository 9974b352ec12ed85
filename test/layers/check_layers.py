#!/usr/bin/env python3
"""Checks that gpulet's groups point down and that tests stay out of products.

The group order is read from the first fenced block of docs/architecture.md,
one row per line, top row first:

    cli                         argv, subcommands ...
    plugin dra cluster runtime  one group per program ...

The names of a row are the words before the first run of two or more spaces;
what follows is description. A folder src/<name>/ is the group <name>; its
folders (src/<name>/<folder>/) are the libraries of that group. A group may
use the groups of the rows below its own row; groups on one row do not use
each other; the folders of one group may use each other.

The simulator, sim/ beside src/, is outside the product's groups: it may use
the groups in SIM_USES, and under src/ only the cli group and test code
(tests, fuzz targets, testing/ folders) may include it.

Fails, naming file and line, when:
  - a file under src/<group>/ has `#include "src/<other>/..."` and <other>
    is not below <group>, or a file under sim/ includes a group it may not;
  - a production file (not a test, not a fuzz target, not under a testing/
    folder) includes a header of a testing/ folder, or one outside cli
    includes "sim/...";
  - a target_link_libraries() in a CMakeLists.txt under src/<group>/ names a
    gpulet_ library that a folder of a group not below <group> defines;
  - a folder under src/ is not in the diagram, or the diagram names a group
    that has no folder.

Usage: check_layers.py [--root DIR] [--self-test]
"""

import argparse
import os
import re
import shutil
import sys
import tempfile

INCLUDE = re.compile(r'^\s*#\s*include\s+"((?:src/([a-z0-9_]+)|sim)/[^"]*)"')
LINK_CALL = re.compile(r'target_link_libraries\s*\(([^)]*)\)', re.S)
ADD_LIBRARY = re.compile(r'add_library\s*\(\s*(gpulet_[a-z0-9_]+)\b')
LIB = re.compile(r'\bgpulet_[a-z0-9_]+\b')
NAME = re.compile(r'^[a-z][a-z0-9_]*$')
SOURCE_SUFFIXES = ('.h', '.cc', '.c', '.cpp', '.hpp', '.inc')
# The groups the simulator may include: the foundation and NVML's ABI.
SIM_USES = ('base', 'gpu')
# The group that may include the simulator in production code: `gpulet sim`.
SIM_USER = 'cli'


def read_rows(doc_path):
    """The diagram's rows, top first: a list of lists of group names."""
    with open(doc_path, encoding='utf-8') as f:
        lines = f.read().splitlines()
    rows, inside = [], False
    for line in lines:
        if line.startswith('```'):
            if inside:
                break
            inside = True
            continue
        if not inside or not line.strip():
            continue
        names = re.split(r'\s{2,}', line.strip(), maxsplit=1)[0].split()
        bad = [n for n in names if not NAME.match(n)]
        if bad:
            raise ValueError(f'{doc_path}: diagram row {line!r}: '
                             f'not a group name: {bad[0]!r}')
        rows.append(names)
    if not rows:
        raise ValueError(f'{doc_path}: no fenced group diagram found')
    return rows


def ranks(rows):
    """Group name -> rank; higher ranks sit higher."""
    out = {}
    for i, names in enumerate(rows):
        for name in names:
            if name in out:
                raise ValueError(f'group {name!r} appears twice in the diagram')
            out[name] = len(rows) - i
    return out


def is_test_code(rel):
    """Tests, fuzz targets and the testing/ folders: not shipped."""
    base = os.path.basename(rel)
    return ('/testing/' in f'/{rel}' or base.endswith(('_test.cc', '_fuzz.cc'))
            or '/testdata/' in f'/{rel}')


def sources(top):
    for dirpath, dirs, files in os.walk(top):
        dirs.sort()
        for file in sorted(files):
            yield os.path.join(dirpath, file)


def library_groups(src, groups):
    """gpulet_<lib> -> the group whose CMakeLists.txt defines it."""
    out = {}
    for group in groups:
        for path in sources(os.path.join(src, group)):
            if os.path.basename(path) == 'CMakeLists.txt':
                with open(path, encoding='utf-8') as f:
                    for m in ADD_LIBRARY.finditer(f.read()):
                        out[m.group(1)] = group
    return out


def check(root, doc_path):
    """Returns a list of problems (strings); empty when the order holds."""
    rank = ranks(read_rows(doc_path))
    src = os.path.join(root, 'src')
    groups = sorted(d for d in os.listdir(src)
                    if os.path.isdir(os.path.join(src, d)))
    problems = []
    for group in groups:
        if group not in rank:
            problems.append(f'src/{group}/: folder is not a group in '
                            f'{os.path.relpath(doc_path, root)}')
    for name in sorted(rank):
        if name not in groups:
            problems.append(f'{os.path.relpath(doc_path, root)}: group '
                            f'{name!r} has no folder src/{name}/')

    def may_use(group, other):
        if other == 'sim':
            return False
        return other not in rank or other == group or rank[other] < rank[group]

    libs = library_groups(src, [g for g in groups if g in rank])
    for group in groups:
        if group not in rank:
            continue
        for path in sources(os.path.join(src, group)):
            rel = os.path.relpath(path, root)
            if path.endswith(SOURCE_SUFFIXES):
                problems += check_includes(path, rel, group, may_use)
            elif os.path.basename(path) == 'CMakeLists.txt':
                problems += check_links(path, rel, group, libs, may_use)
    sim = os.path.join(root, 'sim')
    if os.path.isdir(sim):
        for path in sources(sim):
            if path.endswith(SOURCE_SUFFIXES):
                rel = os.path.relpath(path, root)
                problems += check_includes(
                    path, rel, 'sim', lambda _, other: other in SIM_USES + ('sim',))
    return problems


def check_includes(path, rel, group, may_use):
    problems = []
    test = is_test_code(rel)
    with open(path, encoding='utf-8', errors='replace') as f:
        for number, line in enumerate(f, 1):
            m = INCLUDE.match(line)
            if not m:
                continue
            header, other = m.group(1), m.group(2) or 'sim'
            where = f'{rel}:{number}: {group} includes "{header}"'
            if '/testing/' in header and not test:
                problems.append(f'{where}, a test helper, from production code')
            elif other == 'sim':
                if not test and group not in (SIM_USER, 'sim'):
                    problems.append(f'{where}: only {SIM_USER} and tests '
                                    f'may include the simulator')
            elif not may_use(group, other):
                problems.append(f'{where}, but {other} is not below {group}')
    return problems


def check_links(path, rel, group, libs, may_use):
    problems = []
    with open(path, encoding='utf-8') as f:
        text = f.read()
    # Comments could name libraries; drop them, keeping line numbers.
    text = re.sub(r'#[^\n]*', '', text)
    for call in LINK_CALL.finditer(text):
        for lib in LIB.finditer(call.group(1)):
            other = libs.get(lib.group(0))
            if other and not may_use(group, other):
                number = text.count('\n', 0, call.start(1) + lib.start()) + 1
                problems.append(f'{rel}:{number}: {group} links '
                                f'{lib.group(0)} of {other}, but {other} is '
                                f'not below {group}')
    return problems


def self_test():
    """The checker finds what it should on a small made-up tree."""
    doc = '# x\n\n```\ncli            argv\ntop            wires\n' \
          'left right     I/O\nbase           helpers (every group)\n```\n'
    clean = {'src/cli/main.cc': '#include "sim/control.h"\n',
             'src/top/a/a.cc': '#include "src/left/b/b.h"\n',
             'src/left/b/b.h': '#include "src/base/c/c.h"\n',
             'src/left/b/b_test.cc': '#include "src/left/testing/fake.h"\n'
                                     '#include "sim/control.h"\n',
             'src/left/testing/fake.h': '#include "src/left/b/b.h"\n',
             'src/right/x/CMakeLists.txt':
                 'add_library(gpulet_x x.cc)\n'
                 'target_link_libraries(gpulet_x PUBLIC gpulet_c)\n',
             'src/base/c/CMakeLists.txt': 'add_library(gpulet_c c.cc)\n',
             'src/base/c/c.h': '#include <vector>\n',
             'src/base/d/d.h': '#include "src/base/c/c.h"\n',
             'sim/control.h': '#include "src/base/c/c.h"\n'}
    cases = {
        'clean': ({}, 0),
        'include up': ({'src/base/c/c.cc': '#include "src/left/b/b.h"\n'}, 1),
        'include sideways': ({'src/left/b/b.cc': '#include "src/right/x/x.h"\n'}, 1),
        'link up': ({'src/base/c/CMakeLists.txt':
                         '# gpulet_x in a comment is fine\n'
                         'add_library(gpulet_c c.cc)\n'
                         'target_link_libraries(gpulet_c\n'
                         '  PUBLIC gpulet_other\n  PRIVATE gpulet_x)\n'}, 1),
        'testing header in production': (
            {'src/top/a/a.cc': '#include "src/left/testing/fake.h"\n'}, 1),
        'simulator in production': ({'src/top/a/a.h': '#include "sim/control.h"\n'}, 1),
        'simulator includes up': ({'sim/x.cc': '#include "src/top/a/a.h"\n'}, 1),
        'folder missing from diagram': ({'src/extra/e/e.h': ''}, 1),
        'diagram names a missing folder': ({'src/right/x/CMakeLists.txt': None}, 1),
    }
    failures = 0
    for name, (change, want) in cases.items():
        files = dict(clean)
        files.update(change)
        root = tempfile.mkdtemp(prefix='layers.')
        try:
            os.makedirs(os.path.join(root, 'docs'))
            with open(os.path.join(root, 'docs', 'architecture.md'), 'w') as f:
                f.write(doc)
            for rel, text in files.items():
                if text is None:
                    continue
                path = os.path.join(root, rel)
                os.makedirs(os.path.dirname(path), exist_ok=True)
                with open(path, 'w') as f:
                    f.write(text)
            got = check(root, os.path.join(root, 'docs', 'architecture.md'))
        finally:
            shutil.rmtree(root)
        if len(got) != want:
            failures += 1
            print(f'FAIL {name}: want {want} problem(s), got {got}')
        else:
            print(f'ok   {name}')
    return 1 if failures else 0


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    here = os.path.dirname(os.path.abspath(__file__))
    parser.add_argument('--root', default=os.path.dirname(os.path.dirname(here)))
    parser.add_argument('--self-test', action='store_true')
    args = parser.parse_args()
    if args.self_test:
        return self_test()
    doc = os.path.join(args.root, 'docs', 'architecture.md')
    try:
        problems = check(args.root, doc)
    except ValueError as e:
        print(e)
        return 1
    for p in problems:
        print(p)
    if problems:
        print(f'{len(problems)} layering problem(s); the order is the '
              f'diagram in docs/architecture.md')
        return 1
    print('groups point down')
    return 0


if __name__ == '__main__':
    sys.exit(main())
