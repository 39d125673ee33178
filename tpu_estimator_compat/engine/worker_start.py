"""Waiting for the other workers of a multi-worker run to start, out loud and not forever.

Creating a `MultiWorkerMirroredStrategy` blocks inside TensorFlow, without a word and without
end, until every worker of TF_CONFIG has started. Before creating it, `wait_for_peers` waits
until every other chief/worker task's address accepts connections, logging every
`log_every_secs` which tasks it still waits for, and raises `WorkerStartTimeoutError` naming
them after a timeout (`TPU_ESTIMATOR_COMPAT_WORKER_START_TIMEOUT_SECS`, default 900 s; 0 waits
forever). While it waits, this worker listens on its own address (connections are never
accepted; the kernel completes them), so that workers waiting for each other all see each
other; TensorFlow's server takes the port over when the strategy is created.
"""
import contextlib
import os
import socket
import time

from tpu_estimator_compat import log as logging

START_TIMEOUT_ENV = "TPU_ESTIMATOR_COMPAT_WORKER_START_TIMEOUT_SECS"
_DEFAULT_START_TIMEOUT_SECS = 900.0
_LOG_EVERY_SECS = 30.0
_PROBE_EVERY_SECS = 0.5
_CLUSTER_JOBS = ("chief", "worker")


class WorkerStartTimeoutError(TimeoutError):
    """Other workers of TF_CONFIG's cluster did not start within the start timeout.

    Attributes:
      missing: `["worker 1 (host1:2222)", ...]`, the tasks whose address never answered.
    """

    def __init__(self, missing, timeout_secs):
        self.missing = list(missing)
        self.timeout_secs = timeout_secs
        super().__init__(
            f"Multi-worker training did not start: {', '.join(self.missing)} of TF_CONFIG's "
            f"cluster did not start within {timeout_secs:g} s (nothing was run or written). "
            "Start the same program on every machine of TF_CONFIG['cluster'], each with its "
            "own task index, check that their addresses are reachable from this machine, or "
            f"raise the timeout with the environment variable {START_TIMEOUT_ENV} (seconds; 0 "
            "waits forever).")

    def __reduce__(self):
        return type(self), (self.missing, self.timeout_secs)


def start_timeout_secs(environ=None):
    """The start timeout in seconds (None: wait forever), from the environment."""
    raw = (os.environ if environ is None else environ).get(START_TIMEOUT_ENV, "").strip()
    if not raw:
        return _DEFAULT_START_TIMEOUT_SECS
    try:
        value = float(raw)
    except ValueError:
        value = -1.0
    if not value >= 0:
        raise ValueError(f"{START_TIMEOUT_ENV}={raw!r} must be a number of seconds >= 0 (0 "
                         "waits forever for the other workers to start).")
    return value or None


def wait_for_peers(tf_config, timeout_secs, log_every_secs=_LOG_EVERY_SECS):
    """Returns once every other chief/worker task of `tf_config` accepts connections.

    Args:
      tf_config: the TF_CONFIG dict (`cluster`, `task`).
      timeout_secs: how long to wait in all; None waits forever.
      log_every_secs: interval between the log lines naming the tasks still awaited.

    Raises:
      WorkerStartTimeoutError: some tasks did not answer within `timeout_secs`.
    """
    cluster, task = tf_config.get("cluster") or {}, tf_config.get("task") or {}
    mine = (task.get("type"), task.get("index"))
    peers = {f"{job} {index} ({address})": address
             for job in _CLUSTER_JOBS for index, address in enumerate(cluster.get(job) or [])
             if (job, index) != mine}
    my_job = cluster.get(mine[0]) or []
    own_address = (my_job[mine[1]] if isinstance(mine[1], int) and 0 <= mine[1] < len(my_job)
                   else None)
    start, last_log = time.monotonic(), None
    with _listening_on(own_address):
        while True:
            peers = {name: address for name, address in peers.items()
                     if not _answers(address)}
            if not peers:
                return
            now = time.monotonic()
            if timeout_secs is not None and now - start >= timeout_secs:
                raise WorkerStartTimeoutError(sorted(peers), timeout_secs)
            if last_log is None or now - last_log >= log_every_secs:
                last_log = now
                limit = (f"; giving up after {timeout_secs:g} s" if timeout_secs is not None
                         else "")
                logging.warning("Waiting for %s of TF_CONFIG's cluster to start (%.0f s so "
                                "far%s).", ", ".join(sorted(peers)), now - start, limit)
            time.sleep(_PROBE_EVERY_SECS)


def _answers(address):
    host, _, port = address.rpartition(":")
    try:
        with socket.create_connection((host.strip("[]"), int(port)), timeout=2.0):
            return True
    except (OSError, ValueError):
        return False


@contextlib.contextmanager
def _listening_on(address):
    """Listens on this task's port (never accepting) while peers wait for it; nothing when
    the port is unknown or taken."""
    listener = None
    if address:
        try:
            listener = socket.socket(socket.AF_INET6 if address.startswith("[") else
                                     socket.AF_INET)
            listener.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
            listener.bind(("", int(address.rpartition(":")[2])))
            listener.listen(64)
        except (OSError, ValueError):
            if listener is not None:
                listener.close()
            listener = None
    try:
        yield
    finally:
        if listener is not None:
            listener.close()
