"""Shared test settings: hypothesis profiles and the fixtures folder."""

from __future__ import annotations

import os
from pathlib import Path

import pytest
from hypothesis import HealthCheck, settings

FIXTURES = Path(__file__).resolve().parent.parent / "fixtures"
"""The golden fixtures folder at the top of the repository."""

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
