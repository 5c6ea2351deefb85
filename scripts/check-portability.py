#!/usr/bin/env python3
"""Checks, on Linux, what would break the package on Apple platforms (no Mac runs here).

1. No two tracked paths (files or folders) differ only by case: on a case-insensitive file
   system (every Mac by default) they would be one.
2. Every module a target imports is declared as a dependency of that target (or is the
   platform's own: Foundation, Glibc, …), and every product a target declares is imported
   by it: SwiftPM on Linux builds with undeclared transitive modules, Xcode does not.
3. The SDK modules an app links (NimbusProtocol, Nimbus, NimbusSync, NimbusCloudKit, and the Reading List
   example's model) import Linux-only modules only inside `#if canImport(…)`/`#if os(Linux)`,
   and use no API newer than the deployment targets Package.swift declares (macOS 14,
   iOS 17): a short list of the ones that bit us.

Run from anywhere: `python3 scripts/check-portability.py`. Exit status 1 lists every problem.
`.ci/run` runs it before the tests.
"""
import json
import os
import re
import subprocess
import sys
import tempfile

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))

# Modules of the platforms themselves: nothing to declare.
SYSTEM_MODULES = {
    "Foundation", "FoundationEssentials", "FoundationNetworking", "Dispatch", "Glibc", "Musl", "Darwin",
    "os", "Android", "WinSDK", "Testing", "XCTest", "Synchronization", "_Concurrency", "CoreFoundation",
    "Observation", "RegexBuilder", "Distributed", "Network", "Combine", "SwiftUI", "UIKit", "AppKit", "CoreLocation",
    "Security",
}

# Targets an app on iOS or macOS links.
APPLE_TARGETS = {"NimbusProtocol", "Nimbus", "NimbusSync", "NimbusCloudKit", "ReadingList"}

# Linux-only modules, and the `#if` conditions that may guard their import.
LINUX_ONLY_MODULES = {
    "Glibc": ("canImport(Glibc)", "os(Linux)"),
    "Musl": ("canImport(Musl)", "os(Linux)"),
    "FoundationNetworking": ("canImport(FoundationNetworking)", "os(Linux)"),
    "CBenchSockets": ("canImport(CBenchSockets)", "os(Linux)"),
}

# API newer than macOS 14 / iOS 17 (the deployment targets in Package.swift), as source patterns.
NEWER_API = [
    (r"\bimport\s+Synchronization\b", "the Synchronization module (Mutex, Atomic) needs macOS 15 / iOS 18"),
    (r"\bMutex\s*[<(]", "Mutex needs macOS 15 / iOS 18: use NIOLockedValueBox or an actor"),
    (r"\bAtomic\s*<", "Atomic needs macOS 15 / iOS 18"),
    (r"String\(\s*validating:", "String(validating:) needs macOS 15 / iOS 18"),
    (r"\b(InlineArray|RawSpan|MutableSpan|MutableRawSpan)\b", "spans and InlineArray need macOS 26 / iOS 26"),
    (r"\bTask\.immediate\b|\bTask\s*\(\s*name:", "Task.immediate and named tasks need macOS 26 / iOS 26"),
    (r"\bwithTaskExecutorPreference\b|\bTaskExecutor\b", "task executors need macOS 15 / iOS 18"),
    (r"\bepoll_|\bSO_TIMESTAMPNS\b", "epoll and kernel receive timestamps exist on Linux only"),
]

# End-to-end encryption runs on the device too.
APPLE_TARGETS.add("NimbusCrypto")
# So do the synced documents.
APPLE_TARGETS.add("NimbusDocuments")

IMPORT = re.compile(r"^\s*(?:@[\w]+(?:\([^)]*\))?\s+)*(?:public\s+|package\s+|internal\s+|private\s+|fileprivate\s+)?import\s+(?:(?:struct|class|enum|protocol|func|var|let|typealias)\s+)?([A-Za-z_][A-Za-z0-9_]*)")


