"""shell_read_path: which shell commands only read one file, and which."""

from __future__ import annotations

from typing import Any

import pytest

from windowkeeper.session._shell_reads import shell_read, shell_read_path

READS = [
    ("cat a.py", "a.py"),
    ("cat src/app/main.py", "src/app/main.py"),
    ("/bin/cat /etc/hosts", "/etc/hosts"),
    ("cat -n a.py", "a.py"),
    ("cat -An a.py", "a.py"),
    ("cat --number a.py", "a.py"),
    ("cat -- -odd-name", "-odd-name"),
    ("cat 'my file.txt'", "my file.txt"),
    ('cat "my file.txt"', "my file.txt"),
    ("cat my\\ file.txt", "my file.txt"),
    ("cat 'a*b?.txt'", "a*b?.txt"),
    ('cat "price\\$.txt"', "price$.txt"),
    ("  cat   a.py  ", "a.py"),
    ("cat a.py # look at it", "a.py"),
    ("cat a.py\n", "a.py"),
    ("sed -n 1,80p src/dates.py", "src/dates.py"),
    ("sed -n '1,200p' src/dates.py", "src/dates.py"),
    ('sed -n "10,20p" x.py', "x.py"),
    ("sed -n 5p x.py", "x.py"),
    ("sed -n '$p' x.py", "x.py"),
    ("sed -n '100,$p' x.py", "x.py"),
    ("sed -n '1, 50 p' x.py", "x.py"),
    ("sed -n -e 1,10p x.py", "x.py"),
    ("sed -ne 1,10p x.py", "x.py"),
    ("sed --quiet 1,10p x.py", "x.py"),
    ("head x.log", "x.log"),
    ("head -n 50 x.log", "x.log"),
    ("head -n50 x.log", "x.log"),
    ("head -50 x.log", "x.log"),
    ("head --lines=50 x.log", "x.log"),
    ("head -c 100 x.bin", "x.bin"),
    ("tail x.log", "x.log"),
    ("tail -n 20 x.log", "x.log"),
    ("tail -n +20 x.log", "x.log"),
    ("tail -20 x.log", "x.log"),
    ("tail -q -n 5 x.log", "x.log"),
    ("nl x.py", "x.py"),
    ("nl -ba x.py", "x.py"),
    ("nl -b a x.py", "x.py"),
    ("nl -ba -w 4 x.py", "x.py"),
    ("open src/marshmallow/fields.py", "src/marshmallow/fields.py"),
    ("open src/marshmallow/fields.py 1474", "src/marshmallow/fields.py"),
    ('open "src/fields.py" 10', "src/fields.py"),
    ("bash -lc 'sed -n 1,200p src/a.py'", "src/a.py"),
    ('bash -lc "cat README.md"', "README.md"),
    ("bash -c 'cat README.md'", "README.md"),
    ("bash -l -c 'cat README.md'", "README.md"),
    ("bash --login -c 'cat README.md'", "README.md"),
    ("sh -c 'head -n 5 a.txt'", "a.txt"),
    ("zsh -lc 'nl -ba a.txt'", "a.txt"),
    ("/bin/bash -lc 'cat a.txt'", "a.txt"),
    # one shell inside another is still read (two levels; a third is refused below)
    ("bash -lc \"bash -lc 'cat a.py'\"", "a.py"),
    ("cat a=b.py", "a=b.py"),
    ("cat notes.txt~", "notes.txt~"),
    ("cat a''.py", "a.py"),
    ("cat 'src'/a.py", "src/a.py"),
    ('cat "src"/a.py', "src/a.py"),
    ("cat a.p\\y", "a.py"),
    ("cat \\#", "#"),
    ("cat a\\\n.py", "a.py"),
    ('cat "a\\\n.py"', "a.py"),
    ("head -5 a.log", "a.log"),
    ("tail -n5 x.log", "x.log"),
    ("tail -- -odd.log", "-odd.log"),
]

