"""The outer training loop: host-side work between executions of the device loop.

    while global_step < last_step:
        n = min(iterations_per_loop, last_step - global_step)
        hooks: before_run
        result = train_loop(iterator, n)   # n steps (a TrainLoopResult)
        stop if any replica's loss was not finite at any step (NanLossDuringTrainingError)
        hooks: after_run; run host_call per step; log; write summaries; checkpoint when due
          (never from NaN/Inf weights: a NaN gradient stops training there instead)
        stop if a hook or a saving listener asked to

Checkpoints are written at the start (the initial step), every `save_checkpoints_steps`
(rounded up to loop boundaries) or `save_checkpoints_secs`, and at the end, as the original.
A `CheckpointSaverHook` among the hooks replaces that schedule ("Bypassing TPUEstimator
hook"): its directory, `save_steps`/`save_secs` timer and listeners are used, with this
module's saver (the hook's own `Saver` needs a Session). Listeners get the `SessionStandIn`.

With several workers (MultiWorkerMirroredStrategy) every worker runs this loop in lockstep:
the loss, each save decision and a SIGTERM stop are agreed once per loop, only the chief
writes checkpoints, summaries and host_call output, and all workers wait for the chief's last
checkpoint before train() returns (`multi_worker.py`).
"""
import math
import os
import time

import numpy as np
import tensorflow as tf

from tpu_estimator_compat.state import checkpoints
from tpu_estimator_compat.host import host_calls
from tpu_estimator_compat import log as logging
from tpu_estimator_compat.host import multi_worker
from tpu_estimator_compat.host import preemption
from tpu_estimator_compat.host import summaries
from tpu_estimator_compat.api import spec as spec_lib
from tpu_estimator_compat.config.tpu_config import parse_iterations_per_loop


class NanLossDuringTrainingError(tf.compat.v1.train.NanLossDuringTrainingError):
    """The loss or the weights became NaN or infinite (the original NanTensorHook's error).

    A subclass of `tf.compat.v1.train.NanLossDuringTrainingError`, which programs catch.
    Either some replica's loss was not finite during the loop of global steps
    `loop_start..loop_end`, or (`variables` set) every loss was finite but the variables held
    NaN/Inf when a checkpoint was due at `loop_end` (a NaN gradient, e.g. on a loop's last
    step). No checkpoint is ever written from non-finite weights, so `latest_checkpoint`
    (None: none yet) holds the newest finite weights.
    """

    def __init__(self, loop_start=None, loop_end=None, latest_checkpoint=None, variables=None):
        super().__init__()
        self.loop_start, self.loop_end = loop_start, loop_end
        self.latest_checkpoint = latest_checkpoint
        self.variables = list(variables or [])

    def __reduce__(self):
        return type(self), (self.loop_start, self.loop_end, self.latest_checkpoint,
                            self.variables)

    def __str__(self):
        if self.loop_end is None:
            return "NaN loss during training."
        if self.variables:
            shown = ", ".join(self.variables[:5]) + (", ..." if len(self.variables) > 5 else "")
            what = (f"Every replica's loss was finite, but at global step {self.loop_end} "
                    f"{len(self.variables)} variable(s) hold NaN/Inf ({shown}): a gradient was "
                    f"not finite. The checkpoint for step {self.loop_end} was not written")
        else:
            what = (f"The loss of at least one replica was not finite during the loop of "
                    f"global steps {self.loop_start}..{self.loop_end}")
        if self.latest_checkpoint:
            kept = (f"checkpoints are only written from finite weights, so the latest one, "
                    f"{self.latest_checkpoint}, is the last good one")
        else:
            kept = "no checkpoint has been written from this model_dir's training yet"
        return (f"NaN loss during training. {what}; {kept}. Lower the learning rate, clip "
                "gradients or check the input for NaN/Inf.")


class IterationSizer:
    """How many steps the next loop runs: a count, or an estimate for a time-based loop.

    For `iterations_per_loop='<N>s'` the first loop runs one step, later loops run as many
    steps as fit in N seconds at the mean step time of the recent loops, as the original.
    """

    def __init__(self, iterations_per_loop):
        parsed = parse_iterations_per_loop(iterations_per_loop)
        self._count = parsed.value if parsed.unit == "count" else None
        self._seconds = parsed.value if parsed.unit == "seconds" else None
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


