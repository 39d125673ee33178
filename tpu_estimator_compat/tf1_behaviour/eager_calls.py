"""The estimator's public calls run with eager execution on, whatever the program chose.

TF 1.15-style programs (`resnet_main.py` of the Cloud TPU models, for one) call
`tf.disable_v2_behavior()` or `tf.disable_eager_execution()` before training. The engine runs
its device loops as `tf.function`s and drives them from Python, which needs eager execution;
so `train`, `evaluate`, `predict` and `export_saved_model` enter `eager_mode()` for their own
work. Code of the program that runs outside these calls keeps the program's graph mode.
"""
import functools

import tensorflow as tf

from tpu_estimator_compat.tf_internals import graphs


def eager(method):
    """Runs `method` with eager execution on."""
    @functools.wraps(method)
    def wrapper(*args, **kwargs):
        if tf.executing_eagerly():
            return method(*args, **kwargs)
        with graphs.eager_mode():
            return method(*args, **kwargs)
    return wrapper


def eager_generator(method):
    """Like `eager`, for a generator method: each step of it runs eagerly; the caller's code
    between two items keeps its own mode."""
    @functools.wraps(method)
    def wrapper(*args, **kwargs):
        if tf.executing_eagerly():
            yield from method(*args, **kwargs)
            return
        generator = method(*args, **kwargs)
        try:
            while True:
                with graphs.eager_mode():
                    try:
                        item = next(generator)
                    except StopIteration:
                        return
                yield item
        finally:
            with graphs.eager_mode():
                generator.close()
    return wrapper
