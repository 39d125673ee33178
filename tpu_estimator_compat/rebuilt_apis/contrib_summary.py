"""The TF1 `tf.contrib.summary` API, rebuilt on TensorFlow 2 summary writers.

Works in graph mode (a `tf.Graph`, e.g. inside `host_calls.HostCallRunner`) and eagerly.
Events are written in the TF1 contrib format: `scalar` writes `simple_value`, `histogram` a
`HistogramProto`, `image` PNG images and `audio` WAV clips, each as a raw `Summary` proto
through `tf.summary.experimental.write_raw_pb`; `generic` writes a tensor summary.

TF1 semantics kept on purpose:

* Nothing is recorded unless a recording context of this module is active
  (`always_record_summaries()`, `record_summaries_every_n_global_steps(n)`); TF1's contrib
  summaries defaulted to *not* recording. Those contexts also set `tf.summary.record_if`, so
  TF2 `tf.summary.*` calls inside them follow the same condition, as they did in TF1 where
  both APIs shared one recording state. (`tf.summary.record_if` alone does not enable the
  contrib functions here.)
* `step=None` means the global step (`tf.compat.v1.train.get_global_step()`).
* Tags follow TF1's `summary_scope`: the enclosing name scopes are prefixed, a `family` gives
  `family/<scope>/family/name`, and in a graph a repeated name is uniquified (`loss_1`).
* A summary's proto is only computed on the steps where it is recorded.

Differences: the `name` of `create_file_writer` is accepted but writers are never shared by
name (every call opens its own event file); `create_db_writer`, `graph` and `import_event`
are not provided.
"""
import contextlib
import os
import re
import threading

import numpy as np
import tensorflow as tf

SummaryWriter = tf.summary.SummaryWriter

_INVALID_TAG_CHARACTERS = re.compile(r"[^-/\w.]")
_WRITER_INIT_OP_TYPES = ("CreateSummaryFileWriter", "CreateSummaryDbWriter")
_DEFAULT_BAD_COLOR = (255, 0, 0, 255)


class _RecordingState(threading.local):
    """How many contrib recording contexts are open in this thread."""

    def __init__(self):
        super().__init__()
        self.depth = 0


_recording = _RecordingState()


# ----------------------------------------------------------------------------------------
# Writers.

def create_file_writer(logdir, max_queue=None, flush_millis=None, filename_suffix=None,
                       name=None):
    """Creates a summary file writer for `logdir`, or a no-op writer if `logdir` is None.

    Args:
      logdir: Directory for the event file, or None for a writer that does nothing.
      max_queue: Summaries buffered before a flush (default 10).
      flush_millis: Longest interval between flushes (default 120,000).
      filename_suffix: Event-file name suffix (default `.v2`).
      name: Accepted for compatibility; TF1 used it to share one writer between calls.

    Returns:
      A `tf.summary.SummaryWriter`. In graph mode its initializer must run first:
      `initialize(session=...)` or `summary_writer_initializer_op()`.
    """
    del name  # TF2 writers are not shared by name.
    if logdir is None:
        return tf.summary.create_noop_writer()
    return tf.summary.create_file_writer(
        str(logdir), max_queue=max_queue, flush_millis=flush_millis,
        filename_suffix=filename_suffix)


def create_summary_file_writer(*args, **kwargs):
    """Deprecated TF1 alias of `create_file_writer`."""
    tf.compat.v1.logging.warning(
        "Deprecation Warning: create_summary_file_writer was renamed to create_file_writer")
    return create_file_writer(*args, **kwargs)


def flush(writer=None, name=None):
    """Flushes `writer` (default: the current default writer).

    Args:
      writer: A `tf.summary.SummaryWriter`, a writer resource tensor, or None.
      name: Ignored, as in TF1.

    Returns:
      The flush op in graph mode; None eagerly.
    """
    del name
    if writer is None or isinstance(writer, tf.summary.SummaryWriter):
        return tf.summary.flush(writer)
    return tf.raw_ops.FlushSummaryWriter(writer=writer)


