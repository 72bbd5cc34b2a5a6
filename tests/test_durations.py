"""Durations remembered between runs, and the longest-first order they give workers."""

from types import SimpleNamespace

from sampling_harness.scale import durations
from sampling_harness.scale.schedule import dealt, longest_first


def test_durations_round_trip_per_device_and_budget(tmp_path, monkeypatch):
    monkeypatch.setenv("SAMPLING_HARNESS_CACHE", str(tmp_path))
    assert durations.remembered("cuda", "quick") == {}
    durations.remember("cuda", "quick", {"a": 1.234, "b": 7.0})
    durations.remember("cuda", "quick", {"b": 3.0})
    durations.remember("cpu", "quick", {"a": 9.0})
    assert durations.remembered("cuda", "quick") == {"a": 1.23, "b": 3.0}
    assert durations.remembered("cuda", "standard") == {}
    (tmp_path / durations.FILE).write_text("{not json")
    assert durations.remembered("cuda", "quick") == {}     # unreadable: no order, no error


def item(nodeid, many=False):
    marker = object() if many else None
    return SimpleNamespace(nodeid=nodeid, name=nodeid, get_closest_marker=lambda mark: marker,
                           kernel=SimpleNamespace(role="kernel", name=nodeid))


def test_workers_start_the_longest_checks_first():
    """Known checks by their last duration, longest first; one never timed counts as
    longest if it brings many shapes (it compiles), else as shortest."""
    items = [item("short"), item("new"), item("long"), item("new-many", many=True),
             item("mid")]
    longest_first(items, {"short": 1.0, "long": 90.0, "mid": 20.0})
    assert [i.nodeid for i in items] == ["new-many", "long", "mid", "short", "new"]


def test_a_first_run_orders_by_the_shipped_durations():
    """No local durations: the shipped "kernel/check" seconds order the checks; a local
    duration wins over the shipped one."""
    items = [item("a"), item("b"), item("c", many=True)]
    for i in items:
        i.originalname = "test_fit"
    longest_first(items, {"a": 1.0}, {"a/fit": 500.0, "b/fit": 40.0, "c/fit": 3.0})
    assert [i.nodeid for i in items] == ["b", "c", "a"]
    shipped = durations.measured("cuda", "standard")
    assert shipped and all(k.count("/") == 1 and v > 0 for k, v in shipped.items())


def test_workers_are_dealt_the_order_as_cards():
    items = [item(str(i)) for i in range(7)]
    dealt(items, 3)
    assert [i.nodeid for i in items] == ["0", "3", "6", "1", "4", "2", "5"]
    dealt(items, 1)
    assert [i.nodeid for i in items] == ["0", "3", "6", "1", "4", "2", "5"]
