"""The adapter extras' lower bounds and the oldest set CI tests them on agree.

``.ci/oldest-constraints.txt`` pins each package an adapter extra names to that extra's lower
bound; ``make test-oldest`` (run by ``.ci/run``) installs it and runs tests/adapters, so a bound
is what the tests passed on. The dev extra, which the test runs install, allows the same
releases.
"""

from __future__ import annotations

import re
import tomllib
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
ADAPTER_EXTRAS = ("langchain", "pydantic-ai", "openai-agents")
_BOUND = re.compile(r"^([A-Za-z0-9_.\-]+)(?:\[[^\]]*\])?>=([0-9][0-9.]*)$")


def extras() -> dict[str, list[str]]:
    project = tomllib.loads((ROOT / "pyproject.toml").read_text(encoding="utf-8"))["project"]
    optional: dict[str, list[str]] = project["optional-dependencies"]
    return optional


def lower_bounds(requirements: list[str]) -> dict[str, str]:
    """``name -> lower bound`` of requirements written ``name>=version``."""
    found = {}
    for requirement in requirements:
        match = _BOUND.match(requirement.replace(" ", ""))
        assert match is not None, f"{requirement!r}: an extra's bound is written name>=version"
        found[match[1].lower()] = match[2]
    return found


def oldest() -> dict[str, str]:
    pins = {}
    for line in (ROOT / ".ci" / "oldest-constraints.txt").read_text(encoding="utf-8").splitlines():
        if line.strip() and not line.startswith("#"):
            name, _, version = line.partition("==")
            pins[name.strip().lower()] = version.strip()
    return pins


def test_the_oldest_set_pins_every_adapter_extra_at_its_lower_bound() -> None:
    wanted = {}
    for extra in ADAPTER_EXTRAS:
        wanted.update(lower_bounds(extras()[extra]))
    assert oldest() == wanted


def test_the_dev_extra_allows_the_oldest_set() -> None:
    """The test runs install the dev extra under the oldest pins: its bounds may not be higher."""
    dev = {}
    for requirement in extras()["dev"]:
        match = _BOUND.match(requirement.replace(" ", ""))
        if match is not None:
            dev[match[1].lower()] = match[2]
    for name, version in oldest().items():
        assert name in dev, f"the dev extra does not install {name}"
        assert dev[name] == version, f"dev wants {name}>={dev[name]}, the oldest set is {version}"
