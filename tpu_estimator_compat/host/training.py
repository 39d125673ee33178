"""The outer training loop: host-side work between executions of the device loop.

    while global_step < last_step:
        n = min(iterations_per_loop, last_step - global_step)  (config.tpu_config.loop_size)
        hooks: before_run
        result = train_loop(iterator, n)   # n steps (a TrainLoopResult)
        stop if any replica's loss was not finite at any step (NanLossDuringTrainingError)
        replicas' copies: replica 0's everywhere (TPU semantics: as TF1 after each run)
        hooks: after_run; run host_call per step; log; write summaries; checkpoint when due
          (never from NaN/Inf weights: a NaN gradient stops training there instead; never
          from replicas that disagree on a synchronized variable: ReplicaDriftError)
    at the end: the replicas' copies checked and made replica 0's (engine/replica_sync.py)
        stop if a hook or a saving listener asked to

The loop itself is `loop_actions.run_loops`, shared with evaluate and predict. When
checkpoints are written, and by which saver, is `checkpoint_saves.py`.

With several workers (MultiWorkerMirroredStrategy) every worker runs this loop in lockstep:
the loss, each save decision and a SIGTERM stop are agreed once per loop, only the chief
writes checkpoints, summaries and host_call output, and all workers wait for the chief's last
checkpoint before train() returns (`multi_worker.py`).
"""
import contextlib
import dataclasses
import math
import time
from typing import Any, Optional, Sequence

import numpy as np
import tensorflow as tf

from tpu_estimator_compat.state import checkpoints
from tpu_estimator_compat.host import checkpoint_saves
from tpu_estimator_compat.host import host_calls
from tpu_estimator_compat.host import lifecycle_log
from tpu_estimator_compat.host import loop_actions
from tpu_estimator_compat import log as logging
from tpu_estimator_compat.host import multi_worker
from tpu_estimator_compat.host import preemption
from tpu_estimator_compat.host import progress_log
from tpu_estimator_compat.host import summaries
from tpu_estimator_compat.host.nan_loss import NanLossDuringTrainingError
from tpu_estimator_compat.api import spec as spec_lib
from tpu_estimator_compat.config.run_config import RunConfig
from tpu_estimator_compat.config.tpu_config import LoopSize


class IterationSizer:
    """How many steps the next loop runs: a count, or an estimate for a time-based loop.

    For `iterations_per_loop='<N>s'` (`LoopSize.seconds`) the first loop runs one step, later
    loops run as many steps as fit in N seconds at the mean step time of the recent loops, as
    the original.
    """

    def __init__(self, loop_size: LoopSize):
        self._count = loop_size.steps
        self._seconds = loop_size.seconds
        self._step_times = []

    def next_size(self, remaining):
        if self._count is not None:
            return min(self._count, remaining)
        if not self._step_times:
            return 1
        mean = float(np.mean(self._step_times[-20:]))
        return max(1, min(remaining, int(self._seconds / max(mean, 1e-9))))

    def record(self, steps, seconds):
        if steps:
            self._step_times.append(seconds / steps)


@dataclasses.dataclass(frozen=True)
class TrainingPlan:
    """What one `train()` call runs: up to `last_step` (inf: until the input ends), loops of
    `loop_size` steps, with `examples_per_step` for the progress log, host_call every
    `host_call_every_n_steps` steps, TPU semantics or not (an input that ends early is an
    error with them)."""
    config: RunConfig
    model_dir: str
    last_step: float
    loop_size: LoopSize
    examples_per_step: int
    host_call_every_n_steps: int
    tpu_semantics: bool
    tpu_estimator: bool = True  # TPUEstimator's progress log (else Estimator's)