def summary_writer_initializer_op():
    """Graph mode only: the ops that create every summary writer of the default graph.

    Raises:
      RuntimeError: When executing eagerly.
    """
    if tf.executing_eagerly():
        raise RuntimeError(
            "tf.contrib.summary.summary_writer_initializer_op is only supported in graph mode.")
    return writer_init_ops(tf.compat.v1.get_default_graph())


def initialize(graph=None, session=None):
    """Graph mode: runs the writers' initializers (and writes `graph`, if given).

    A no-op when executing eagerly. Needs a default writer, as in TF1.

    Args:
      graph: Optional `tf.Graph` or `GraphDef` to write to the default writer at step 0.
      session: Session to run in (default: the default session).
    """
    tf.compat.v1.summary.initialize(graph=graph, session=session)


def writer_init_ops(graph):
    """All summary-writer initializer ops in `graph` (a `tf.Graph`)."""
    return [op for op in graph.get_operations() if op.type in _WRITER_INIT_OP_TYPES]


def eval_dir(model_dir, name=None):
    """`model_dir/eval` or `model_dir/eval_<name>`."""
    return os.path.join(model_dir, "eval" if not name else "eval_" + name)


def all_summary_ops():
    """Graph mode: every contrib and TF2 summary op in the default graph; None eagerly."""
    return tf.compat.v1.summary.all_v2_summary_ops()


# ----------------------------------------------------------------------------------------
# Recording conditions.

@contextlib.contextmanager
def _record_if(condition):
    with tf.summary.record_if(condition):
        _recording.depth += 1
        try:
            yield
        finally:
            _recording.depth -= 1


def always_record_summaries():
    """A context in which summaries are always recorded."""
    return _record_if(True)


def never_record_summaries():
    """A context in which summaries are never recorded."""
    return _record_if(False)


def record_summaries_every_n_global_steps(n, global_step=None):
    """A context recording summaries when `global_step % n == 0`.

    Args:
      n: Recording period in steps.
      global_step: Step tensor or variable; default `tf.compat.v1.train.get_global_step()`.

    Raises:
      ValueError: If `global_step` is None and the graph has no global step.
    """
    if global_step is None:
        global_step = _global_step("record_summaries_every_n_global_steps")

    def should_record():
        with tf.device("cpu:0"):
            return tf.equal(global_step % n, 0)

    # Eagerly the condition is re-evaluated at each summary; in a graph it is one tensor.
    return _record_if(should_record if tf.executing_eagerly() else should_record())


def should_record_summaries():
    """Boolean tensor: would a contrib summary be recorded here?"""
    if not _recording.depth:
        return tf.constant(False)
    return tf.summary.should_record_summaries()


# ----------------------------------------------------------------------------------------
# Summary functions.

def scalar(name, tensor, family=None, step=None):
    """Writes a scalar (a `simple_value`); `tensor` must hold exactly one real number.

    Args:
      name: Summary name (the tag, after TF1 scoping).
      tensor: A real-valued tensor with one element.
      family: Optional tag prefix (TensorBoard tab).
      step: int64-castable step; None means the global step.

    Returns:
      In graph mode a boolean tensor (or no-op) to run; eagerly the write result.
    """
    def make(tag):
        return tf.raw_ops.ScalarSummary(tags=tag, values=tf.reshape(tensor, []))
    return _write_summary(name, family, step, make, lazy=False)


def histogram(name, tensor, family=None, step=None):
    """Writes a histogram of the values of `tensor` (a `HistogramProto`)."""
    def make(tag):
        return tf.raw_ops.HistogramSummary(tag=tag, values=tensor)
    return _write_summary(name, family, step, make)