class _CheckpointSchedule:
    """When checkpoints are due: every N steps (at loop ends) or every N seconds."""

    def __init__(self, config, start_step):
        self._every_steps = config.save_checkpoints_steps
        self._every_secs = config.save_checkpoints_secs
        self._last_step = start_step
        self._last_time = time.time()

    @property
    def enabled(self):
        return bool(self._every_steps or self._every_secs)

    def due(self, step):
        if self._every_steps:
            return step >= self._last_step + self._every_steps
        return bool(self._every_secs) and time.time() >= self._last_time + self._every_secs

    def saved(self, step):
        self._last_step, self._last_time = step, time.time()


@multi_worker.explains_worker_failures("Training")
def run_training(engine, compiled, iterator, *, config, model_dir, last_step,
                 iterations_per_loop, examples_per_step, host_call_every_n_steps,
                 tpu_semantics, hook_run, saving_listeners=()):
    """Runs loops until `last_step`, the end of a finite input or a stop request from a hook
    or saving listener; returns the final loss.

    Args:
      hook_run: the call's `hooks.HookRun`, already started (begin/after_create_session
        done).
    """
    sizer = IterationSizer(iterations_per_loop)
    step = engine.global_step
    # Multi-worker: every worker runs this loop in lockstep; decisions are the chief's and
    # only the chief writes files (multi_worker.py).
    workers = multi_worker.WorkerGroup(engine.runtime)
    if workers.is_chief:
        checkpoints.require_writable(model_dir)
    savers = _checkpoint_savers(engine, config, model_dir, hook_run, saving_listeners,
                                compiled.meta_graph)
    summary_writer = (summaries.ScalarSummaryWriter(model_dir)
                      if config.save_summary_steps and workers.is_chief else None)
    host_call = _HostCallDriver(compiled, host_call_every_n_steps, enabled=workers.is_chief)
    progress = _ProgressLog(config, examples_per_step, step, summary_writer)
    for saver in savers:
        saver.start(step)
    loss = None
    preempted = False  # as agreed by all workers (a SIGTERM may reach only one of them)
    with preemption.watch_for_preemption() as preemption_watch:
        try:
            while step < last_step:
                size = sizer.next_size(last_step - step)
                started = time.time()
                hook_run.before_loop()
                try:
                    result = compiled.loop(iterator, tf.constant(size))  # TrainLoopResult
                except tf.errors.OutOfRangeError:
                    engine.mark_changed()
                    new_step = engine.global_step
                    if tpu_semantics:
                        raise _input_exhausted_error(new_step, step) from None
                    logging.info("Input exhausted at global step %d: training ends.", new_step)
                    step = new_step
                    break
                engine.mark_changed()
                new_step = engine.global_step
                if new_step <= step:
                    raise RuntimeError(
                        f"global_step did not advance during a loop of {size} steps (still "
                        f"{step}). The train_op must increment it: pass "
                        "global_step=tf.compat.v1.train.get_global_step() to minimize() or "
                        "apply_gradients().")
                sizer.record(new_step - step, time.time() - started)
                # The chief's replica 0's loss, whether every replica's losses were finite
                # and whether any worker got SIGTERM.
                loss, finite, preempted = workers.loop_end(
                    float(result.loss), bool(result.loss_finite), preemption_watch.requested)
                stop = hook_run.after_loop(result.hook_fetches)
                if not (finite and math.isfinite(loss)):
                    raise NanLossDuringTrainingError(step, new_step,
                                                     checkpoints.latest_checkpoint(model_dir))
                host_call.run(result.host_call, first_step=step)
                progress.loop_done(new_step, loss)
                step = new_step
                for saver in savers:
                    stop = saver.after_loop(step, final=step >= last_step) or stop
                if stop:
                    logging.info("Training stopped at global step %d: a hook or saving listener "
                                 "requested it.", step)
                    break
                if preempted:
                    break
        finally:
            host_call.close()
            if summary_writer is not None:
                summary_writer.flush()
    hook_run.end()
    for saver in savers:
        saver.end(step)
    if savers:
        workers.barrier()  # no worker goes on before the chief has written the last checkpoint
    if preempted or preemption_watch.requested:
        raise preemption.preempted_error(step, checkpoints.latest_checkpoint(model_dir))
    if loss is not None:
        logging.info("Loss for final step: %s.", loss)
    return loss


def _make_saver(engine, directory, max_to_keep, keep_checkpoint_every_n_hours):
    if not engine.runtime.is_chief:
        return multi_worker.NonChiefSaver(directory)
    return checkpoints.CheckpointSaver(
        directory, max_to_keep=max_to_keep,
        keep_checkpoint_every_n_hours=keep_checkpoint_every_n_hours)


def _path(model_dir, step):
    return f"{model_dir.rstrip('/')}/{checkpoints.CHECKPOINT_BASENAME}-{step}"