@multi_worker.explains_worker_failures("Training")
def run_training(engine, compiled, iterator, plan: TrainingPlan, hook_run,
                 saving_listeners: Sequence[Any] = (), lock=None) -> Optional[float]:
    """Runs loops as `plan` says, until its last step, the end of a finite input or a stop
    request from a hook or saving listener; returns the final loss.

    Args:
      engine: the call's `model_engine.ModelEngine` (global step, runtime).
      compiled: the engine's `CompiledMode` of TRAIN (its `loop`).
      iterator: the call's distributed iterator.
      hook_run: the call's `hooks.HookRun`, already started (begin/after_create_session
        done).
      lock: the chief's acquired `sharing.TrainerLock` of model_dir, checked before each
        save (None on other workers).
    """
    step = engine.global_step
    # Multi-worker: every worker runs this loop in lockstep; decisions are the chief's and
    # only the chief writes files (multi_worker.py).
    workers = multi_worker.WorkerGroup(engine.runtime)
    if workers.is_chief:
        checkpoints.require_writable(plan.model_dir)
    savers = checkpoint_saves.checkpoint_savers(engine, plan.config, plan.model_dir, hook_run,
                                                saving_listeners, compiled.meta_graph, lock,
                                                compiled.replica_sync)
    host_call = _HostCallDriver(compiled, plan.host_call_every_n_steps, enabled=workers.is_chief)
    progress = _Progress(plan, compiled, host_call, enabled=workers.is_chief)
    # The savers (and their listeners' evaluations) before the hooks, as TF1's chief ran its
    # CheckpointSaverHook before the program's hooks: an early-stopping hook sees the
    # evaluation of the step it stops at.
    actions = loop_actions.LoopActions([
        _NanCheck(plan.model_dir),
        *([_ReplicaCopies(compiled.replica_sync, plan)] if compiled.replica_sync else []),
        host_call,
        progress,
        *(_SaverActions(saver) for saver in savers),
        loop_actions.HookActions(hook_run),
        _DeferredMetaGraphs(savers, progress)])
    loss = None
    preempted = False  # as agreed by all workers (a SIGTERM may reach only one of them)
    loops = _TrainingLoops(engine, compiled, iterator, plan, workers, stops=[
        progress.next_stop, *(lambda step, saver=saver: saver.next_stop() for saver in savers)],
        hooks_input_ended=lambda: hook_run.input_ended)
    for loop in loop_actions.run_loops(actions, step, loops.next_size, loops.run,
                                       around_loops=loops.watching_for_preemption()):
        step = loop.step
        if loop.result is None:
            continue
        loss, preempted = loop.loss, loop.preempted
        if loop.stop:
            logging.info("Training stopped at global step %d: a hook or saving listener "
                         "requested it.", step)
    if savers:
        workers.barrier()  # no worker goes on before the chief has written the last checkpoint
    if preempted or loops.preemption_requested:
        raise preemption.preempted_error(step, checkpoints.latest_checkpoint(plan.model_dir))
    if loss is not None:
        logging.info("Loss for final step: %s.", np.float32(loss))  # TF1's float32 text
    return loss


