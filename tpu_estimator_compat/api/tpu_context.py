"""`params['context']`: what input_fn and model_fn may ask about the replicas (TPU semantics)."""
import collections

_JOB = "worker"

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
        if self._runtime.model_parallel:
            raise ValueError("num_of_replicas_per_host is not supported for model_parallelism")
        return self._runtime.replicas_per_host

    @property
    def num_cores(self):
        """TPU cores in the system: `num_replicas * num_cores_per_replica`."""
        return self._runtime.num_cores

    @property
    def num_of_cores_per_host(self):
        return self._runtime.cores_per_host

    @property
    def device_assignment(self):
        """The replicas' `tf.tpu.experimental.DeviceAssignment` with model parallelism
        (`TPUConfig.num_cores_per_replica`; on the simulated TPU, on its topology), else
        None. model_fn only."""
        if self._deployment is not None:
            raise RuntimeError("This TPUContext instance must not be called from input_fn.")
        return self._runtime.device_assignment

    def device_for_replica(self, replica_id):
        """(host device string, ordinal of the replica's first core on its host)."""
        assignment = self._runtime.device_assignment
        if assignment is not None:
            return (assignment.host_device(replica=replica_id, job=_JOB),
                    int(assignment.tpu_ordinal(replica=replica_id)))
        host, ordinal = divmod(replica_id, self._runtime.replicas_per_host)
        return f"/job:{_JOB}/task:{host}/device:CPU:0", ordinal

    def tpu_host_placement_function(self, replica_id=None, host_id=None):
        if replica_id is not None:
            return self.device_for_replica(replica_id)[0]
        return f"/job:{_JOB}/task:{host_id or 0}/device:CPU:0"

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
    deployment = _Deployment(f"/job:{_JOB}/task:{host_id}/device:CPU:0", invocation_index,
                             total_invocations, replicas_consumed)
    return TPUContext(runtime, deployment, host_id)
