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


@pytest.mark.parametrize(
    ("command", "paths"),
    [
        ('echo x > "my notes.md"', ["my notes.md"]),  # quotes removed
        ("echo hi>a.txt", ["a.txt"]),  # no space around the operator
        ("echo hi > out+err.log", ["out+err.log"]),  # one word, whatever its characters
        ("> empty.txt", ["empty.txt"]),  # a redirection that opens the line
        ("echo hi >", []),  # no target at the end of the line
        ("echo a > x.txt; tee y.txt", ["x.txt", "y.txt"]),  # the command after the target
        ("echo hi | tee out.log", ["out.log"]),
        ("A=1; echo hi | tee b.log", ["b.log"]),  # a lone assignment is no command
        ("LC_ALL=C sed -i s/a/b/ f.txt", ["f.txt"]),  # an assignment before the command
        ("sed -i --expression=s/a/b/ f.txt", ["f.txt"]),  # the script given by a long option
        ("sed -i s/a/b/ - f.txt", ["f.txt"]),  # "-" is standard input, never edited in place
        ("sed -i - f.txt", []),  # "-" is no script either: sed refuses the command
        ("cat > n.md <<'EOF'\nx\ny > not_a_file\nEOF\nls > l.txt", ["n.md", "l.txt"]),  # a body
        ("cat <<A > a.md; cat <<B > b.md\nA\nnot > x\nB\necho > c.md", ["a.md", "b.md", "c.md"]),
    ],
)
def test_shell_write_paths_edges(command: str, paths: list[str]) -> None:
    """How the words of a command line are split, and where each command starts."""
    assert shell_write_paths(command) == paths


@pytest.mark.parametrize(
    ("text", "paths"),
    [
        ('--- "a/my file.py"\n+++ "b/my file.py"\n', ["my file.py"]),  # a quoted path
        ('--- a/x.py\n+++ ""\n', ["x.py"]),  # an empty quoted path is no path
        ('--- "\n+++ "\n', ['"']),  # a lone quote is the name, not a quoted one
    ],
)
def test_patch_paths_quoted(text: str, paths: list[str]) -> None:
    """A unified diff quotes a path with spaces; the quotes are removed, once."""
    assert patch_paths(text) == paths


def test_a_deleted_file_is_located_at_its_minus_line() -> None:
    """A deleted file's header is its ``---`` line (the ``+++`` side is /dev/null)."""
    spans = [(DIFF[start:end], path) for start, end, path in patch_headers(DIFF)]
    assert spans[:2] == [("+++ b/x.py", "x.py"), ("--- a/gone.py", "gone.py")]
    assert [path for _, path in spans] == ["x.py", "gone.py", "new.py"]
