"""A `TPUClusterResolver` that legacy programs can build on a machine without a TPU.

TF1 programs build `TPUClusterResolver(FLAGS.tpu_name, ...)` even when they then run with
`use_tpu=False`; TensorFlow 2's resolver looks the TPU up in its constructor and raises
(or, when the GCE metadata server does not answer, blocks) with no TPU around. This one only
records its arguments. TensorFlow's resolver is built on the first call that needs it
(`master()`, `cluster_spec()`, `num_accelerators()`, `resolve()`, `connect()`, any other
attribute), on a helper thread bounded by `lookup_timeout_secs`; failure, or no answer in
time, raises `NoTPUFoundError` saying what was tried and how to run without a TPU.

With `TPU_ESTIMATOR_COMPAT_SIMULATED_TPU_CORES=N` set, the TPU is simulated on local devices:
`master()` is '' (in-process), `cluster_spec()` is empty and `num_accelerators()` is
`{'TPU': N}`, with no lookup.
"""
import os
import threading

import tensorflow as tf

SIMULATED_TPU_CORES_ENV = "TPU_ESTIMATOR_COMPAT_SIMULATED_TPU_CORES"
DEFAULT_LOOKUP_TIMEOUT_SECS = 60.0
_TPU_NAME_ENVS = ("TPU_NAME", "KUBE_GOOGLE_CLOUD_TPU_ENDPOINTS", "TPU_CONFIG")
_OWN_ATTRIBUTES = frozenset({
    "_arguments", "_lookup_timeout_secs", "_simulated_cores", "_real", "_lock", "_task_type",
    "_task_id"})


class NoTPUFoundError(RuntimeError):
    """No TPU could be reached with the arguments given to `TPUClusterResolver`."""


def simulated_tpu_cores(environ=None):
    """The number of TPU cores to simulate on local devices, or None for a real TPU.

    Args:
      environ: mapping to read `TPU_ESTIMATOR_COMPAT_SIMULATED_TPU_CORES` from
        (default `os.environ`).

    Raises:
      ValueError: if the variable is set to anything but a positive integer.
    """
    value = (os.environ if environ is None else environ).get(SIMULATED_TPU_CORES_ENV, "")
    if not value.strip():
        return None
    try:
        cores = int(value)
    except ValueError:
        cores = 0
    if cores < 1:
        raise ValueError(
            f"`{SIMULATED_TPU_CORES_ENV}` must be a positive number of TPU cores to simulate, "
            f"e.g. 8. Received: {value!r}")
    return cores


class _LookupTimeout(Exception):
    pass


def _call_bounded(fn, timeout_secs):
    """`fn()` on a daemon thread; raises `_LookupTimeout` if it has not returned in time."""
    if timeout_secs is None:
        return fn()
    outcome = {}

    def run():
        try:
            outcome["value"] = fn()
        except Exception as error:  # pylint: disable=broad-except  # re-raised below
            outcome["error"] = error

    thread = threading.Thread(target=run, name="TPUClusterResolver-lookup", daemon=True)
    thread.start()
    thread.join(timeout_secs)
    if thread.is_alive():
        raise _LookupTimeout()
    if "error" in outcome:
        raise outcome["error"]
    return outcome["value"]


