"""The original's progress lines around device loops, word for word (log-parsing scripts key
on them):

    TPU semantics, before each device loop (the original's TPUInfeedOutfeedSessionHook):
        Enqueue next (N) batch(es) of data to infeed.
        Dequeue next (N) batch(es) of data from outfeed.
    evaluate() (TF1's evaluation loop):
        Starting evaluation at 2026-11-27T09:16:33
        Evaluation [1/3]            every step, or every steps // 10 steps from 20 steps on,
        ...                         and the last; `Evaluation [k]` when steps is None
        Inference Time : 0.72341s
        Finished evaluation at 2026-11-27-09:16:33

With TPU semantics the original ran all eval steps in one Session.run and counted them once
at its end (`Evaluation [3/3]`), as the one device loop here does; without, it counted each
step as it ran: here an eval loop ends at each step that gets a line (every 100 steps when
steps is None), and the steps of each loop are counted when it returns.
"""
import math
import time

from tpu_estimator_compat import log as logging

UNCOUNTED_LOOP = 100  # steps per eval loop with CPU semantics when steps is None


def infeed_outfeed(batches):
    """The TPU lines before a device loop of `batches` steps."""
    logging.info("Enqueue next (%d) batch(es) of data to infeed.", batches)
    logging.info("Dequeue next (%d) batch(es) of data from outfeed.", batches)


class EvaluationProgress:
    """The evaluation lines of one `evaluate()` of `steps` steps (None: until the input ends)."""

    def __init__(self, steps):
        self._steps = steps
        # TF1 logged every step below 20 steps, else every steps // 10 (and the last).
        self._every = 1 if steps is None or steps < 20 else math.floor(steps / 10.)
        self._done = 0
        self._started = None

    @property
    def done(self):
        """Steps counted so far."""
        return self._done

    def steps_until_next_line(self):
        """Steps from here to the next step that gets a line (with TF1's CPU semantics a
        loop ends there, so lines come as evaluation goes); `UNCOUNTED_LOOP` steps when
        steps is None."""
        if self._steps is None:
            return UNCOUNTED_LOOP
        next_line = min(self._steps, (self._done // self._every + 1) * self._every)
        return max(1, next_line - self._done)

    def start(self):
        logging.info("Starting evaluation at " +
                     time.strftime("%Y-%m-%dT%H:%M:%S", time.localtime()))
        self._started = time.time()

    def steps_done(self, steps, each_step=True):
        """Counts `steps` more steps: each one as TF1's CPU loop did, or (`each_step` False)
        all at once, as its TPU loop did."""
        counts = range(self._done + 1, self._done + steps + 1) if each_step else (
            [self._done + steps] if steps else [])
        self._done += steps
        for done in counts:
            if self._steps is None:
                logging.info("Evaluation [%d]", done)
            elif done % self._every == 0 or done == self._steps:
                logging.info("Evaluation [%d/%d]", done, self._steps)

    def finish(self):
        logging.info("Inference Time : {:0.5f}s".format(time.time() - self._started))
        logging.info("Finished evaluation at " +
                     time.strftime("%Y-%m-%d-%H:%M:%S", time.localtime()))