def _checkpoint_savers(engine, config, model_dir, hook_run, saving_listeners, meta_graph):
    """The call's checkpoint savers: the user's CheckpointSaverHooks if any, else RunConfig's.

    `meta_graph()` gives the serialized MetaGraphDef written beside each checkpoint, or None.

    Raises:
      ValueError: saving_listeners were given but nothing saves checkpoints (as Estimator).
    """
    saver_hooks = hook_run.checkpoint_saver_hooks
    schedule = _CheckpointSchedule(config, engine.global_step)
    if saver_hooks:
        if schedule.enabled:
            logging.info("Bypassing TPUEstimator hook")
        return [_HookSaves(engine, hook, config, model_dir, hook_run.session,
                           list(saving_listeners) if index == 0 else [], meta_graph)
                for index, hook in enumerate(saver_hooks)]
    if not schedule.enabled:
        if saving_listeners:
            raise ValueError(
                "There should be a CheckpointSaverHook to use saving_listeners. Please set "
                "one of the RunConfig.save_checkpoints_steps or "
                "RunConfig.save_checkpoints_secs.")
        return []
    saver = _make_saver(engine, model_dir, config.keep_checkpoint_max,
                        config.keep_checkpoint_every_n_hours)
    return [_ConfigSaves(engine, schedule, saver, model_dir, hook_run.session,
                         saving_listeners, model_dir, meta_graph)]


class _Saves:
    """One series of checkpoints in one train() call: a saver, a directory, listeners.

    start() saves the initial step (unless it is already the latest checkpoint), after_loop()
    saves when due and returns whether a listener's after_save() asked to stop, end() saves
    the final step and ends the listeners. With several workers every save is decided by
    the chief (`_decide`) and only the chief writes and has listeners.
    """

    def __init__(self, engine, saver, directory, session, listeners, model_dir, meta_graph):
        self._engine = engine
        self._meta_graph = meta_graph
        self._saver = saver
        self._directory = directory
        self._session = session
        self._workers = multi_worker.WorkerGroup(engine.runtime)
        self._listeners = list(listeners) if self._workers.is_chief else []
        self._is_model_dir = os.path.abspath(directory) == os.path.abspath(model_dir)

    def _decide(self, due):
        """The chief's `due` on every worker (their clocks and file views may differ)."""
        return self._workers.from_chief(bool(due))[0] > 0

    def start(self, step):
        for listener in self._listeners:
            listener.begin()
        if self._decide(not self._is_latest(step)):
            self._save(step)

    def end(self, step):
        if self._decide(self._final_save_due(step) and not self._is_latest(step)):
            self._save(step)
        for listener in self._listeners:
            listener.end(self._session, step)

    def _final_save_due(self, step):
        return True

    def _is_latest(self, step):
        return checkpoints.latest_checkpoint(self._directory) == _path(self._directory, step)

    def _save(self, step):
        non_finite = checkpoints.non_finite_variables(self._engine.store.named_variables())
        if non_finite:  # the same on every worker: the variables are mirrored
            raise NanLossDuringTrainingError(
                step, step, checkpoints.latest_checkpoint(self._directory), non_finite)
        for listener in self._listeners:
            listener.before_save(self._session, step)
        try:
            path = self._saver.save(self._engine.store.named_variables(), step,
                                    meta_graph=self._meta_graph())
        except (tf.errors.OpError, OSError) as error:
            raise checkpoints.CheckpointWriteError(self._directory, step, error) from error
        logging.info("Saving checkpoints for %d into %s.", step, path)
        if self._is_model_dir:
            self._engine.mark_synced(path)
        stop = False
        for listener in self._listeners:
            if listener.after_save(self._session, step):
                logging.info("A CheckpointSaverListener requested that training be stopped. "
                             "listener: %s", listener)
                stop = True
        return stop


class _ConfigSaves(_Saves):
    """RunConfig's schedule: every save_checkpoints_steps (at loop ends) or _secs."""

    def __init__(self, engine, schedule, saver, directory, session, listeners, model_dir,
                 meta_graph):
        super().__init__(engine, saver, directory, session, listeners, model_dir, meta_graph)
        self._schedule = schedule

    def after_loop(self, step, final):
        if self._decide(self._schedule.due(step) and not final):
            self._schedule.saved(step)
            return self._save(step)
        return False


