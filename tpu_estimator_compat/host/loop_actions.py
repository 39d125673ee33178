"""One interface for what the host does around the device loops of a call (as Keras's
CallbackList or orbit's actions): training and evaluation drive their collaborators (hooks,
NaN check, host_call, progress log and summaries, checkpoint saves) through it.

    actions.begin(step)
    while ...:
        actions.before_loop()
        result = loop(iterator, n)
        if actions.after_loop(LoopEnd(...)):   # every action sees the loop; any may stop
            break
    actions.close()      # always, also after an error: flush and close files, writers
    actions.end(step)    # the loops ended normally: hooks' end(), final checkpoint

An action raising in `after_loop` (the NaN check) ends the call there: the actions after it
do not see that loop.
"""
import dataclasses


@dataclasses.dataclass(frozen=True)
class LoopEnd:
    """What one device loop did.

    `result`: the engine's `TrainLoopResult` / `InferenceLoopResult`; the loop ran global
    steps `first_step`..`step`; `loss`, `finite`: training's agreed loss of the loop and
    whether every replica's losses were finite; `final`: the last loop planned;
    `only_padding`: evaluation's loop saw only the end of the input (no real row).
    """
    result: object
    first_step: int
    step: int
    loss: float = None
    finite: bool = True
    final: bool = False
    only_padding: bool = False


class LoopAction:
    """Does nothing at every point; subclasses override what they need."""

    def begin(self, step):
        """Before the first loop; `step` is the global step."""

    def before_loop(self):
        """Before each device loop."""

    def after_loop(self, loop):  # pylint: disable=unused-argument
        """After each device loop (a `LoopEnd`); returns True to stop after this loop."""
        return False

    def close(self):
        """After the last loop, also when a loop or an action raised."""

    def end(self, step):
        """After the last loop when no error occurred; `step` is the final global step."""


class LoopActions(LoopAction):
    """Calls its actions in order at every point; `after_loop` asks every action."""

    def __init__(self, actions):
        self._actions = list(actions)

    def begin(self, step):
        for action in self._actions:
            action.begin(step)

    def before_loop(self):
        for action in self._actions:
            action.before_loop()

    def after_loop(self, loop):
        stop = False
        for action in self._actions:
            stop = action.after_loop(loop) or stop
        return stop

    def close(self):
        for action in self._actions:
            action.close()

    def end(self, step):
        for action in self._actions:
            action.end(step)


class HookActions(LoopAction):
    """The call's SessionRunHooks (`hooks.HookRun`, already started): before_run /
    after_run once per loop, end() at the end; a loop of only padding (evaluation at the end
    of its input) is not shown to them and stops, as TF1's run that hit OutOfRange."""

    def __init__(self, hook_run):
        self._hook_run = hook_run

    def before_loop(self):
        self._hook_run.before_loop()

    def after_loop(self, loop):
        if loop.only_padding:
            self._hook_run.skip_after_loop()
            return True
        return self._hook_run.after_loop(loop.result.hook_fetches)

    def end(self, step):
        self._hook_run.end()
