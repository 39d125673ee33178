"""The outer training loop: host-side work between executions of the device loop.

    while global_step < last_step:
        n = min(iterations_per_loop, last_step - global_step)
        loss, host_call_tensors = train_loop(iterator, n)      # n steps on the device
        run host_call per step; log; write summaries; checkpoint when due

Checkpoints are written at the start (the initial step), every `save_checkpoints_steps`
(rounded up to loop boundaries) or `save_checkpoints_secs`, and at the end, as the original.
"""
import math
import time

import numpy as np
import tensorflow as tf
from absl import logging

from tpu_estimator_compat import checkpoints
from tpu_estimator_compat import host_calls
from tpu_estimator_compat import summaries
from tpu_estimator_compat.config import parse_iterations_per_loop


class NanLossDuringTrainingError(RuntimeError):
    """The loss became NaN or infinite (as the original NanTensorHook reported)."""

    def __str__(self):
        return "NaN loss during training."


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


def run_training(engine, compiled, iterator, *, config, model_dir, last_step,
                 iterations_per_loop, examples_per_step, host_call_every_n_steps,
                 tpu_semantics, saving_listeners=()):
    """Runs loops until `last_step` (or the end of a finite input); returns the final loss."""
    sizer = IterationSizer(iterations_per_loop)
    step = engine.global_step
    schedule = _CheckpointSchedule(config, step)
    saver = _make_saver(config, model_dir) if schedule.enabled else None
    summary_writer = summaries.ScalarSummaryWriter(model_dir) if config.save_summary_steps else None
    host_call = _HostCallDriver(compiled, host_call_every_n_steps)
    progress = _ProgressLog(config, examples_per_step, step, summary_writer)
    if saver is not None and checkpoints.latest_checkpoint(model_dir) != _path(model_dir, step):
        _save(engine, saver, step, saving_listeners)
    loss = None
    try:
        while step < last_step:
            size = sizer.next_size(last_step - step)
            started = time.time()
            try:
                loss_tensor, host_call_tensors = compiled.loop(iterator, tf.constant(size))
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
            loss = float(loss_tensor)
            if not math.isfinite(loss):
                raise NanLossDuringTrainingError()
            host_call.run(host_call_tensors, first_step=step)
            progress.loop_done(new_step, loss)
            step = new_step
            if saver is not None and schedule.due(step) and step < last_step:
                _save(engine, saver, step, saving_listeners)
                schedule.saved(step)
    finally:
        host_call.close()
        if summary_writer is not None:
            summary_writer.flush()
    if saver is not None and checkpoints.latest_checkpoint(model_dir) != _path(model_dir, step):
        _save(engine, saver, step, saving_listeners)
    if loss is not None:
        logging.info("Loss for final step: %s.", loss)
    return loss


def _make_saver(config, model_dir):
    return checkpoints.CheckpointSaver(
        model_dir, max_to_keep=config.keep_checkpoint_max,
        keep_checkpoint_every_n_hours=config.keep_checkpoint_every_n_hours)


def _path(model_dir, step):
    return f"{model_dir.rstrip('/')}/{checkpoints.CHECKPOINT_BASENAME}-{step}"


def _save(engine, saver, step, saving_listeners):
    for listener in saving_listeners:
        listener.before_save(None, step)
    path = saver.save(engine.store.named_variables(), step)
    logging.info("Saving checkpoints for %d into %s.", step, path)
    engine.mark_synced(path)
    for listener in saving_listeners:
        listener.after_save(None, step)
    return path


def _input_exhausted_error(step, loop_start):
    return tf.errors.OutOfRangeError(
        None, None,
        f"input_fn's dataset ran out of data during the loop that started at global step "
        f"{loop_start} (training stopped at {step}). With use_tpu=True (TPU semantics) the "
        "input must not end before `steps`/`max_steps`: add .repeat() to the dataset, or "
        "lower steps. (With use_tpu=False a finite input ends training cleanly.)")


class _HostCallDriver:
    """Runs the spec's host_call fn on the host for every recorded step of a loop."""

    def __init__(self, compiled, every_n_steps):
        self._fn = compiled.traced.host_call_fn
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

    Lines are logged every `log_step_count_steps` and summaries written every
    `save_summary_steps`, both rounded up to loop boundaries.
    """

    def __init__(self, config, examples_per_step, step, summary_writer):
        self._log_every = config.log_step_count_steps or 100
        self._summary_every = config.save_summary_steps
        self._examples_per_step = examples_per_step
        self._writer = summary_writer
        now = time.time()
        self._last_log = (step, now)
        self._last_summary = (step, now)

    def _rates(self, since, step, now):
        steps_per_sec = (step - since[0]) / max(now - since[1], 1e-9)
        return steps_per_sec, steps_per_sec * self._examples_per_step

    def loop_done(self, step, loss):
        now = time.time()
        if step - self._last_log[0] >= self._log_every:
            steps_per_sec, examples_per_sec = self._rates(self._last_log, step, now)
            logging.info("loss = %s, step = %d (%.3f sec)", loss, step, now - self._last_log[1])
            logging.info("global_step/sec: %g", steps_per_sec)
            logging.info("examples/sec: %g", examples_per_sec)
            self._last_log = (step, now)
        if self._writer is not None and step - self._last_summary[0] >= self._summary_every:
            steps_per_sec, examples_per_sec = self._rates(self._last_summary, step, now)
            self._writer.write(step, {"loss": loss, "global_step/sec": steps_per_sec,
                                      "examples/sec": examples_per_sec})
            self._last_summary = (step, now)
