"""The original's progress lines and summaries during train(): loss, step, global_step/sec,
examples/sec.

With TPU semantics (`ProgressLog`), the original's per-loop hooks: the loss line after the
first loop of a train() call, then every ceil(log_step_count_steps / iterations_per_loop)
loops (iterations_per_loop=50: steps 50, 150, 250); `global_step/sec` and `examples/sec`
(lines, and summaries) at the first loop end ceil(log_step_count_steps /
iterations_per_loop) global steps after the previous one (with 50: every loop; the first
loop, which includes tracing, is their baseline); the `loss` summary after the first loop,
then at the first loop end `save_summary_steps` steps after the previous one.

With CPU/GPU semantics (`StepByStepLog`) the original ran one step per Session.run and its
hooks fired at exact steps; loops here end at those steps (`next_stop`), so the lines and
summaries are the original's step for step (from the first step of a train() call):

    Estimator                              TPUEstimator(use_tpu=False)
    loss = X, step = 1                     (TF1 printed no loss lines here; this package
    global_step/sec: R  (each 100 steps)    prints the Estimator's, a documented addition)
    loss = X, step = 101 (0.228 sec)       global_step/sec: R, examples/sec: E every
    summaries: loss at 1, 101, 201, ...     ceil(log_step_count_steps / iterations_per_loop)
      global_step/sec at 101, 201, ...      steps from step 1 (lines and summaries)
                                           summaries: loss at 1, 101, 201, ...
(100: `log_step_count_steps` and `save_summary_steps` at their defaults). A rate every few
steps is written at the first loop end at least that many steps after the previous one.
"""
import collections
import math
import time

import numpy as np

from tpu_estimator_compat import log as logging
from tpu_estimator_compat.config.tpu_config import parse_iterations_per_loop


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

    def next_due(self, step):
        """The first step after `step` at which a mark is due."""
        return step + 1 if self._last is None else max(step + 1, self._last[0] + self._every)

    def mark(self, step, now):
        """Records a mark; returns the `StepRate` since the previous one (None for the first)."""
        previous, self._last = self._last, (step, now)
        if previous is None:
            return None
        seconds = now - previous[1]
        steps_per_sec = (step - previous[0]) / max(seconds, 1e-9)
        return StepRate(seconds, steps_per_sec, steps_per_sec * self._examples_per_step)


def progress_log(config, examples_per_step, summary_writer, tpu_semantics, tpu_estimator):
    """The progress log of one train() call of a TPUEstimator (`tpu_estimator`) or an
    Estimator; summaries go to `summary_writer` (a `summaries.ScalarSummaryWriter`, or
    None: lines only)."""
    log_every = config.log_step_count_steps
    if not tpu_estimator:  # Estimator's StepCounterHook
        return StepByStepLog(config, examples_per_step, summary_writer,
                             rates_every=log_every, rate_tags=("global_step/sec",))
    # TPUEstimator's ExamplesPerSecondHook: every log_step_count_steps / iterations_per_loop
    # global steps (meant for TPU loops; on the one-step runs of use_tpu=False too).
    loop = parse_iterations_per_loop(config.tpu_config.iterations_per_loop)
    steps_per_loop = loop.value if loop.unit == "count" else 1  # '<N>s': about every loop
    rates_every = int(math.ceil(log_every / steps_per_loop)) if log_every else None
    if tpu_semantics:
        return ProgressLog(config, examples_per_step, summary_writer, rates_every,
                           lines_every_loops=rates_every)
    return StepByStepLog(config, examples_per_step, summary_writer, rates_every,
                         rate_tags=("global_step/sec", "examples/sec"))