class _TrainingLoops:
    """Sizes and runs training's device loops for `loop_actions.run_loops`."""

    def __init__(self, engine, compiled, iterator, plan, workers, stops,
                 hooks_input_ended=lambda: False):
        self._engine = engine
        # () -> whether a hook's session.run met the end of the input (before this loop)
        self._hooks_input_ended = hooks_input_ended
        self._loop = (compiled.one_step_loop
                      if plan.loop_size.steps == 1 and compiled.one_step_loop is not None
                      else compiled.loop)
        self._iterator = iterator
        self._plan = plan
        self._workers = workers
        self._stops = stops  # (step) -> the next step a log line, summary or save is due
        self._sizer = IterationSizer(plan.loop_size)
        self._started = None
        self._preemption_watch = None

    @contextlib.contextmanager
    def watching_for_preemption(self):
        """While the loops run, SIGTERM is recorded (`preemption_requested`), not fatal."""
        with preemption.watch_for_preemption() as self._preemption_watch:
            yield

    @property
    def preemption_requested(self) -> bool:
        """Whether this process got SIGTERM while the loops ran."""
        return self._preemption_watch is not None and self._preemption_watch.requested

    def next_size(self, step: int) -> int:
        """The steps of the next loop from `step`; 0 at the plan's last step."""
        if step >= self._plan.last_step:
            return 0
        size = self._sizer.next_size(self._plan.last_step - step)
        # As the original's one step per Session.run; parameter servers run rounds of
        # closures instead (engine/parameter_servers.py).
        if not self._plan.tpu_semantics and self._engine.runtime.coordinator is None:
            size = _cut_at_stops(size, step, [stop(step) for stop in self._stops])
        self._started = time.time()  # the loop's time includes the hooks' before_run
        return size

    def run(self, size: int, step: int) -> loop_actions.LoopEnd:
        """Runs one device loop of `size` steps from global step `step`."""
        engine, plan = self._engine, self._plan
        if self._hooks_input_ended():  # TF1's MonitoredSession ended training there
            logging.info("Input exhausted in a hook's session.run at global step %d: "
                         "training ends.", step)
            return loop_actions.LoopEnd(None, first_step=step, step=step, input_ended=True)
        if plan.tpu_semantics:
            lifecycle_log.infeed_outfeed(size)
        try:
            result = self._loop(self._iterator, tf.constant(size))  # TrainLoopResult
        except tf.errors.OutOfRangeError:
            engine.mark_changed()
            new_step = engine.global_step
            if plan.tpu_semantics:
                raise _input_exhausted_error(new_step, step) from None
            logging.info("Input exhausted at global step %d: training ends.", new_step)
            return loop_actions.LoopEnd(None, first_step=step, step=new_step,
                                        input_ended=True)
        engine.mark_changed()
        new_step = engine.global_step
        if new_step <= step:
            raise RuntimeError(
                f"global_step did not advance during a loop of {size} steps (still "
                f"{step}). The train_op must increment it: pass "
                "global_step=tf.compat.v1.train.get_global_step() to minimize() or "
                "apply_gradients().")
        self._sizer.record(new_step - step, time.time() - self._started)
        # The chief's replica 0's loss, whether every replica's losses were finite and
        # whether any worker got SIGTERM.
        loss, finite, preempted = self._workers.loop_end(
            float(result.loss), bool(result.loss_finite), self._preemption_watch.requested)
        return loop_actions.LoopEnd(result, first_step=step, step=new_step, loss=loss,
                                    finite=finite, final=new_step >= plan.last_step,
                                    preempted=preempted)


def _cut_at_stops(size, step, stops):
    """`size` steps from `step`, fewer if a loop must end at one of `stops` (steps after
    `step`, or None): with CPU/GPU semantics the original ran one step per Session.run and
    its hooks logged, wrote summaries and saved at exact steps; a loop ends there, so they
    come at the same steps here (the same on every worker)."""
    return max(1, min([size] + [stop - step for stop in stops if stop is not None]))


class _NanCheck(loop_actions.LoopAction):
    """Stops training with NanLossDuringTrainingError when a loop's loss was not finite on
    some replica (before host_call, summaries and checkpoints see that loop)."""

    def __init__(self, model_dir):
        self._model_dir = model_dir

    def after_loop(self, loop):
        if not (loop.finite and math.isfinite(loop.loss)):
            raise NanLossDuringTrainingError(loop.first_step, loop.step,
                                             checkpoints.latest_checkpoint(self._model_dir))
        return False


class _ReplicaCopies(loop_actions.LoopAction):
    """Makes every replica's copy of the variables that may differ replica 0's: after each
    loop with TPU semantics (TF1 wrote replica 0's values back after each Session.run), at
    the end of the call otherwise; checks the synchronized ones at the end."""

    def __init__(self, replica_sync, plan):
        self._sync = replica_sync
        self._every_loop = plan.tpu_semantics
        self._model_dir = plan.model_dir

    def after_loop(self, loop):
        if self._every_loop and loop.finite:
            self._sync.sync()
        return False

    def end(self, step):
        self._sync.verify(step, checkpoints.latest_checkpoint(self._model_dir))
        self._sync.sync()


