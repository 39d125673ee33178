"""The host loop of train, evaluate and predict and the interface it drives
(`host/loop_actions.py`)."""
import contextlib
import types

import pytest

from tpu_estimator_compat.host import loop_actions


class Recorder(loop_actions.LoopAction):
    def __init__(self, name, calls, stop_at=None):
        self.name, self.calls, self.stop_at = name, calls, stop_at

    def begin(self, step):
        self.calls.append((self.name, "begin", step))

    def before_loop(self):
        self.calls.append((self.name, "before_loop"))

    def after_loop(self, loop):
        self.calls.append((self.name, "after_loop", loop.step))
        return loop.step == self.stop_at

    def close(self):
        self.calls.append((self.name, "close"))

    def end(self, step):
        self.calls.append((self.name, "end", step))


def test_actions_are_called_in_order_and_every_one_sees_a_loop_another_stops():
    calls = []
    actions = loop_actions.LoopActions([Recorder("hooks", calls, stop_at=4),
                                        Recorder("saver", calls)])
    actions.begin(2)
    actions.before_loop()
    assert actions.after_loop(loop_actions.LoopEnd(None, first_step=2, step=4)) is True
    actions.close()
    actions.end(4)
    assert calls == [("hooks", "begin", 2), ("saver", "begin", 2),
                     ("hooks", "before_loop"), ("saver", "before_loop"),
                     ("hooks", "after_loop", 4), ("saver", "after_loop", 4),
                     ("hooks", "close"), ("saver", "close"),
                     ("hooks", "end", 4), ("saver", "end", 4)]


def test_no_action_asking_means_no_stop():
    actions = loop_actions.LoopActions([loop_actions.LoopAction(), Recorder("r", [])])
    assert actions.after_loop(loop_actions.LoopEnd(None, first_step=0, step=1)) is False


class FakeHookRun:
    def __init__(self, stop):
        self.stop, self.calls = stop, []

    def before_loop(self):
        self.calls.append("before_loop")

    def after_loop(self, fetches):
        self.calls.append(("after_loop", fetches))
        return self.stop

    def skip_after_loop(self):
        self.calls.append("skip_after_loop")

    def end(self):
        self.calls.append("end")


def test_hooks_see_each_loop_and_may_stop():
    hook_run = FakeHookRun(stop=True)
    hooks = loop_actions.HookActions(hook_run)
    hooks.before_loop()
    result = types.SimpleNamespace(hook_fetches={"loss": 1.0})
    assert hooks.after_loop(loop_actions.LoopEnd(result, first_step=0, step=2)) is True
    hooks.end(2)
    assert hook_run.calls == ["before_loop", ("after_loop", {"loss": 1.0}), "end"]


def test_a_loop_of_only_padding_is_not_shown_to_hooks_and_stops():
    hook_run = FakeHookRun(stop=False)
    loop = loop_actions.LoopEnd(None, first_step=5, step=5, only_padding=True)
    assert loop_actions.HookActions(hook_run).after_loop(loop) is True
    assert hook_run.calls == ["skip_after_loop"]


# --- the host loop (run_loops) -----------------------------------------------------------

class Device:
    """A device loop stand-in: each loop runs its size in steps from `step`; the input has
    `rows` steps (None: endless); `raise_at`: the loop starting there raises."""

    def __init__(self, rows=None, raise_at=None, no_result_at=None, preempt_at=None):
        self.rows, self.raise_at = rows, raise_at
        self.no_result_at, self.preempt_at = no_result_at, preempt_at
        self.sizes = []

    def run(self, size, step):
        self.sizes.append(size)
        if step == self.raise_at:
            raise RuntimeError("device failed")
        if step == self.no_result_at:  # training's OutOfRangeError: the loop reports nothing
            return loop_actions.LoopEnd(None, first_step=step, step=step + 1, input_ended=True)
        ran = size if self.rows is None else min(size, self.rows - step)
        return loop_actions.LoopEnd(
            {"steps": ran}, first_step=step, step=step + ran,
            input_ended=self.rows is not None and step + ran >= self.rows,
            preempted=step == self.preempt_at)