NOT_READS = [
    "",
    "   ",
    "cat",
    "cat -",
    "cat a.py b.py",
    "cat a.py | head",
    "cat a.py|head",
    "nl -ba a.py | sed -n '1,200p'",
    "cat a.py > b.py",
    "cat < a.py",
    "cat a.py 2>/dev/null",
    "cd src && cat a.py",
    "cat a.py; ls",
    "cat a.py || true",
    "cat a.py &",
    "cat a.py\nls",
    "cat *.py",
    "cat src/*.py",
    "cat a?.py",
    "cat [ab].py",
    "cat {a,b}.py",
    "cat $FILE",
    'cat "$FILE"',
    "cat ${FILE}",
    "cat `ls`",
    "cat $(ls)",
    "cat ~/notes.txt",
    "cat 'unterminated",
    'cat "unterminated',
    "cat a.py\\",
    "cat -z a.py",
    "FOO=1 cat a.py",
    "sudo cat a.py",
    "less a.py",
    "grep foo a.py",
    "sed 1,10p a.py",
    "sed -n '/def /p' a.py",
    "sed -n '1,10p;20p' a.py",
    "sed -n 's/a/b/p' a.py",
    "sed -i 1,10p a.py",
    "sed -n -i 1,10p a.py",
    "sed -n 1,10p",
    "sed -n 1,10p a.py b.py",
    "sed -n -e 1p -e 2p a.py",
    "head -n a.log",
    "head -n 5",
    "head -n +5 a.log",
    "head -n 5 a.log b.log",
    "tail -f a.log",
    "tail -F a.log",
    "tail --follow a.log",
    "nl -b",
    "nl -ba a.py b.py",
    "nl -x a.py",
    "open",
    "open a.py b.py",
    "open a.py 10 20",
    "bash -lc 'cat a.py | head'",
    "bash -lc 'cat a.py' extra",
    "bash -l 'cat a.py'",
    "bash a.sh",
    "bash -lc",
    "bash -x -c 'cat a.py'",
    "python -c 'print(open(\"a\").read())'",
    'bash -lc "bash -lc \'bash -lc \\"cat a.py\\"\'"',
    "bash -c x 'cat a.py'",
    "cat a.py \\#",
    "cat --help",
    'cat "a.py\\',
    'cat "a\\"',
    "head -n",
    "head a.log -n",
    "head -n x a.log",
    "head -x5 a.log",
    "head --lines=5=0 a.log",
    "sed -n a.py -e",
    "sed x.py -ne",
    "sed -n 1,10p -i",
    "nl -xa a.py",
    "nl a.py -b",
]


class TestReads:
    """Commands that only read one file give it."""

    @pytest.mark.parametrize(("command", "path"), READS)
    def test_read(self, command: str, path: str) -> None:
        """The file is the command's operand, quotes removed."""
        assert shell_read_path(command) == path


class TestNotReads:
    """Everything else gives None."""

    @pytest.mark.parametrize("command", NOT_READS)
    def test_not_a_read(self, command: str) -> None:
        """Pipes, chains, redirections, expansions, several files, other programs: None."""
        assert shell_read_path(command) is None


class TestArgv:
    """Commands given as an argv list, as Codex records them."""

    def test_bash_lc_argv(self) -> None:
        """["bash", "-lc", script] reads the script."""
        assert shell_read_path(["bash", "-lc", "sed -n 1,80p src/dates.py"]) == "src/dates.py"

    def test_plain_argv(self) -> None:
        """An argv list is not split again: a name with spaces is one word."""
        assert shell_read_path(["cat", "my file.txt"]) == "my file.txt"
        assert shell_read_path(["cat", "a.py", "b.py"]) is None
        assert shell_read_path([]) is None

    def test_argv_items_must_be_strings(self) -> None:
        """A list holding other values is not a command."""
        assert shell_read_path(["cat", 3]) is None  # type: ignore[list-item]


@pytest.mark.parametrize(
    ("command", "read"),
    [
        ("cat -n src/a.py", ("src/a.py", "")),
        (["bash", "-lc", "nl -ba src/a.py"], ("src/a.py", "")),
        ("sed -n 1,80p src/a.py", ("src/a.py", "sed -n 1,80p")),
        ("bash -lc \"sed -n '81,160p' src/a.py\"", ("src/a.py", "sed -n 81,160p")),
        ("head -n 50 x.log", ("x.log", "head -n 50")),
        ("tail x.log", ("x.log", "tail")),
        ("open f.py 30", ("f.py", "open 30")),
        ("cat a.py | grep x", None),
    ],
)
def test_which_part_a_command_reads(command: Any, read: tuple[str, str] | None) -> None:
    """The whole file for ``cat`` and ``nl``; else the command without the file, so two reads are
    copies of one text only when they print the same part."""
    assert shell_read(command) == read
