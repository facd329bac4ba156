from datetime import date

from arkai.core.itemdate import item_date, item_day


def test_published_then_created_then_added() -> None:
    assert item_date({"published": "2024-05-01", "created_at": "2025-01-01T00:00:00Z"}) == (
        "2024-05-01"
    )
    # A chat has no ``published``: its own start date, not the day it was imported.
    chat = {"created": "2023-02-03T10:00:00Z", "created_at": "2025-01-01T00:00:00Z"}
    assert item_date(chat) == "2023-02-03T10:00:00Z"
    assert item_day(chat) == date(2023, 2, 3)
    assert item_date({"published": "", "created_at": "2025-01-01"}) == "2025-01-01"
    assert item_date({}) is None and item_day({}) is None


def test_day_skips_a_date_that_does_not_exist() -> None:
    meta = {"published": "2024-13-40", "created_at": "2025-06"}
    assert item_day(meta) == date(2025, 6, 1)
    assert item_day({"published": "unknown"}) is None
