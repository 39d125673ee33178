"""TF1's `tf.summary.FileWriter` and `tf.summary.FileWriterCache`, usable eagerly too.

TF1 programs open a FileWriter in their own top-level code, outside any estimator, to write
evaluation results (`writer.add_summary(tf.Summary(value=[...]), step)`): in TF1 that code
ran in graph mode, the default. TensorFlow 2.21's `tf.compat.v1.summary.FileWriter` refuses
to be built under eager execution, though nothing it does needs a graph: it turns protos
into `Event`s and appends them to an event file from a thread of its own. `FileWriter` here
is TensorFlow's class, built eagerly as in a graph; every method is TensorFlow's
(`add_summary`, `add_event`, `add_graph`, `add_meta_graph`, `add_run_metadata`,
`add_session_log`, `flush`, `close`, `reopen`, `get_logdir`, `with`).

Eagerly, `session=` is refused: it shares the summary-writer resource of a TF1 session,
which eager code has none of. `FileWriterCache.get(logdir)` keeps one such writer per
directory (given the default graph, as TF1's was); unlike TF1's it is not the estimator's
own writer (`host/summaries.py`), so the program's events go to an event file of their own
in that directory, which TensorBoard reads with the estimator's.
"""
import threading

import tensorflow as tf

_TF_FILE_WRITER = tf.compat.v1.summary.FileWriter


class FileWriter(_TF_FILE_WRITER):
    """`tf.compat.v1.summary.FileWriter`, also when built under eager execution."""

    def __init__(self, logdir, graph=None, max_queue=10, flush_secs=120, graph_def=None,
                 filename_suffix=None, session=None):
        arguments = (logdir, graph, max_queue, flush_secs, graph_def, filename_suffix,
                     session)
        if not tf.executing_eagerly():
            super().__init__(*arguments)
            return
        if session is not None:
            raise RuntimeError(
                "tf.summary.FileWriter(session=...) shares the summary writer of a TF1 "
                "session's graph, and this code runs eagerly (TensorFlow 2's default), with no "
                "session. Leave out `session` (the writer then writes its own event file), or "
                "build it inside `with tf.Graph().as_default():`.")
        # TensorFlow's class only checks the mode here; its writer needs no graph.
        with tf.Graph().as_default():
            super().__init__(*arguments)


class FileWriterCache:
    """`tf.compat.v1.summary.FileWriterCache`: one `FileWriter` per directory."""

    _cache = {}
    _lock = threading.RLock()

    @staticmethod
    def clear():
        """Closes and forgets the cached writers."""
        with FileWriterCache._lock:
            for writer in FileWriterCache._cache.values():
                writer.close()
            FileWriterCache._cache = {}

    @staticmethod
    def get(logdir):
        """The `FileWriter` for `logdir`, made on first use."""
        with FileWriterCache._lock:
            if logdir not in FileWriterCache._cache:
                FileWriterCache._cache[logdir] = FileWriter(
                    logdir, graph=tf.compat.v1.get_default_graph())
            return FileWriterCache._cache[logdir]
