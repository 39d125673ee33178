"""The summaries TPUEstimator itself writes: `loss` and step rates (`progress_log.py`) and
evaluation results.

All of this runs eagerly on the host, between device loops. Events are written the way TF1's
Estimator wrote them (`simple_value` scalars, the evaluation's `checkpoint_path` as a string
tensor), so tools that read TF1 event files keep working.
"""
import collections
import os

import numpy as np
import tensorflow as tf

_SHARED_WRITERS = collections.OrderedDict()  # directory -> ScalarSummaryWriter, LRU order
_SHARED_WRITERS_KEPT = 16


class ScalarSummaryWriter:
    """Writes `{tag: value}` dicts to an event file in `logdir`, eagerly.

    The writer is made the default only for the duration of each `write`, so a user's own
    TF2 summary code in the same process (its default writer, step and `record_if`) is
    unaffected.

    Values: Python/numpy numbers and 0-d arrays become `simple_value` scalars; `str` becomes
    a string tensor summary (TF1's `checkpoint_path`); `bytes` is read as a serialized
    `tf.compat.v1.Summary` whose values are re-tagged `<tag>/<i>`; other arrays become tensor
    summaries; None is skipped. Anything else is skipped with a warning, as TF1 did.

    Args:
      logdir: Directory for the event file (created if missing).
    """

    def __init__(self, logdir):
        self.logdir = logdir
        existing = set(_event_files(logdir))
        self._writer = tf.summary.create_file_writer(logdir)
        self._writer.flush()
        created = set(_event_files(logdir)) - existing
        self._path = created.pop() if len(created) == 1 else None
        self._graph_written = False

    def file_exists(self):
        """Whether this writer's event file is still there (False if it is not known)."""
        return self._path is not None and tf.io.gfile.exists(self._path)

    def write(self, step, values):
        """Writes one event holding `values` at `step`."""
        summary = tf.compat.v1.Summary()
        for tag, value in values.items():
            _add_value(summary, tag, value)
        if not summary.value:
            return
        with self._writer.as_default(), tf.summary.record_if(True):
            tf.summary.experimental.write_raw_pb(summary.SerializeToString(), step=int(step))

    def write_graph(self, meta_graph):
        """Writes the graph of a serialized `MetaGraphDef` for TensorBoard's Graphs tab, once
        per event file (a long train/evaluate alternation would repeat megabytes); None:
        nothing."""
        if meta_graph is None or self._graph_written:
            return
        self._graph_written = True
        graph_def = tf.compat.v1.MetaGraphDef.FromString(meta_graph).graph_def
        with self._writer.as_default():
            tf.summary.graph(graph_def)

    def write_eval_results(self, global_step, results, checkpoint_path=None):
        """Writes an evaluation's metrics (without `global_step`) and its checkpoint path."""
        self.write(global_step, {k: v for k, v in results.items() if k != "global_step"})
        if checkpoint_path is not None:
            self.write(global_step, {"checkpoint_path": str(checkpoint_path)})

    def flush(self):
        """Writes buffered events to disk."""
        self._writer.flush()

    def close(self):
        """Flushes and closes the event file."""
        self._writer.close()

    def __enter__(self):
        return self

    def __exit__(self, *exc_info):
        self.close()


def shared_writer(logdir):
    """This process's writer for `logdir`: one event file per directory and process for all
    train/evaluate calls, as TF1's `FileWriterCache` kept (a writer per call scattered a long
    `train_and_evaluate` over hundreds of files). The 16 most recently used are kept open;
    a writer whose file was removed meanwhile (model_dir cleared) is replaced."""
    key = logdir if "://" in logdir else os.path.abspath(logdir)
    writer = _SHARED_WRITERS.pop(key, None)
    if writer is not None and not writer.file_exists():
        _close_quietly(writer)  # its file was removed (with the directory, say)
        writer = None
    if writer is None:
        writer = ScalarSummaryWriter(logdir)
    _SHARED_WRITERS[key] = writer
    while len(_SHARED_WRITERS) > _SHARED_WRITERS_KEPT:
        _close_quietly(_SHARED_WRITERS.popitem(last=False)[1])
    return writer


def _event_files(logdir):
    if not tf.io.gfile.isdir(logdir):
        return []
    return tf.io.gfile.glob(os.path.join(logdir, "*tfevents*"))


def _close_quietly(writer):
    try:
        writer.close()
    except tf.errors.OpError:  # its directory is gone: nothing left to write to
        pass


def _add_value(summary, tag, value):
    """Adds `value` to the `Summary` proto under `tag`, the way TF1's Estimator did."""
    if value is None:
        return
    if isinstance(value, np.ndarray) and value.ndim == 0:
        value = value[()]
    if isinstance(value, (int, float, np.integer, np.floating, np.bool_)):
        summary.value.add(tag=tag, simple_value=float(value))
    elif isinstance(value, str):
        summary.value.add(tag=tag, tensor=tf.make_tensor_proto(value, dtype=tf.string))
    elif isinstance(value, bytes):
        try:
            parsed = tf.compat.v1.Summary.FromString(value)
        except Exception:  # pylint: disable=broad-except  (protobuf DecodeError)
            tf.compat.v1.logging.warning(
                "Skipping summary for %s, cannot parse string to Summary.", tag)
            return
        for i, parsed_value in enumerate(parsed.value):
            parsed_value.tag = f"{tag}/{i}"
        summary.value.extend(parsed.value)
    elif isinstance(value, np.ndarray):
        summary.value.add(tag=tag, node_name=tag, tensor=tf.make_tensor_proto(value))
    else:
        tf.compat.v1.logging.warning(
            "Skipping summary for %s, must be a float, np.float32, np.int64, np.int32 or int "
            "or np.ndarray or a serialized string of Summary.", tag)

