#!/usr/bin/env python3
"""Checks that gpulet's layers point down.

The layer order is read from the first fenced block of docs/architecture.md,
one row per line, top row first:

    cli            argv, subcommands ...
    plugin registration health runtime   I/O ...

The names of a row are the words before the first run of two or more spaces;
what follows is description. A folder src/<name>/ is the layer <name>
(sim/ belongs to nvml's folder and so counts as nvml). A layer may
use the layers of the rows below its own row; layers on one row do not use
each other.

Fails, naming file and line, when:
  - a file under src/<layer>/ has `#include "src/<other>/..."` and <other>
    is not below <layer>;
  - a target_link_libraries() in src/<layer>/CMakeLists.txt names
    gpulet_<other> and <other> is not below <layer>;
  - a folder under src/ is not in the diagram, or the diagram names a layer
    that has no folder.

Usage: check_layers.py [--root DIR] [--self-test]
"""

import argparse
import os
import re
import shutil
import sys
import tempfile

INCLUDE = re.compile(r'^\s*#\s*include\s+"src/([a-z0-9_]+)/')
LINK_CALL = re.compile(r'target_link_libraries\s*\(([^)]*)\)', re.S)
LAYER_LIB = re.compile(r'\bgpulet_([a-z0-9_]+)\b')
NAME = re.compile(r'^[a-z][a-z0-9_]*$')
SOURCE_SUFFIXES = ('.h', '.cc', '.c', '.cpp', '.hpp', '.inc')


def read_rows(doc_path):
    """The diagram's rows, top first: a list of lists of layer names."""
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
                             f'not a layer name: {bad[0]!r}')
        rows.append(names)
    if not rows:
        raise ValueError(f'{doc_path}: no fenced layer diagram found')
    return rows


def ranks(rows):
    """Layer name -> rank; higher ranks sit higher."""
    out = {}
    for i, names in enumerate(rows):
        for name in names:
            if name in out:
                raise ValueError(f'layer {name!r} appears twice in the diagram')
            out[name] = len(rows) - i
    return out


def check(root, doc_path):
    """Returns a list of problems (strings); empty when the layers hold."""
    rank = ranks(read_rows(doc_path))
    src = os.path.join(root, 'src')
    folders = sorted(d for d in os.listdir(src)
                     if os.path.isdir(os.path.join(src, d)))
    problems = []
    for folder in folders:
        if folder not in rank:
            problems.append(f'src/{folder}/: folder is not a layer in '
                            f'{os.path.relpath(doc_path, root)}')
    for name in sorted(rank):
        if name not in folders:
            problems.append(f'{os.path.relpath(doc_path, root)}: layer '
                            f'{name!r} has no folder src/{name}/')

    def points_up(layer, other):
        return other in rank and other != layer and rank[other] >= rank[layer]

    for layer in folders:
        if layer not in rank:
            continue
        for dirpath, _, files in os.walk(os.path.join(src, layer)):
            for file in sorted(files):
                path = os.path.join(dirpath, file)
                rel = os.path.relpath(path, root)
                if file.endswith(SOURCE_SUFFIXES):
                    problems += check_includes(path, rel, layer, points_up)
                elif file == 'CMakeLists.txt':
                    problems += check_links(path, rel, layer, points_up)
    return problems


def check_includes(path, rel, layer, points_up):
    problems = []
    with open(path, encoding='utf-8', errors='replace') as f:
        for number, line in enumerate(f, 1):
            m = INCLUDE.match(line)
            if m and points_up(layer, m.group(1)):
                problems.append(f'{rel}:{number}: {layer} includes '
                                f'{line.strip()[len("#include "):]}, '
                                f'but {m.group(1)} is not below {layer}')
    return problems


def check_links(path, rel, layer, points_up):
    problems = []
    with open(path, encoding='utf-8') as f:
        text = f.read()
    # Comments could name libraries; drop them, keeping line numbers.
    text = re.sub(r'#[^\n]*', '', text)
    for call in LINK_CALL.finditer(text):
        for lib in LAYER_LIB.finditer(call.group(1)):
            other = lib.group(1)
            if points_up(layer, other):
                number = text.count('\n', 0, call.start(1) + lib.start()) + 1
                problems.append(f'{rel}:{number}: {layer} links '
                                f'gpulet_{other}, but {other} is not below '
                                f'{layer}')
    return problems


def self_test():
    """The checker finds what it should on a small made-up tree."""
    doc = '# x\n\n```\ntop            wires\nleft right     I/O\n' \
          'base           helpers (every layer)\n```\n'
    cases = {
        'clean': ({'top/a.cc': '#include "src/left/b.h"\n',
                   'left/b.h': '#include "src/base/c.h"\n',
                   'right/CMakeLists.txt':
                       'target_link_libraries(gpulet_right PUBLIC gpulet_base)\n',
                   'base/c.h': '#include <vector>\n'}, 0),
        'include up': ({'top/a.cc': '', 'right/x.h': '',
                        'base/c.cc': '#include "src/left/b.h"\n',
                        'left/b.h': ''}, 1),
        'include sideways': ({'top/a.cc': '', 'base/c.h': '',
                              'left/b.h': '#include "src/right/x.h"\n',
                              'right/x.h': ''}, 1),
        'link up': ({'top/a.cc': '', 'left/b.h': '', 'right/x.h': '',
                     'base/CMakeLists.txt':
                         '# gpulet_top in a comment is fine\n'
                         'target_link_libraries(gpulet_base\n'
                         '  PUBLIC gpulet_common\n  PRIVATE gpulet_top)\n'}, 1),
        'folder missing from diagram': ({'top/a.cc': '', 'left/b.h': '',
                                         'right/x.h': '', 'base/c.h': '',
                                         'extra/d.h': ''}, 1),
        'diagram names a missing folder': ({'top/a.cc': '', 'left/b.h': '',
                                            'base/c.h': ''}, 1),
    }
    failures = 0
    for name, (files, want) in cases.items():
        root = tempfile.mkdtemp(prefix='layers.')
        try:
            os.makedirs(os.path.join(root, 'docs'))
            with open(os.path.join(root, 'docs', 'architecture.md'), 'w') as f:
                f.write(doc)
            for rel, text in files.items():
                path = os.path.join(root, 'src', rel)
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
    print('layers point down')
    return 0


if __name__ == '__main__':
    sys.exit(main())