def image(name, tensor, bad_color=None, max_images=3, family=None, step=None):
    """Writes up to `max_images` PNG images from a `[batch, height, width, channels]` tensor.

    Float images are rescaled like TF1's `ImageSummary`; non-finite pixels get `bad_color`
    (uint8 RGBA, default red).
    """
    color = tf.get_static_value(_DEFAULT_BAD_COLOR if bad_color is None else bad_color)
    if color is None:
        raise ValueError(f"`bad_color` must be a constant uint8 RGBA color, got {bad_color}")
    color = np.asarray(color, dtype=np.uint8)

    def summarize(tag, images):
        return tf.raw_ops.ImageSummary(
            tag=tag, tensor=images, max_images=max_images,
            bad_color=tf.make_tensor_proto(color))

    def make(tag):
        if tf.executing_eagerly():
            # The eager op runner cannot pass a tensor-valued attr; a traced call can.
            return tf.function(summarize)(tf.constant(tag), tensor)
        return summarize(tag, tensor)
    return _write_summary(name, family, step, make)


def audio(name, tensor, sample_rate, max_outputs, family=None, step=None):
    """Writes up to `max_outputs` WAV clips from a `[batch, frames(, channels)]` tensor."""
    def make(tag):
        return tf.raw_ops.AudioSummaryV2(
            tag=tag, tensor=tensor, sample_rate=sample_rate, max_outputs=max_outputs)
    return _write_summary(name, family, step, make)


def generic(name, tensor, metadata=None, family=None, step=None):
    """Writes `tensor` as a tensor summary with optional `SummaryMetadata`."""
    if not _recording.depth:
        return tf.no_op()
    with _tf1_summary_scope(name, family) as tag:
        return tf.summary.write(tag, tensor, step=_choose_step(step), metadata=metadata)


# ----------------------------------------------------------------------------------------
# Helpers.

def _write_summary(name, family, step, make_summary_pb, lazy=True):
    """Writes the `Summary` proto built by `make_summary_pb(tag)` when recording.

    With `lazy` (for costly protos: histograms, images, audio) a graph builds the proto only
    on the steps that record it; a scalar's proto costs less than the extra `tf.cond`.
    """
    if not _recording.depth:
        return tf.no_op()  # TF1 contrib summaries did not record by default.
    condition = tf.summary.should_record_summaries()  # False without a default writer.
    static = tf.get_static_value(condition)
    if static is not None and not static:
        return tf.no_op()
    step = _choose_step(step)
    with _tf1_summary_scope(name, family) as tag, tf.device("cpu:0"):
        if static is not None or not lazy:
            summary_pb = make_summary_pb(tag)
        else:
            summary_pb = tf.cond(condition, lambda: make_summary_pb(tag),
                                 lambda: tf.constant(b""))
        with tf.summary.record_if(condition):
            return tf.summary.experimental.write_raw_pb(summary_pb, step=step)


@contextlib.contextmanager
def _tf1_summary_scope(name, family):
    """Enters the TF1 summary name scope and yields the tag TF1 gave the summary."""
    name = _clean_tag(name)
    family = _clean_tag(family)
    base = name if family is None else f"{family}/{name}"
    with tf.compat.v1.name_scope(base) as scope:  # Uniquified in a graph, as in TF1.
        scope = scope.rstrip("/")
        yield scope if family is None else f"{family}/{scope}"


def _clean_tag(name):
    """TF1's tag clean-up: illegal characters become `_`, leading slashes go."""
    if name is None:
        return None
    cleaned = _INVALID_TAG_CHARACTERS.sub("_", name).lstrip("/")
    if cleaned != name:
        tf.compat.v1.logging.info("Summary name %s is illegal; using %s instead.", name,
                                  cleaned)
    return cleaned


def _choose_step(step):
    """The int64 scalar step to write at; None means the global step."""
    if step is None:
        step = _global_step("a summary with step=None")
    step = tf.convert_to_tensor(step)
    if step.dtype.is_integer and step.dtype != tf.int64:
        step = tf.cast(step, tf.int64)
    return step


def _global_step(what):
    global_step = tf.compat.v1.train.get_global_step()
    if global_step is None:
        raise ValueError(
            f"{what} uses the global step, but there is none: pass `step=` explicitly or "
            "create one with tf.compat.v1.train.create_global_step().")
    return global_step