class _HookSaves(_Saves):
    """A user's CheckpointSaverHook: its directory, timer (save_steps/save_secs, checked at
    loop ends) and listeners, and the retention of its Saver if it was given one."""

    def __init__(self, engine, hook, config, model_dir, session, extra_listeners, meta_graph):
        # pylint: disable=protected-access  (CheckpointSaverHook keeps these private)
        directory = hook._checkpoint_dir
        basename = os.path.basename(hook._save_path)
        if basename != checkpoints.CHECKPOINT_BASENAME:
            raise NotImplementedError(
                f"CheckpointSaverHook(checkpoint_basename={basename!r}): tpu_estimator_compat "
                f"writes checkpoints named {checkpoints.CHECKPOINT_BASENAME}-<step> only. "
                "Use the default checkpoint_basename.")
        user_saver = hook._saver
        saver = _make_saver(
            engine, directory,
            getattr(user_saver, "_max_to_keep", config.keep_checkpoint_max),
            getattr(user_saver, "_keep_checkpoint_every_n_hours",
                    config.keep_checkpoint_every_n_hours))
        super().__init__(engine, saver, directory, session,
                         list(hook._listeners) + list(extra_listeners), model_dir, meta_graph)
        self._timer = hook._timer

    def start(self, step):
        super().start(step)
        self._timer.update_last_triggered_step(step)

    def after_loop(self, step, final):
        del final
        if self._decide(self._timer.should_trigger_for_step(step)):
            self._timer.update_last_triggered_step(step)
            return self._save(step)
        return False

    def _final_save_due(self, step):
        return step != self._timer.last_triggered_step()


def _input_exhausted_error(step, loop_start):
    return tf.errors.OutOfRangeError(
        None, None,
        f"input_fn's dataset ran out of data during the loop that started at global step "
        f"{loop_start} (training stopped at {step}). With use_tpu=True (TPU semantics) the "
        "input must not end before `steps`/`max_steps`: add .repeat() to the dataset, or "
        "lower steps. (With use_tpu=False a finite input ends training cleanly.)")


class _HostCallDriver:
    """Runs the spec's host_call fn on the host for every recorded step of a loop."""

    def __init__(self, compiled, every_n_steps, enabled=True):
        host_call = getattr(compiled.traced.spec, "host_call", None)
        if host_call:  # a dict not matching the fn's arguments: fail before the first step
            spec_lib.check_keyword_args("host_call", host_call)
        self._fn = compiled.traced.host_call_fn if enabled else None  # the chief's job
        self._every_n = max(1, int(every_n_steps or 1))
        self._runner = None

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


class _ProgressLog:
    """The original's progress lines and summaries: loss, step, global_step/sec, examples/sec.

    One schedule for both, the original's (its LoggingTensorHook and SummarySaverHook): after
    the first loop of a train() call, then at the first loop end `log_step_count_steps`
    (lines) or `save_summary_steps` (summaries) steps after the previous one. So with equal
    settings the loss is written at the steps the lines name (iterations_per_loop=50, 100:
    50, 150, 250, 350; the original on CPU, one step per run: 1, 101, 201, 301). Rates are
    measured from the previous line or summary (none after the first loop, which includes
    tracing), as its StepCounterHook measured them.
    """

    def __init__(self, config, examples_per_step, step, summary_writer):
        self._examples_per_step = examples_per_step
        self._writer = summary_writer
        self._lines = _Schedule(config.log_step_count_steps or 100)
        self._summaries = _Schedule(config.save_summary_steps)

    def _rates(self, since, step, now):
        steps_per_sec = (step - since[0]) / max(now - since[1], 1e-9)
        return steps_per_sec, steps_per_sec * self._examples_per_step

    def loop_done(self, step, loss):
        now = time.time()
        if self._lines.due(step):
            previous = self._lines.mark(step, now)
            if previous is None:
                logging.info("loss = %s, step = %d", loss, step)
            else:
                steps_per_sec, examples_per_sec = self._rates(previous, step, now)
                logging.info("loss = %s, step = %d (%.3f sec)", loss, step, now - previous[1])
                logging.info("global_step/sec: %g", steps_per_sec)
                logging.info("examples/sec: %g", examples_per_sec)
        if self._writer is not None and self._summaries.due(step):
            previous = self._summaries.mark(step, now)
            scalars = {"loss": loss}
            if previous is not None:
                steps_per_sec, examples_per_sec = self._rates(previous, step, now)
                scalars.update({"global_step/sec": steps_per_sec,
                                "examples/sec": examples_per_sec})
            self._writer.write(step, scalars)


class _Schedule:
    """Due after the first loop, then `every` steps after the last time it was marked."""

    def __init__(self, every):
        self._every = every
        self._last = None  # (step, time) of the last mark

    def due(self, step):
        return self._last is None or step - self._last[0] >= self._every

    def mark(self, step, now):
        """Records a mark; returns the previous one (None for the first)."""
        previous, self._last = self._last, (step, now)
        return previous
