#!/usr/bin/env python3
"""Injects every device of a profile's CDI spec with gpulet-runtime and
compares the result with what the CDI project's Go library injected for the
same name (oci.json from cdi-validate --each): device nodes, cgroup allow
rules, mounts, environment and hooks must be the same.

usage: compare-runtime.py GPULET_RUNTIME WORK_DIR [SPEC_DIR OCI_JSON]
WORK_DIR is a validate-profile.sh work dir (root/, cdi/, oci.json); SPEC_DIR
and OCI_JSON name another spec dir and reference result inside it.
"""
import json
import os
import subprocess
import sys


def device_nodes(spec):
    return sorted((d["path"], d.get("type"), d.get("major"), d.get("minor"))
                  for d in spec.get("linux", {}).get("devices", []))


def allow_rules(spec):
    rules = spec.get("linux", {}).get("resources", {}).get("devices", [])
    return sorted((r.get("type"), r.get("major"), r.get("minor"),
                   r.get("access")) for r in rules if r.get("allow"))


def mounts(spec):
    return sorted((m["destination"], m["source"], tuple(m.get("options", [])))
                  for m in spec.get("mounts", []))


def env(spec):
    return sorted(e for e in spec["process"].get("env", [])
                  if not e.startswith("PATH="))


def hooks(spec):
    return sorted((stage, h["path"], tuple(h.get("args", [])))
                  for stage, hs in spec.get("hooks", {}).items() for h in hs)


def inject(runtime, work, spec_dir, name, n):
    bundle = os.path.join(work, "bundles", str(n))
    os.makedirs(os.path.join(bundle, "rootfs"), exist_ok=True)
    config = {
        "ociVersion": "1.0.2",
        "process": {"user": {"uid": 0, "gid": 0}, "args": ["/bin/sh"],
                    "env": ["PATH=/usr/bin:/bin"], "cwd": "/"},
        "root": {"path": "rootfs"},
        "annotations": {"cdi.k8s.io/compare": name},
        "linux": {},
    }
    with open(os.path.join(bundle, "config.json"), "w") as f:
        json.dump(config, f)
    runtime_config = os.path.join(work, "runtime.yaml")
    with open(runtime_config, "w") as f:
        f.write("runtime: /bin/true\n")
        f.write("driverRoot: %s\n" % os.path.join(work, "root"))
        f.write("specDirs: [%s]\n" % os.path.join(work, spec_dir))
    env_vars = dict(os.environ, GPULET_RUNTIME_CONFIG=runtime_config)
    result = subprocess.run([runtime, "create", "--bundle", bundle, "c%d" % n],
                            env=env_vars, capture_output=True, text=True)
    if result.returncode != 0:
        sys.exit("gpulet-runtime create for %s failed: %s" %
                 (name, result.stderr.strip()))
    with open(os.path.join(bundle, "config.json")) as f:
        return json.load(f)


def main():
    runtime, work = sys.argv[1], sys.argv[2]
    spec_dir, oci = (sys.argv[3], sys.argv[4]) if len(sys.argv) > 4 else (
        "cdi", "oci.json")
    with open(os.path.join(work, oci)) as f:
        reference = json.load(f)
    failures = []
    for n, (name, want) in enumerate(sorted(reference.items())):
        got = inject(runtime, work, spec_dir, name, n)
        for what, fn in (("device nodes", device_nodes),
                         ("cgroup allow rules", allow_rules),
                         ("mounts", mounts), ("env", env), ("hooks", hooks)):
            if fn(got) != fn(want):
                failures.append("%s: %s differ\n  gpulet-runtime: %s\n"
                                "  CDI library:    %s" %
                                (name, what, fn(got), fn(want)))
    if failures:
        sys.exit("\n".join(failures))
    print("gpulet-runtime injects what the CDI library injects for %d names"
          % len(reference))


if __name__ == "__main__":
    main()
