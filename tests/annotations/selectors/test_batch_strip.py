"""The batch strip's slots grow with the units done, not with the batch's size (issue 45: a batch of
1,000 units made 1,000 slots, rendered or JSON-encoded on every unit page and every submit)."""

from annotations.selectors.batches import Batch


def test_a_large_batch_gives_the_done_and_pending_slots_and_one_for_the_rest():
    batch = Batch(number=1, size=1000, done=[11, 12], pending=13)
    slots = batch.slots(current_id=13)
    assert [(s["position"], s["state"], s["current"]) for s in slots] == [
        (1, "done", False),
        (2, "done", False),
        (3, "pending", True),
        (4, "todo", False),  # the page draws "… of 1000" from it, no unit of its own
    ]
    assert [s["revisable"] for s in slots] == [True, True, False, False]


def test_a_full_batch_has_no_todo_slot():
    batch = Batch(number=1, size=3, done=[1, 2], pending=3)
    assert [s["state"] for s in batch.slots(current_id=3)] == ["done", "done", "pending"]
    assert [s["state"] for s in Batch(number=2, size=2, done=[5, 6], closed=True).slots()] == ["done", "done"]


def test_a_fresh_batch_is_one_todo_slot_after_its_pending_unit():
    assert [s["state"] for s in Batch(number=1, size=50, pending=7).slots(current_id=7)] == ["pending", "todo"]
    assert [s["state"] for s in Batch(number=1, size=50).slots()] == ["todo"]