def tracked_paths():
    out = subprocess.run(["git", "-C", ROOT, "ls-files", "-z"], capture_output=True, check=True).stdout
    return [p for p in out.decode("utf-8", "surrogateescape").split("\0") if p]


def check_case(paths, problems):
    seen = {}
    for path in paths:
        parts = path.split("/")
        for i in range(1, len(parts) + 1):
            prefix = "/".join(parts[:i])
            other = seen.setdefault(prefix.lower(), prefix)
            if other != prefix:
                problems.append(f"case: '{prefix}' and '{other}' differ only by case (one path on a Mac)")
                seen[prefix.lower()] = prefix  # report each pair once


def package_description():
    scratch = tempfile.mkdtemp(prefix="nimbus-dump-")
    out = subprocess.run(
        ["swift", "package", "--package-path", ROOT, "--scratch-path", scratch, "dump-package"],
        capture_output=True, check=True).stdout
    return json.loads(out)


def target_dependencies(target):
    names = set()
    for dependency in target["dependencies"]:
        kind, value = next(iter(dependency.items()))
        names.add(value[0])  # byName / target / product: the name comes first
    return names


def swift_files(directory):
    for base, _, files in os.walk(directory):
        for name in sorted(files):
            if name.endswith(".swift"):
                yield os.path.join(base, name)


def imports_with_guards(path):
    """(line number, module, the active #if conditions) for each import of the file, and the
    lines with the conditions active on each."""
    stack = []
    lines = []
    with open(path, encoding="utf-8") as handle:
        for number, line in enumerate(handle, 1):
            stripped = line.strip()
            if stripped.startswith("#if "):
                stack.append(stripped[4:])
            elif stripped.startswith("#elseif "):
                if stack:
                    stack[-1] = stripped[8:]
            elif stripped.startswith("#else"):
                if stack:
                    stack[-1] = "!(" + stack[-1] + ")"
            elif stripped.startswith("#endif"):
                if stack:
                    stack.pop()
            lines.append((number, line, list(stack)))
    return lines


def guarded(conditions, allowed):
    return any(not c.startswith("!") and any(a in c for a in allowed) for c in conditions)


def check_targets(description, problems):
    for target in description["targets"]:
        name = target["name"]
        if target["type"] in ("system", "binary", "plugin"):
            continue
        directory = os.path.join(ROOT, target.get("path") or os.path.join(
            "Tests" if target["type"] == "test" else "Sources", name))
        declared = target_dependencies(target)
        files = list(swift_files(directory))
        if not files:
            continue  # a C target
        imported = set()
        for path in files:
            relative = os.path.relpath(path, ROOT)
            for number, line, conditions in imports_with_guards(path):
                match = IMPORT.match(line)
                if match:
                    module = match.group(1)
                    imported.add(module)
                    if module != name and module not in SYSTEM_MODULES and module not in declared:
                        problems.append(f"undeclared: {relative}:{number} imports {module}, which target {name} does not declare")
                    if name in APPLE_TARGETS and module in LINUX_ONLY_MODULES and not guarded(conditions, LINUX_ONLY_MODULES[module]):
                        problems.append(f"linux-only: {relative}:{number} imports {module} outside #if {LINUX_ONLY_MODULES[module][0]}")
                if name in APPLE_TARGETS:
                    code = line.split("//", 1)[0]
                    for pattern, why in NEWER_API:
                        if re.search(pattern, code) and not guarded(conditions, ("os(Linux)",)):
                            problems.append(f"availability: {relative}:{number}: {why}")
        for dependency in target["dependencies"]:
            kind, value = next(iter(dependency.items()))
            if kind == "product" and value[0] not in imported:
                problems.append(f"unused: target {name} declares product {value[0]} but no file imports it")


def main():
    problems = []
    check_case(tracked_paths(), problems)
    check_targets(package_description(), problems)
    for problem in problems:
        print(problem)
    if problems:
        print(f"{len(problems)} portability problem(s)")
        return 1
    print("portability: no path collides by case; every import is declared; the SDK is free of Linux-only and too-new API")
    return 0


if __name__ == "__main__":
    sys.exit(main())
