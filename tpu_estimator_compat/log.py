"""The package's log lines go to TensorFlow's logger ("tensorflow"), as the original's did.

So `tf.logging.set_verbosity` (`tf.compat.v1.logging`, i.e. that logger's level) shows or
silences them, with or without `tf.app.run`: `INFO:tensorflow:Loss for final step: ...`.

Each line is printed once. TensorFlow gives its logger a stderr handler of its own when the
root logger has none at that moment; `tf.app.run` (absl) later puts absl's handler on the
root logger, and every TensorFlow, user (`tf.logging.info`) and package line was then printed
twice, once per handler (the original did the same). Importing this module (the v1 namespace
and the estimator's modules do) adds a filter to
TensorFlow's own handlers that leaves a line to the root logger's handlers whenever those
will print it (the root logger has handlers and the "tensorflow" logger propagates to it):
under `tf.app.run` lines come out once, in absl's format; otherwise in TensorFlow's.

A phase that can take long (tracing model_fn, building the step, restoring, compiling,
evaluating) runs inside `phase(...)`: while it lasts, a daemon thread logs every
`HEARTBEAT_SECONDS` what it is doing and the time so far (`Still calling model_fn for the
train step: 20 s so far.`), and stops when the phase ends, by an error too.
"""
import contextlib
import logging
import threading
import time

import tensorflow as tf

HEARTBEAT_SECONDS = 10.0  # between a long phase's progress lines; tests set it lower


def info(msg, *args):
    tf.get_logger().info(msg, *args)


def warning(msg, *args):
    tf.get_logger().warning(msg, *args)


@contextlib.contextmanager
def phase(doing, *args):
    """Logs `Still <doing % args>: N s so far.` every `HEARTBEAT_SECONDS` until the block
    ends (normally or by an exception); a block shorter than that logs nothing. A phase
    inside another speaks for both while it lasts."""
    what = doing % args if args else doing
    interval = HEARTBEAT_SECONDS
    started = time.monotonic()
    done = threading.Event()
    outer = _ACTIVE.phases[-1] if _ACTIVE.phases else None
    muted = threading.Event()

    def beat():
        while not done.wait(interval):
            if not muted.is_set():
                info("Still %s: %d s so far.", what, round(time.monotonic() - started))

    thread = threading.Thread(target=beat, name="tpu_estimator_compat-heartbeat", daemon=True)
    if outer is not None:
        outer.set()
    _ACTIVE.phases.append(muted)
    thread.start()
    try:
        yield
    finally:
        done.set()
        thread.join()
        _ACTIVE.phases.pop()
        if outer is not None:
            outer.clear()


class _ActivePhases(threading.local):
    def __init__(self):
        super().__init__()
        self.phases = []  # each open phase's `muted` event, innermost last


_ACTIVE = _ActivePhases()


class _LeftToRootHandlers(logging.Filter):
    """Drops a record that the root logger's handlers will print too."""

    def filter(self, record):
        logger = logging.getLogger("tensorflow")
        return not (logger.propagate and logging.getLogger().handlers)


def _print_each_line_once():
    for handler in tf.get_logger().handlers:
        if not any(isinstance(f, _LeftToRootHandlers) for f in handler.filters):
            handler.addFilter(_LeftToRootHandlers())


_print_each_line_once()
