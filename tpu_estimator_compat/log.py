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
"""
import logging

import tensorflow as tf


def info(msg, *args):
    tf.get_logger().info(msg, *args)


def warning(msg, *args):
    tf.get_logger().warning(msg, *args)


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
