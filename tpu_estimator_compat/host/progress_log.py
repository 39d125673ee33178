"""The original's progress lines and summaries during train(): loss, step, global_step/sec,
examples/sec.

One schedule for both, the original's (its LoggingTensorHook and SummarySaverHook): after
the first loop of a train() call, then at the first loop end `log_step_count_steps` (lines)
or `save_summary_steps` (summaries) steps after the previous one. So with equal settings the
loss is written at the steps the lines name (iterations_per_loop=50, 100: 50, 150, 250, 350;
the original on CPU, one step per run: 1, 101, 201, 301). Rates are measured from the
previous line or summary (none after the first loop, which includes tracing), as its
StepCounterHook measured them.
"""
import collections
import time

import numpy as np

from tpu_estimator_compat import log as logging


class StepRate(collections.namedtuple(
        "StepRate", ["seconds", "global_step_per_sec", "examples_per_sec"])):
    """Training speed since the previous mark: the wall-clock `seconds` and the two rates."""

    __slots__ = ()

    def as_summaries(self):
        """`{'global_step/sec': ..., 'examples/sec': ...}`, TF1's tags."""
        return {"global_step/sec": self.global_step_per_sec,
                "examples/sec": self.examples_per_sec}


class StepRateTracker:
    """Marks due after the first loop, then `every` steps after the previous mark, and the
    step rates between marks.

    The caller passes the global step and the wall time (`time.time()`) at each loop end.

    Args:
      every: steps between marks (`log_step_count_steps` or `save_summary_steps`).
      examples_per_step: examples in one global step, for `examples/sec`.
    """

    def __init__(self, every, examples_per_step):
        self._every = every
        self._examples_per_step = examples_per_step
        self._last = None  # (step, time) of the last mark

    def due(self, step):
        return self._last is None or step - self._last[0] >= self._every

    def mark(self, step, now):
        """Records a mark; returns the `StepRate` since the previous one (None for the first)."""
        previous, self._last = self._last, (step, now)
        if previous is None:
            return None
        seconds = now - previous[1]
        steps_per_sec = (step - previous[0]) / max(seconds, 1e-9)
        return StepRate(seconds, steps_per_sec, steps_per_sec * self._examples_per_step)


class ProgressLog:
    """Writes the progress lines (INFO) and, with a `summaries.ScalarSummaryWriter`, the
    `loss` and rate summaries of one train() call."""

    def __init__(self, config, examples_per_step, summary_writer):
        self._writer = summary_writer
        self._lines = StepRateTracker(config.log_step_count_steps or 100, examples_per_step)
        self._summaries = StepRateTracker(config.save_summary_steps, examples_per_step)

    def loop_done(self, step, loss):
        """Logs and writes what is due after a loop that ended at global step `step`."""
        now = time.time()
        if self._lines.due(step):
            rate = self._lines.mark(step, now)
            loss_text = str(np.float32(loss))  # TF1's text of the float32 loss
            if rate is None:
                logging.info("loss = %s, step = %d", loss_text, step)
            else:
                logging.info("loss = %s, step = %d (%.3f sec)", loss_text, step, rate.seconds)
                logging.info("global_step/sec: %g", rate.global_step_per_sec)
                logging.info("examples/sec: %g", rate.examples_per_sec)
        if self._writer is not None and self._summaries.due(step):
            rate = self._summaries.mark(step, now)
            self._writer.write(step, {"loss": loss, **(rate.as_summaries() if rate else {})})