class _Progress(loop_actions.LoopAction):
    """The progress log (loss, steps/sec) and its summaries, written by the chief.

    The estimator's `loss` summary is tagged `loss_1` when the host_call's fn made a `loss`
    (a `loss` summary, say): the original's graph gave its own summary that unique name,
    and the two series stay apart in TensorBoard. The TRAIN graph of the checkpoints'
    `.meta` files (once saving one built it) goes to TensorBoard's Graphs, once per file.
    """

    def __init__(self, plan, compiled, host_call, enabled):
        self._summary_writer = (summaries.shared_writer(plan.model_dir)
                                if plan.config.save_summary_steps and enabled else None)
        self._compiled = compiled
        self._host_call = host_call
        self._log = progress_log.progress_log(plan.config, plan.examples_per_step,
                                              self._summary_writer, plan.tpu_semantics,
                                              plan.tpu_estimator)

    def next_stop(self, step):
        """The step after `step` at which a line or summary is due (None: none by step)."""
        return self._log.next_stop(step)

    def after_loop(self, loop):
        self._log.loop_done(loop.step, loop.loss, loss_tag=self._host_call.name_after("loss"))
        self.write_graph()
        return False

    def write_graph(self):
        """Writes the `.meta` files' TRAIN graph to TensorBoard if it was built."""
        if self._summary_writer is not None:
            self._summary_writer.write_graph(self._compiled.built_meta_graph())

    def close(self):
        if self._summary_writer is not None:
            self._summary_writer.flush()


class _DeferredMetaGraphs(loop_actions.LoopAction):
    """After the first loop's hooks (the first step is done): the initial checkpoint's
    `.meta` file if its saving deferred it (`checkpoint_saves`), and its graph in
    TensorBoard."""

    def __init__(self, savers, progress):
        self._savers = savers
        self._progress = progress

    def after_loop(self, loop):
        for saver in self._savers:
            saver.write_deferred_meta_graph()
        self._progress.write_graph()
        return False


class _SaverActions(loop_actions.LoopAction):
    """One `checkpoint_saves` saver: saves when due, may stop (a saving listener asked)."""

    def __init__(self, saver):
        self._saver = saver

    def begin(self, step):
        self._saver.start(step)

    def after_loop(self, loop):
        return self._saver.after_loop(loop.step, final=loop.final)

    def end(self, step):
        self._saver.end(step)


def _input_exhausted_error(step, loop_start):
    return tf.errors.OutOfRangeError(
        None, None,
        f"input_fn's dataset ran out of data during the loop that started at global step "
        f"{loop_start} (training stopped at {step}). With use_tpu=True (TPU semantics) the "
        "input must not end before `steps`/`max_steps`: add .repeat() to the dataset, or "
        "lower steps. (With use_tpu=False a finite input ends training cleanly.)")


class _HostCallDriver(loop_actions.LoopAction):
    """Runs the spec's host_call fn on the host for every recorded step of a loop."""

    def __init__(self, compiled, every_n_steps, enabled=True):
        host_call = getattr(compiled.traced.spec, "host_call", None)
        if host_call:  # a dict not matching the fn's arguments: fail before the first step
            spec_lib.check_keyword_args("host_call", host_call)
        self._fn = compiled.traced.host_call_fn if enabled else None  # the chief's job
        self._every_n = max(1, int(every_n_steps or 1))
        self._runner = None

    def after_loop(self, loop):
        self.run(loop.result.host_call, first_step=loop.first_step)
        return False

    def name_after(self, name):
        """`name` as TF1 named an op made after the host_call's (`HostCallRunner`)."""
        return name if self._runner is None else self._runner.name_after(name)

    def run(self, stacked, first_step):
        """Calls the fn for every n-th step of the loop that started at `first_step`."""
        if self._fn is None or not stacked:
            return
        values = tf.nest.map_structure(lambda t: t.numpy(), stacked)
        steps = len(tf.nest.flatten(values)[0])
        for index in range(0, steps, self._every_n):  # the counter restarts every loop
            step_values = tf.nest.map_structure(lambda v: v[index], values)
            if self._runner is None:
                self._runner = host_calls.HostCallRunner(self._fn, step_values)
            self._runner(step_values, global_step=first_step + index)

    def close(self):
        if self._runner is not None:
            self._runner.close()

