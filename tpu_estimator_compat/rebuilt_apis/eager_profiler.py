"""TF 1.15's `tensorflow.python.eager.profiler` (removed in TensorFlow 2) on TensorFlow 2.21's
profiler session: `start()`, `stop()`, `save(logdir, result)`, `maybe_create_event_file`,
`start_profiler_server(port)`, the `Profiler(logdir)` context manager and the two errors.

As in TensorFlow 2.15 (the original's environment, the last to have the module), the result
`stop()` returns is TensorFlow 2's trace (a serialized `XSpace`, not TF 1.x's `tpu.Trace`),
which `save` writes as `<logdir>/plugins/profile/<time>/local.trace`.
"""
import datetime
import os
import threading

import tensorflow as tf

from tpu_estimator_compat.tf_internals import profiler

_EVENT_FILE_SUFFIX = ".profile-empty"
_lock = threading.Lock()
_session = None


class ProfilerAlreadyRunningError(Exception):
    """`start()` was called while a profiling session runs."""


class ProfilerNotRunningError(Exception):
    """`stop()` was called while no profiling session runs."""


def start(options=None):
    """Starts profiling (`options`: a dict of TensorFlow 2's profiler options).

    Raises:
      ProfilerAlreadyRunningError: another profiling session is running.
    """
    global _session
    with _lock:
        if _session is not None:
            raise ProfilerAlreadyRunningError("Another profiler is running.")
        session = profiler.ProfilerSession()
        try:
            session.start("", options if options is not None else {})
        except tf.errors.AlreadyExistsError as error:
            raise ProfilerAlreadyRunningError("Another profiler is running.") from error
        _session = session


def stop():
    """Stops profiling; returns the trace (bytes) for `save`.

    Raises:
      ProfilerNotRunningError: no profiling session is running.
    """
    global _session
    with _lock:
        if _session is None:
            raise ProfilerNotRunningError("Cannot stop profiling. No profiler is running.")
        session, _session = _session, None
        return session.stop()


def maybe_create_event_file(logdir):
    """Writes an empty `events*.profile-empty` file in `logdir` unless one is there (it tells
    TensorBoard that the logdir has profiles)."""
    if any(name.endswith(_EVENT_FILE_SUFFIX) for name in tf.io.gfile.listdir(logdir)):
        return
    writer = profiler.EventsWriter(os.path.join(logdir, "events").encode())
    writer.InitWithSuffix(_EVENT_FILE_SUFFIX.encode())
    writer.Close()


def save(logdir, result):
    """Writes `result` of `stop()` below `logdir` for TensorBoard's profile plugin."""
    plugin_dir = os.path.join(logdir, "plugins", "profile",
                              datetime.datetime.now().strftime("%Y-%m-%d_%H-%M-%S"))
    tf.io.gfile.makedirs(plugin_dir)
    maybe_create_event_file(logdir)
    with tf.io.gfile.GFile(os.path.join(plugin_dir, "local.trace"), "wb") as f:
        f.write(result)


def start_profiler_server(port):
    """Starts a profiler server on `port` (TensorFlow 2's `profiler.experimental.server`)."""
    tf.profiler.experimental.server.start(port)


class Profiler:
    """`with Profiler(logdir):` profiles the block and saves the trace to `logdir`."""

    def __init__(self, logdir):
        self._logdir = logdir

    def __enter__(self):
        start()

    def __exit__(self, exc_type, exc_value, traceback):
        save(self._logdir, stop())
