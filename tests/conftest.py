"""Shared test settings: hypothesis profiles and the fixtures folder."""

from __future__ import annotations

import os
from pathlib import Path
from typing import NoReturn

import pytest
from hypothesis import HealthCheck, settings

FIXTURES = Path(__file__).resolve().parent.parent / "fixtures"
"""The golden fixtures folder at the top of the repository."""

GOLDEN_CONVERSATIONS = sorted(
    path.relative_to(FIXTURES).as_posix()
    for folder in ("v0.7", "v0.8", "own", "zmij", "newer")
    for path in (FIXTURES / folder).glob("*.json")
)
"""Every golden conversation file, as a path below ``FIXTURES``."""
GOLDEN_STREAMS = sorted(path.name for path in (FIXTURES / "events").glob("*.jsonl"))
"""Every golden event stream, as a file name in ``FIXTURES / "events"``."""


def record_lines(path: Path) -> list[bytes]:
    """The records of a JSON Lines file: its lines that are not blank."""
    return [line for line in path.read_bytes().split(b"\n") if line.strip()]


def skip_or_fail_in_ci(missing: str) -> NoReturn:
    """Skip a test that needs a tool this machine lacks; fail it when the ``CI`` variable is set,
    where ``.ci/run`` installs every tool the suite needs."""
    if os.environ.get("CI"):
        pytest.fail(f"{missing} (required when CI is set)")
    pytest.skip(missing)


# Modest example counts and no deadline: the suite shares two cores in CI. Choose a profile with
# HYPOTHESIS_PROFILE=thorough for a longer local run.
settings.register_profile(
    "default",
    max_examples=60,
    deadline=None,
    suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large],
)
settings.register_profile("thorough", max_examples=1000, deadline=None)
settings.load_profile(os.environ.get("HYPOTHESIS_PROFILE", "default"))


@pytest.fixture
def fixtures_dir() -> Path:
    """The golden fixtures folder."""
    return FIXTURES
