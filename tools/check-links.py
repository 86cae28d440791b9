#!/usr/bin/env python3
"""Fails when a relative link in README.md, CHANGELOG.md, CONTRIBUTING.md or docs/**/*.md
does not resolve: the file (or folder) must exist, and a #anchor into a Markdown file must
name one of its headings (GitHub's heading ids). External links (http:, https:, mailto:)
are not fetched. Prints file:line: link -- reason for every broken link."""

import os
import re
import sys
import urllib.parse

ROOT = os.path.normpath(os.path.join(os.path.dirname(os.path.abspath(__file__)), ".."))

FENCE = re.compile(r"^\s*(```|~~~)")
CODE_SPAN = re.compile(r"(`+)(.+?)\1")
INLINE_LINK = re.compile(r"!?\[(?:[^\[\]]|\[[^\]]*\])*\]\(\s*<?([^)\s>]+)>?(?:\s+\"[^\"]*\")?\s*\)")
REFERENCE_DEF = re.compile(r"^\s{0,3}\[[^\]]+\]:\s*<?(\S+?)>?(?:\s+.*)?$")
HEADING = re.compile(r"^\s{0,3}(#{1,6})\s+(.*?)\s*#*\s*$")
HTML_ANCHOR = re.compile(r"<a\s+(?:name|id)=\"([^\"]+)\"")


def markdown_files():
    for name in ("README.md", "CHANGELOG.md", "CONTRIBUTING.md"):
        if os.path.isfile(os.path.join(ROOT, name)):
            yield name
    for folder, dirs, files in os.walk(os.path.join(ROOT, "docs")):
        dirs.sort()
        for name in sorted(files):
            if name.endswith(".md"):
                yield os.path.relpath(os.path.join(folder, name), ROOT)


def lines_outside_code(path):
    """(line number, text) of the lines outside fenced code blocks."""
    in_fence = None
    with open(os.path.join(ROOT, path), encoding="utf-8") as f:
        for number, line in enumerate(f, 1):
            m = FENCE.match(line)
            if m:
                if in_fence is None:
                    in_fence = m.group(1)
                elif m.group(1) == in_fence:
                    in_fence = None
                continue
            if in_fence is None:
                yield number, line.rstrip("\n")


def slug(heading):
    """GitHub's id for a heading: the text without markup, lower case, punctuation dropped,
    spaces to hyphens."""
    text = CODE_SPAN.sub(lambda m: m.group(2), heading)
    text = re.sub(r"!?\[([^\]]*)\]\([^)]*\)", r"\1", text)   # links: their text
    text = re.sub(r"<[^>]+>", "", text)                      # inline HTML tags
    text = text.replace("*", "").lower()
    text = "".join(c for c in text if c.isalnum() or c in " -_")
    return text.replace(" ", "-")


_anchors = {}


def anchors(path):
    if path not in _anchors:
        ids, seen = set(), {}
        for _, line in lines_outside_code(path):
            m = HEADING.match(line)
            if m:
                base = slug(m.group(2))
                n = seen.get(base, 0)
                seen[base] = n + 1
                ids.add(base if n == 0 else f"{base}-{n}")
            for a in HTML_ANCHOR.findall(line):
                ids.add(a)
        _anchors[path] = ids
    return _anchors[path]


def links(path):
    for number, line in lines_outside_code(path):
        m = REFERENCE_DEF.match(line)
        if m:
            yield number, m.group(1)
            continue
        for m in INLINE_LINK.finditer(CODE_SPAN.sub("", line)):
            yield number, m.group(1)


def check(path, target):
    if re.match(r"^[a-z][a-z0-9+.-]*:", target, re.I):
        return None                                  # http:, https:, mailto:, ...
    file_part, _, anchor = target.partition("#")
    file_part = urllib.parse.unquote(file_part)
    if file_part:
        resolved = os.path.normpath(os.path.join(os.path.dirname(path), file_part))
        if resolved.startswith(".."):
            return "points outside the repository"
        if not os.path.exists(os.path.join(ROOT, resolved)):
            return f"no such file: {resolved}"
    else:
        resolved = path
    if anchor and resolved.endswith(".md") and os.path.isfile(os.path.join(ROOT, resolved)):
        if urllib.parse.unquote(anchor).lower() not in anchors(resolved):
            return f"no heading with the id #{anchor} in {resolved}"
    return None


def main():
    broken = 0
    checked = 0
    for path in markdown_files():
        for number, target in links(path):
            checked += 1
            reason = check(path, target)
            if reason:
                broken += 1
                print(f"{path}:{number}: {target} -- {reason}")
    if broken:
        print(f"check-links: {broken} of {checked} relative links do not resolve", file=sys.stderr)
        return 1
    print(f"check-links: {checked} links, all resolve")
    return 0


if __name__ == "__main__":
    sys.exit(main())
