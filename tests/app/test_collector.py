"""The cyclic collector's settings once the models are loaded (app/services.py,
``settle_collector``; measured in docs/metrics.md, "Fan-out / Collector pauses")."""

from __future__ import annotations

import gc
from collections.abc import Iterator

import pytest

from app.services import YOUNG_OBJECTS_PER_COLLECTION, settle_collector


@pytest.fixture
def restored_collector() -> Iterator[None]:
    threshold = gc.get_threshold()
    yield
    gc.unfreeze()
    gc.set_threshold(*threshold)


@pytest.mark.usefixtures("restored_collector")
def test_settling_freezes_what_is_alive_and_collects_the_young_less_often() -> None:
    gc.unfreeze()
    gc.set_threshold(700, 10, 10)
    alive = [[index] for index in range(100)]

    settle_collector()

    assert gc.get_freeze_count() >= len(alive)
    assert gc.get_threshold() == (YOUNG_OBJECTS_PER_COLLECTION, 10, 10)
    assert YOUNG_OBJECTS_PER_COLLECTION > 700
