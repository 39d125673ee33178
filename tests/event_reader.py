"""Reads summaries back from event files, for tests."""
import os

import numpy as np
import tensorflow as tf


def event_files(logdir):
    """Event files directly in `logdir` (not in subdirectories), oldest first.

    Ordered by the wall time of each file's first summary: names carry whole seconds and a
    per-process writer counter (`...<secs>.<host>.<pid>.<n>.v2`) that sorts wrongly by name
    once it gains a digit (`.10.` before `.9.`), and a file's version record has whole
    seconds only.
    """
    paths = [os.path.join(logdir, name) for name in os.listdir(logdir)
             if "tfevents" in name and os.path.isfile(os.path.join(logdir, name))]
    return sorted(paths, key=lambda path: (_first_summary_wall_time(path), path))


def _first_summary_wall_time(path):
    for event in tf.compat.v1.train.summary_iterator(path):
        if event.HasField("summary"):
            return event.wall_time
    return float("inf")  # nothing written yet: last


def read_values(logdir):
    """Every summary value under `logdir`: a list of `(step, tf.compat.v1.Summary.Value)`."""
    values = []
    for path in event_files(logdir):
        for event in tf.compat.v1.train.summary_iterator(path):
            values.extend((event.step, value) for value in event.summary.value)
    return values


def read_scalars(logdir):
    """Scalar summaries under `logdir`: `{tag: [(step, value), ...]}` in file order.

    Reads both TF1 `simple_value` scalars and TF2 tensor-encoded scalars (a one-element
    numeric tensor); other summaries are ignored.
    """
    scalars = {}
    for step, value in read_values(logdir):
        kind = value.WhichOneof("value")
        if kind == "simple_value":
            number = value.simple_value
        elif kind == "tensor":
            array = tf.make_ndarray(value.tensor)
            if array.size != 1 or not np.issubdtype(array.dtype, np.number):
                continue
            number = array.reshape(()).item()
        else:
            continue
        scalars.setdefault(value.tag, []).append((step, number))
    return scalars
