"""What the worker processes of a multi-worker run agree on, and what only the chief does.

With between-graph replication (MultiWorkerMirroredStrategy) every worker process runs the
same train/evaluate program; their steps meet in collectives. Host-side work between device
loops must stay in lockstep too:

    decisions (save a checkpoint now? the loss to log and check)  -> the chief's, on every worker
    stop after this loop (SIGTERM)  -> if any worker was preempted, every worker stops
    checkpoint save   -> every worker reads the values (reading a SyncOnRead variable is a
                         collective), only the chief writes files
    summaries, host_call, eval results, exports -> the chief only; other workers write nothing
                         into model_dir (exports go to a temporary directory that is removed)
    a worker dies     -> TensorFlow's coordination service aborts the collectives of the
                         others; they raise `WorkerFailureError`

Everything here runs eagerly on the host, in cross-replica context. On a single worker (any
other strategy, including TPUStrategy on a pod) there is nothing to agree on; `is_chief`
(from TF_CONFIG and the strategy) still decides whether this process writes.
"""
import contextlib
import functools
import shutil
import tempfile

import tensorflow as tf

from tpu_estimator_compat.state import checkpoints
from tpu_estimator_compat import log as logging

_all_rows_fns = {}  # id(strategy): (strategy, traced function)
_PEER_FAILURES = (tf.errors.UnavailableError, tf.errors.AbortedError,
                  tf.errors.DeadlineExceededError, tf.errors.CancelledError)


class WorkerFailureError(tf.errors.UnavailableError):
    """Another worker of a multi-worker run failed; this worker cannot continue.

    TensorFlow aborts the collectives of a process once a peer fails, for the rest of the
    process: restart every worker (training resumes from the last checkpoint).
    """

    def __init__(self, message):
        super().__init__(None, None, message)

    def __reduce__(self):
        return type(self), (self.message,)


class WorkerGroup:
    """The worker processes of one runtime, as seen from this one."""

    def __init__(self, runtime):
        self._strategy = runtime.strategy
        self.num_workers = runtime.num_workers
        self.is_chief = runtime.is_chief

    @property
    def multi_worker(self):
        return self.num_workers > 1

    def from_chief(self, *values):
        """The chief's `values` (numbers), returned on every worker; one collective.

        Every worker must call this at the same point of the program. On a single worker the
        values are returned unchanged.
        """
        if not self.multi_worker:
            return list(values)
        return [float(v) for v in self._all_rows(values)[0]]

    def loop_end(self, loss, finite, preempted):
        """`(the chief's loss, whether every worker's losses were finite, whether any worker
        was preempted)` on every worker, so all of them log and check the same loss and stop
        after the same loop; one collective."""
        if not self.multi_worker:
            return loss, finite, preempted
        rows = self._all_rows([loss, float(bool(finite)), float(bool(preempted))])
        return float(rows[0][0]), bool(rows[:, 1].min() > 0), bool(rows[:, 2].max() > 0)

    def barrier(self):
        """Returns once every worker has reached this call."""
        self.from_chief(0.0)

    def _all_rows(self, values):
        """[replicas, len(values)]: every replica's copy of its worker's `values`; the chief's
        replicas come first."""
        key = id(self._strategy)
        if key not in _all_rows_fns:  # traced once per strategy (and per len(values))
            _all_rows_fns[key] = (self._strategy, _make_all_rows_fn(self._strategy))
        rows = _all_rows_fns[key][1](tf.constant([float(v) for v in values], tf.float64))
        return rows.numpy()


def _make_all_rows_fn(strategy):
    """A function all-gathering a [k] tensor from every replica into [replicas, k]
    (MultiWorkerMirroredStrategy numbers the chief's replicas first)."""
    @tf.function(autograph=False)
    def all_rows(values):
        per_replica = strategy.run(lambda v: tf.reshape(v, [1, -1]), args=(values,))
        return strategy.gather(per_replica, axis=0)
    return all_rows


class NonChiefSaver:
    """Stands in for `checkpoints.CheckpointSaver` on a worker that is not the chief.

    `save` reads every value exactly as the chief's saver does (reading a SyncOnRead variable
    across workers is a collective every worker must join) and writes nothing.
    """

    def __init__(self, model_dir):
        self._model_dir = model_dir

    def save(self, named_variables, global_step, meta_graph=None):
        del meta_graph
        checkpoints.values_to_save(named_variables)
        return f"{self._model_dir.rstrip('/')}/{checkpoints.CHECKPOINT_BASENAME}-{int(global_step)}"


@contextlib.contextmanager
def failures_explained(runtime, what, model_dir=None):
    """Turns a collective aborted because a peer failed into a `WorkerFailureError`."""
    try:
        yield
    except WorkerFailureError:
        raise
    except _PEER_FAILURES as e:
        if runtime.num_workers <= 1 and runtime.coordinator is None:
            raise
        resume = ""
        if model_dir is not None:
            latest = checkpoints.latest_checkpoint(model_dir)
            resume = (f" Training resumes from the last checkpoint, {latest}." if latest else
                      " No checkpoint was written yet: training restarts from step 0.")
        if runtime.coordinator is not None:  # TensorFlow's coordinator handles lost workers
            raise WorkerFailureError(
                f"{what} on parameter servers stopped: a parameter server (or this chief's "
                "connection to the cluster) failed, and its variables' values since the last "
                "checkpoint are gone. Restart the failed 'ps' task, then this chief, with "
                f"their TF_CONFIG; the workers keep serving.{resume}\n"
                f"TensorFlow reported: {_essence(e)}") from e
        raise WorkerFailureError(
            f"{what} across {runtime.num_workers} workers stopped: another worker failed or "
            f"became unreachable, so TensorFlow aborted the collectives of this worker (task "
            f"{'chief' if runtime.is_chief else 'non-chief'}). Restart every worker with its "
            f"TF_CONFIG.{resume}\nTensorFlow reported: {_essence(e)}") from e


def _essence(error):
    """The lines of a TensorFlow error that say what happened (not where it was traced)."""
    lines = [line for line in str(getattr(error, "message", error)).splitlines() if line.strip()]
    for index, line in enumerate(lines):
        if "aborted by" in line or "unhealthy" in line:
            return "\n".join(lines[index:index + 4])
    return "\n".join(lines[:4])


@contextlib.contextmanager
def export_dir_for(is_chief, export_dir_base):
    """`export_dir_base` on the chief; elsewhere a temporary directory, removed afterwards."""
    if is_chief:
        yield export_dir_base
        return
    temp_dir = tempfile.mkdtemp(prefix="tpu_estimator_compat_worker_export_")
    logging.info("Not the chief: exporting into the temporary %s (removed afterwards); the "
                 "chief writes the export into %s.", temp_dir, export_dir_base)
    try:
        yield temp_dir
    finally:
        shutil.rmtree(temp_dir, ignore_errors=True)


def explains_worker_failures(what):
    """Decorates `fn(engine, ..., model_dir=...)`: see `failures_explained`."""
    def decorate(fn):
        @functools.wraps(fn)
        def wrapper(engine, *args, **kwargs):
            with failures_explained(engine.runtime, what, kwargs.get("model_dir")):
                return fn(engine, *args, **kwargs)
        return wrapper
    return decorate
