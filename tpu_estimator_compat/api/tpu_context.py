"""`params['context']`: what input_fn and model_fn may ask about the replicas (TPU semantics)."""
import collections

_Deployment = collections.namedtuple(
    "_Deployment", ["host_device", "invocation_index", "total_invocations", "replicas_consumed"])


class TPUContext:
    """The original `TPUContext`: replica/host counts and, in input_fn, the call's place."""

    def __init__(self, runtime, deployment=None, host_id=None):
        self._runtime = runtime
        self._deployment = deployment  # None when handed to model_fn
        self._host_id = host_id

    @property
    def num_replicas(self):
        return self._runtime.num_replicas

    @property
    def num_hosts(self):
        return self._runtime.num_hosts

    @property
    def num_of_replicas_per_host(self):
        return self._runtime.replicas_per_host

    @property
    def num_of_cores_per_host(self):
        return self._runtime.replicas_per_host

    @property
    def device_assignment(self):
        """There is no explicit device assignment: the tf.distribute strategy places replicas."""
        return None

    def device_for_replica(self, replica_id):
        """(host device string, ordinal within the host) of `replica_id`."""
        host, ordinal = divmod(replica_id, self._runtime.replicas_per_host)
        return f"/job:worker/task:{host}/device:CPU:0", ordinal

    def tpu_host_placement_function(self, replica_id=None, host_id=None):
        if replica_id is not None:
            host_id = replica_id // self._runtime.replicas_per_host
        return f"/job:worker/task:{host_id or 0}/device:CPU:0"

    def current_input_fn_deployment(self):
        """(host device, invocation index, total invocations, replicas consumed) of this call."""
        return self._require_input_fn()

    @property
    def current_host(self):
        """The index of the host (worker) this input_fn call runs on, 0-based."""
        self._require_input_fn()
        return self._host_id

    def _require_input_fn(self):
        if self._deployment is None:
            raise RuntimeError("This TPUContext instance must not be called from model_fn.")
        return self._deployment


def input_fn_context(runtime, host_id, invocation_index, total_invocations, replicas_consumed):
    """The context handed to one input_fn call."""
    deployment = _Deployment(f"/job:worker/task:{host_id}/device:CPU:0", invocation_index,
                             total_invocations, replicas_consumed)
    return TPUContext(runtime, deployment, host_id)