def _sizes(last_step, per_loop):
    return lambda step: min(per_loop, last_step - step) if step < last_step else 0


def test_the_loop_sizes_runs_and_shows_every_loop_then_closes_and_ends():
    calls, device = [], Device()
    loops = list(loop_actions.run_loops(
        loop_actions.LoopActions([Recorder("a", calls)]), 2, _sizes(9, 3), device.run))
    assert device.sizes == [3, 3, 1]
    assert [(loop.first_step, loop.step, loop.stop) for loop in loops] == [
        (2, 5, False), (5, 8, False), (8, 9, False)]
    assert calls == [("a", "begin", 2), *[("a", "before_loop"), ("a", "after_loop", 5),
                     ("a", "before_loop"), ("a", "after_loop", 8),
                     ("a", "before_loop"), ("a", "after_loop", 9)],
                     ("a", "close"), ("a", "end", 9)]


def test_an_action_stops_the_loop_after_the_loop_it_saw():
    calls = []
    loops = list(loop_actions.run_loops(
        loop_actions.LoopActions([Recorder("a", calls, stop_at=4)]), 0, _sizes(100, 2),
        Device().run))
    assert [(loop.step, loop.stop) for loop in loops] == [(2, False), (4, True)]
    assert calls[-2:] == [("a", "close"), ("a", "end", 4)]


def test_the_end_of_the_input_is_one_outcome_shown_to_the_actions():
    calls = []
    loops = list(loop_actions.run_loops(
        loop_actions.LoopActions([Recorder("a", calls)]), 0, _sizes(100, 4),
        Device(rows=6).run))
    assert [(loop.step, loop.input_ended) for loop in loops] == [(4, False), (6, True)]
    assert ("a", "after_loop", 6) in calls and calls[-1] == ("a", "end", 6)


def test_a_loop_whose_input_ended_before_it_reported_is_not_shown_but_ends_the_call():
    calls = []
    loops = list(loop_actions.run_loops(
        loop_actions.LoopActions([Recorder("a", calls)]), 0, _sizes(100, 2),
        Device(no_result_at=2).run))
    assert [(loop.step, loop.result is None) for loop in loops] == [(2, False), (3, True)]
    assert [c for c in calls if c[1] == "after_loop"] == [("a", "after_loop", 2)]
    assert calls[-2:] == [("a", "close"), ("a", "end", 3)]


def test_a_preempted_loop_is_the_last():
    loops = list(loop_actions.run_loops(loop_actions.LoopActions([]), 0, _sizes(100, 2),
                                        Device(preempt_at=2).run))
    assert [(loop.step, loop.preempted) for loop in loops] == [(2, False), (4, True)]


def test_an_error_closes_the_actions_without_ending_them():
    calls = []
    loops = loop_actions.run_loops(loop_actions.LoopActions([Recorder("a", calls)]), 0,
                                   _sizes(100, 2), Device(raise_at=2).run)
    with pytest.raises(RuntimeError, match="device failed"):
        list(loops)
    assert calls[-1] == ("a", "close") and ("a", "end", 2) not in calls


def test_a_consumer_that_stops_early_closes_the_actions():
    calls = []
    loops = loop_actions.run_loops(loop_actions.LoopActions([Recorder("a", calls)]), 0,
                                   _sizes(100, 2), Device().run)
    assert next(loops).step == 2
    loops.close()
    assert calls[-1] == ("a", "close")


def test_around_loops_is_entered_after_begin_and_left_after_close():
    calls = []

    @contextlib.contextmanager
    def around():
        calls.append("enter")
        yield
        calls.append("exit")

    list(loop_actions.run_loops(loop_actions.LoopActions([Recorder("a", calls)]), 0,
                                _sizes(1, 1), Device().run, around_loops=around()))
    assert calls == [("a", "begin", 0), "enter", ("a", "before_loop"),
                     ("a", "after_loop", 1), ("a", "close"), "exit", ("a", "end", 1)]
