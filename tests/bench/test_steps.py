"""The compute-unaware replay's settings parser (the replay itself is a model run)."""

from __future__ import annotations

import pytest

from bench.steps import config_with


def test_overrides_are_typed_like_the_field() -> None:
    config = config_with(["min_silence_s=0.3", "refine=false", "refine_beam=3"])
    assert config.min_silence_s == 0.3 and config.refine is False and config.refine_beam == 3


def test_unknown_field_is_refused() -> None:
    with pytest.raises(SystemExit, match="no_such"):
        config_with(["no_such=1"])