class TPUClusterResolver(tf.distribute.cluster_resolver.ClusterResolver):
    """`tf.distribute.cluster_resolver.TPUClusterResolver`, resolved on first use.

    Arguments are TensorFlow's, plus the keyword-only `lookup_timeout_secs` (None: no
    bound). Construction never touches the network.
    """

    def __init__(self, tpu=None, zone=None, project=None, job_name="worker",
                 coordinator_name=None, coordinator_address=None, credentials="default",
                 service=None, discovery_url=None, *,
                 lookup_timeout_secs=DEFAULT_LOOKUP_TIMEOUT_SECS):
        self._real = None
        self._lock = threading.Lock()
        self._arguments = dict(
            tpu=tpu, zone=zone, project=project, job_name=job_name,
            coordinator_name=coordinator_name, coordinator_address=coordinator_address,
            credentials=credentials, service=service, discovery_url=discovery_url)
        self._lookup_timeout_secs = lookup_timeout_secs
        self._simulated_cores = simulated_tpu_cores()
        self._task_type = job_name
        self._task_id = 0

    @staticmethod
    def connect(tpu=None, zone=None, project=None):
        """Resolves the TPU, connects to its cluster and initialises it (TF2 API); on the
        simulated TPU, does nothing more than build the resolver.

        Returns:
          The `TPUClusterResolver`.

        Raises:
          NoTPUFoundError: if no TPU can be resolved.
        """
        from tpu_estimator_compat.engine import tpu_system as _tpu_system  # noqa: PLC0415  (imports this module)
        resolver = TPUClusterResolver(tpu, zone, project)
        if not resolver.simulated_cores:
            tf.config.experimental_connect_to_cluster(resolver.resolve())
        _tpu_system.initialize_tpu_system(resolver)
        return resolver

    @property
    def simulated_cores(self):
        """TPU cores simulated on local devices (from the environment), or None."""
        return self._simulated_cores

    def resolve(self):
        """TensorFlow's `TPUClusterResolver` for these arguments, built once.

        Looks the TPU up even when one is simulated: the engine asks only to run on a TPU.

        Raises:
          NoTPUFoundError: if it cannot be built (no TPU name, unknown TPU, no metadata
            server) or the lookup does not finish within `lookup_timeout_secs`.
        """
        with self._lock:
            if self._real is None:
                real = self._bounded(
                    lambda: tf.distribute.cluster_resolver.TPUClusterResolver(**self._arguments),
                    "looking up the TPU")
                real.task_type = self._task_type
                real.task_id = self._task_id
                self._real = real
            return self._real

    def master(self, task_type=None, task_id=None, rpc_layer=None):
        """The TPU's session target ('grpc://host:8470'); '' when simulated."""
        if self._simulated_cores:
            return ""
        real = self.resolve()
        return self._bounded(lambda: real.master(task_type, task_id, rpc_layer),
                             "asking for the TPU's address")

    def get_master(self):
        """TF1 spelling of `master()`."""
        return self.master()

    def cluster_spec(self):
        """The TPU workers' `tf.train.ClusterSpec`; empty when simulated."""
        if self._simulated_cores:
            return tf.train.ClusterSpec({})
        real = self.resolve()
        return self._bounded(real.cluster_spec, "asking for the TPU's cluster spec")

    def num_accelerators(self, task_type=None, task_id=None, config_proto=None):
        """`{'TPU': cores per host}`; the simulated core count when simulated."""
        if self._simulated_cores:
            return {"TPU": self._simulated_cores}
        real = self.resolve()
        return self._bounded(lambda: real.num_accelerators(task_type, task_id, config_proto),
                             "counting the TPU's cores")

    def get_job_name(self):
        return self._task_type

    @property
    def environment(self):
        return "" if self._simulated_cores else self.resolve().environment

    @property
    def task_type(self):
        return self._task_type

    @task_type.setter
    def task_type(self, task_type):
        self._task_type = task_type
        if self._real is not None:
            self._real.task_type = task_type

    @property
    def task_id(self):
        return self._task_id

    @task_id.setter
    def task_id(self, task_id):
        self._task_id = task_id
        if self._real is not None:
            self._real.task_id = task_id

    def __getattr__(self, name):
        if name.startswith("__") or name in _OWN_ATTRIBUTES:
            raise AttributeError(name)
        return getattr(self.resolve(), name)

    def __deepcopy__(self, memo):
        # A handle on one TPU: configs that deep-copy themselves share it (and its lock).
        return self

    def __repr__(self):
        shown = {k: self._arguments[k] for k in ("tpu", "zone", "project")}
        return "TPUClusterResolver({})".format(
            ", ".join(f"{key}={value!r}" for key, value in shown.items()))

    def _bounded(self, fn, action):
        try:
            return _call_bounded(fn, self._lookup_timeout_secs)
        except _LookupTimeout:
            problem = (f"{action} did not finish within {self._lookup_timeout_secs:g} s (the "
                       "GCE metadata server or the Cloud TPU API did not answer)")
            raise NoTPUFoundError(self._explain(problem)) from None
        except Exception as error:
            raise NoTPUFoundError(
                self._explain(f"{action} failed with {type(error).__name__}: "
                              f"{str(error).rstrip('.')}")) from error

    def _explain(self, problem):
        return (f"No TPU found: {self._tried()}; {problem}. To run without a TPU, pass "
                "`use_tpu=False` to TPUEstimator, or set the environment variable "
                f"{SIMULATED_TPU_CORES_ENV}=8 to run the TPU semantics (8 replicas, per-core "
                "batches, CrossShardOptimizer) on the local CPU/GPU devices.")

    def _tried(self):
        tried = repr(self)
        if not self._arguments["tpu"]:
            from_env = [f"${name}={os.environ[name]!r}" for name in _TPU_NAME_ENVS
                        if name in os.environ]
            tried += (f" (no TPU name given; using {', '.join(from_env)})" if from_env else
                      f" (no TPU name given, and none of ${', $'.join(_TPU_NAME_ENVS)} is set)")
        return tried
