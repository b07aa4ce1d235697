"""The pytest fork server of ``mutation/run.py``: third-party imports paid once, not per mutant.

Starting pytest with the session's tests costs seconds before the first test runs, most of it
importing the SDKs the API doubles use. This process imports them once, then for each line
it reads (a JSON list of pytest arguments) forks a child that runs pytest and answers with the
exit code (``-9`` when the time limit, the second element of the line, killed it). windowkeeper
itself is never imported here, so each child imports the package (with the mutant in place)
afresh.
"""

from __future__ import annotations

import json
import os
import signal
import sys
import time
import traceback

import pytest

PREIMPORTS = ("hypothesis", "anthropic", "openai", "tests.doubles")


def _child(arguments: list[str]) -> None:
    if not os.environ.get("MUTANTS_VERBOSE"):  # the tests' output, to see why a run fails
        null = os.open(os.devnull, os.O_WRONLY)
        os.dup2(null, 1)
        os.dup2(null, 2)
    try:
        code = int(pytest.main(arguments))
    except BaseException:  # anything raised is a failure of the mutant
        traceback.print_exc()
        code = 3
    os._exit(code)


def _wait(pid: int, timeout: float) -> int:
    deadline = time.monotonic() + timeout
    while True:
        done, status = os.waitpid(pid, os.WNOHANG)
        if done:
            return os.waitstatus_to_exitcode(status)
        if time.monotonic() > deadline:
            os.kill(pid, signal.SIGKILL)
            os.waitpid(pid, 0)
            return -9
        time.sleep(0.05)


def main() -> int:
    for name in PREIMPORTS:
        __import__(name)
    if any(name.split(".")[0] == "windowkeeper" for name in sys.modules):
        print(json.dumps({"error": "windowkeeper was imported before the mutants"}), flush=True)
        return 1
    print(json.dumps({"ready": True}), flush=True)
    for line in sys.stdin:
        arguments, timeout = json.loads(line)
        pid = os.fork()
        if pid == 0:
            _child(arguments)
        print(json.dumps({"code": _wait(pid, timeout)}), flush=True)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
