"""The host loop of train, evaluate and predict (`run_loops`), and the one interface for
what the host does around their device loops (as Keras's CallbackList or orbit's actions):
each call drives its collaborators (hooks, NaN check, host_call, progress log and summaries,
checkpoint saves) through it.

    actions.begin(step)
    while size := next_size(step):              # the call's sizing (0: no more loops)
        actions.before_loop()
        loop = run_loop(size, step)             # one device loop -> LoopEnd
        stop = actions.after_loop(loop)         # every action sees the loop; any may stop
        yield loop                              # the call's own use of it (predictions)
        if stop, or the loop saw the end of the input, or a worker was preempted: break
    actions.close()      # always, also after an error: flush and close files, writers
    actions.end(step)    # the loops ended normally: hooks' end(), final checkpoint

The end of the input is one outcome, `LoopEnd.input_ended`, whatever the loop reported it as
(an OutOfRangeError of training's loop, or evaluation's and prediction's stop batches). An
action raising in `after_loop` (the NaN check) ends the call there: the actions after it do
not see that loop.
"""
import contextlib
import dataclasses
from typing import TYPE_CHECKING, Any, Callable, ContextManager, Iterator, Optional, Sequence

if TYPE_CHECKING:
    from tpu_estimator_compat.host import hooks


@dataclasses.dataclass(frozen=True)
class LoopEnd:
    """What one device loop did.

    `result`: the engine's `TrainLoopResult` / `InferenceLoopResult`; the loop ran global
    steps `first_step`..`step`; `loss`, `finite`: training's agreed loss of the loop and
    whether every replica's losses were finite; `final`: the last loop planned;
    `only_padding`: the loop saw only the end of the input (no real row); `input_ended`:
    the loop saw the end of the input (no loop follows); a loop whose input ended before it
    could report has no `result` and is not shown to the actions; `preempted`: training's
    workers agreed that one got SIGTERM (no loop follows); `stop`: an action asked to stop
    (set by `run_loops`).
    """
    result: Any
    first_step: int
    step: int
    loss: Optional[float] = None
    finite: bool = True
    final: bool = False
    only_padding: bool = False
    input_ended: bool = False
    preempted: bool = False
    stop: bool = False


# `(step) -> steps` of a call's next device loop (0: none left).
NextSize = Callable[[int], int]
# `(size, step) -> LoopEnd`: runs one device loop of `size` steps from global step `step`.
RunLoop = Callable[[int, int], LoopEnd]


class LoopAction:
    """Does nothing at every point; subclasses override what they need."""

    def begin(self, step: int) -> None:
        """Before the first loop; `step` is the global step."""

    def before_loop(self) -> None:
        """Before each device loop."""

    def after_loop(self, loop: LoopEnd) -> bool:  # pylint: disable=unused-argument
        """After each device loop; returns True to stop after this loop."""
        return False

    def close(self) -> None:
        """After the last loop, also when a loop or an action raised."""

    def end(self, step: int) -> None:
        """After the last loop when no error occurred; `step` is the final global step."""


class LoopActions(LoopAction):
    """Calls its actions in order at every point; `after_loop` asks every action."""

    def __init__(self, actions: Sequence[LoopAction]):
        self._actions = list(actions)

    def begin(self, step: int) -> None:
        for action in self._actions:
            action.begin(step)

    def before_loop(self) -> None:
        for action in self._actions:
            action.before_loop()

    def after_loop(self, loop: LoopEnd) -> bool:
        stop = False
        for action in self._actions:
            stop = action.after_loop(loop) or stop
        return stop

    def close(self) -> None:
        for action in self._actions:
            action.close()

    def end(self, step: int) -> None:
        for action in self._actions:
            action.end(step)


class HookActions(LoopAction):
    """The call's SessionRunHooks (`hooks.HookRun`, already started): before_run /
    after_run once per loop, end() at the end; a loop of only padding (evaluation at the end
    of its input) is not shown to them and stops, as TF1's run that hit OutOfRange."""

    def __init__(self, hook_run: "hooks.HookRun"):
        self._hook_run = hook_run

    def before_loop(self) -> None:
        self._hook_run.before_loop()

    def after_loop(self, loop: LoopEnd) -> bool:
        if loop.only_padding:
            self._hook_run.skip_after_loop()
            return True
        return self._hook_run.after_loop(loop.result.hook_fetches)

    def end(self, step: int) -> None:
        self._hook_run.end()


def run_loops(actions: LoopAction, step: int, next_size: NextSize, run_loop: RunLoop,
              around_loops: ContextManager = contextlib.nullcontext()) -> Iterator[LoopEnd]:
    """The host loop of a call (see the module docstring): yields each device loop's
    `LoopEnd` once `actions` saw it; closes `actions` on every way out (also when the
    consumer stops iterating) and ends them when the loops ended without an error.

    Args:
      actions: the call's actions (a `LoopActions`).
      step: the global step before the first loop.
      next_size: `(step) -> steps` of the next loop; 0 when no loop is left.
      run_loop: `(size, step) -> LoopEnd`: runs one device loop of `size` steps from
        `step`.
      around_loops: entered after `begin`, left after `close` (training's SIGTERM watch).
    """
    actions.begin(step)
    with around_loops, contextlib.ExitStack() as closing:
        closing.callback(actions.close)
        while True:
            size = next_size(step)
            if not size:
                break
            actions.before_loop()
            loop = run_loop(size, step)
            step = loop.step
            if loop.result is None:  # the input ended inside the loop: nothing to show
                yield loop
                break
            loop = dataclasses.replace(loop, stop=actions.after_loop(loop))
            yield loop
            if loop.stop or loop.input_ended or loop.preempted:
                break
    actions.end(step)
