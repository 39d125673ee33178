"""The interface the training and evaluation loops drive (`host/loop_actions.py`)."""
import types

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
