"""Files a call writes, read from patch texts and shell commands."""

from __future__ import annotations

import pytest

from windowkeeper.session._writes import patch_headers, patch_paths, shell_write_paths


@pytest.mark.parametrize(
    ("command", "paths"),
    [
        ("echo hi > a.txt", ["a.txt"]),
        ("printf '%s' x >> logs/run.md", ["logs/run.md"]),
        ("ls &> all.log", ["all.log"]),
        ("cat > notes.md <<'EOF'\nline > not_a_file\nEOF\nls", ["notes.md"]),
        ("pytest -q 2>&1 | tee -a run.log", ["run.log"]),
        ("sed -i 's/a/b/' src/x.py src/y.py", ["src/x.py", "src/y.py"]),
        ("sed -i.bak -e s/a/b/ f.txt", ["f.txt"]),
        ("sudo sed --in-place=.orig 's/x/y/' /etc/app.conf", ["/etc/app.conf"]),
        ('cd src && echo "it\'s" > q.txt; echo b >> q.txt', ["q.txt"]),
        ('echo "unclosed > z', ["z"]),
        ("sed -n 1,5p f.py", []),
        ("grep -n foo a.py > /dev/null 2>&1", []),
        ("timeout /t 3 /nobreak >nul", []),
        ('for f in *.cs; do touch "${f}.meta" > "$f.log"; done', []),
    ],
)
def test_shell_write_paths(command: str, paths: list[str]) -> None:
    """Redirection targets, tee and sed -i files; no here-document body, device or variable."""
    assert shell_write_paths(command) == paths


PATCH = (
    "*** Begin Patch\n"
    "*** Update File: src/a.py\n"
    "*** Move to: src/b.py\n"
    "@@ def f():\n"
    "-    return 1\n"
    "+    return 2\n"
    "*** Delete File: old.py\n"
    "*** Add File: new.py\n"
    "+++ not a header\n"
    "*** End Patch"
)
DIFF = (
    "diff --git a/x.py b/x.py\n--- a/x.py\n+++ b/x.py\n@@ -1 +1 @@\n-a\n+++ b\n"
    "--- a/gone.py\n+++ /dev/null\n--- /dev/null\n+++ b/new.py\t2024-01-01 10:00\n"
)


@pytest.mark.parametrize(
    ("text", "paths"),
    [
        (PATCH, ["src/a.py", "src/b.py", "old.py", "new.py"]),
        (DIFF, ["x.py", "gone.py", "new.py"]),
        ("no patch here\n+++ b/x.py", []),
        (PATCH + "\n" + PATCH, ["src/a.py", "src/b.py", "old.py", "new.py"]),
    ],
)
def test_patch_paths(text: str, paths: list[str]) -> None:
    """The patch format's headers and a unified diff's file lines, each file once; a ``+++``
    line that does not follow a ``---`` line is a hunk's line."""
    assert patch_paths(text) == paths


def test_patch_headers_locate_their_lines() -> None:
    """Each header is given with the span of its line (what masking keeps)."""
    headers = patch_headers(PATCH)
    assert [PATCH[start:end] for start, end, _ in headers][:2] == [
        "*** Update File: src/a.py",
        "*** Move to: src/b.py",
    ]
