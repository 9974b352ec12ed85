#!/usr/bin/env python3
"""Checks what the CDI library injected with two specs on one node: the
toolkit-style nvidia.com/gpu spec and the device plugin's own
k8s.device-plugin.nvidia.com/gpu spec for the same GPUs. Every name of both
kinds must resolve, and each plugin name must inject exactly what the
toolkit name with the same device name injects alone.

usage: compare-kinds.py TOOLKIT_OCI_JSON BOTH_OCI_JSON
"""
import json
import sys

TOOLKIT = "nvidia.com/gpu="
PLUGIN = "k8s.device-plugin.nvidia.com/gpu="


def main():
    with open(sys.argv[1]) as f:
        toolkit = json.load(f)
    with open(sys.argv[2]) as f:
        both = json.load(f)
    failures = []
    if len(both) != 2 * len(toolkit):
        failures.append("%d names with both specs, want %d" %
                        (len(both), 2 * len(toolkit)))
    for name, want in sorted(toolkit.items()):
        other = PLUGIN + name[len(TOOLKIT):]
        if both.get(name) != want:
            failures.append("%s injects differently beside the plugin's spec"
                            % name)
        if both.get(other) != want:
            failures.append("%s does not inject what %s injects" %
                            (other, name))
    if failures:
        sys.exit("\n".join(failures))
    print("both specs on one node: %d names resolve without conflict"
          % len(both))


if __name__ == "__main__":
    main()