class ProgressLog:
    """TPU semantics: the progress lines (INFO) and, with a `summaries.ScalarSummaryWriter`,
    the `loss` and rate summaries of one train() call, at loop ends, as the original's
    hooks: the loss line every `lines_every_loops` loops (its LoggingTensorHook counted
    Session.runs), the rate lines and summaries every `rates_every` global steps (its
    ExamplesPerSecondHook: with iterations_per_loop >= that, every loop), the `loss`
    summary every `save_summary_steps`."""

    def __init__(self, config, examples_per_step, summary_writer, rates_every,
                 lines_every_loops):
        self._writer = summary_writer
        self._lines = StepRateTracker(lines_every_loops, examples_per_step) if (
            lines_every_loops) else None
        self._loops = 0
        self._rates = StepRateTracker(rates_every, examples_per_step) if rates_every else None
        self._summaries = StepRateTracker(config.save_summary_steps, examples_per_step)

    def next_stop(self, step):  # pylint: disable=unused-argument
        """None: loops run `iterations_per_loop` steps whatever is due."""
        return None

    def loop_done(self, step, loss, loss_tag="loss"):
        """Logs and writes what is due after a loop that ended at global step `step`;
        the loss summary is tagged `loss_tag`."""
        now = time.time()
        self._loops += 1
        if self._lines is not None and self._lines.due(self._loops):
            _log_loss(loss, step, self._lines.mark(self._loops, now))
        if self._rates is not None and self._rates.due(step):
            rate = self._rates.mark(step, now)
            if rate is not None:
                logging.info("global_step/sec: %g", rate.global_step_per_sec)
                logging.info("examples/sec: %g", rate.examples_per_sec)
                if self._writer is not None:
                    self._writer.write(step, rate.as_summaries())
        if self._writer is not None and self._summaries.due(step):
            self._summaries.mark(step, now)
            self._writer.write(step, {loss_tag: loss})


class StepByStepLog:
    """CPU/GPU semantics: the original Estimator's hooks, step by step. `next_stop` says
    where the next loop must end for a loss line or loss summary to come at its step.

    Args:
      config: the RunConfig (`log_step_count_steps`, `save_summary_steps`).
      examples_per_step: examples in one global step, for `examples/sec`.
      summary_writer: a `summaries.ScalarSummaryWriter`, or None (lines only).
      rates_every: steps between rate lines and summaries (None: none).
      rate_tags: which of `global_step/sec` and `examples/sec` are logged and written.
    """

    def __init__(self, config, examples_per_step, summary_writer, rates_every, rate_tags):
        def tracker(every):
            return StepRateTracker(every, examples_per_step) if every else None
        self._writer = summary_writer
        self._lines = tracker(config.log_step_count_steps)
        self._rates = tracker(rates_every)
        self._summaries = tracker(config.save_summary_steps)
        self._rate_tags = rate_tags

    def next_stop(self, step):
        """The first step after `step` with a loss line or loss summary due (None: none)."""
        due = [t.next_due(step) for t in (self._lines, self._summaries) if t is not None]
        return min(due) if due else None

    def loop_done(self, step, loss, loss_tag="loss"):
        """Logs and writes what is due at global step `step`, in the original's order; the
        loss summary is tagged `loss_tag`."""
        now = time.time()
        if self._rates is not None and self._rates.due(step):
            rate = self._rates.mark(step, now)
            if rate is not None:
                values = {tag: value for tag, value in rate.as_summaries().items()
                          if tag in self._rate_tags}
                for tag, value in values.items():
                    logging.info("%s: %g", tag, value)
                if self._writer is not None:
                    self._writer.write(step, values)
        if self._lines is not None and self._lines.due(step):
            _log_loss(loss, step, self._lines.mark(step, now))
        if self._summaries is not None and self._summaries.due(step):
            self._summaries.mark(step, now)
            if self._writer is not None:
                self._writer.write(step, {loss_tag: loss})


def _log_loss(loss, step, rate):
    """The original's loss line, with the seconds since the previous one when `rate` has them."""
    loss_text = str(np.float32(loss))  # TF1's text of the float32 loss
    if rate is None:
        logging.info("loss = %s, step = %d", loss_text, step)
    else:
        logging.info("loss = %s, step = %d (%.3f sec)", loss_text, step, rate.seconds)
