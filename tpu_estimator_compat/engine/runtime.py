"""Where the model runs: the tf.distribute strategy for a mode and the facts derived from it.

| use_tpu | strategy in RunConfig | environment                               | runs on                    | semantics |
|---------|-----------------------|-------------------------------------------|----------------------------|-----------|
| True    | given                 |                                           | that strategy's replicas   | TPU       |
| True    | None                  | TPU_ESTIMATOR_COMPAT_SIMULATED_TPU_CORES=N | N (/ k) local devices (3)  | TPU       |
| True    | None                  |                                           | the TPU (TPUStrategy) (3)  | TPU       |
| False   | given                 |                                           | that strategy's replicas   | CPU/GPU   |
| False   | None                  |                                           | one device (GPU:0 or CPU)  | CPU/GPU   |
| any     | None                  | TF_CONFIG with >1 chief/worker task (1)   | every worker (MWMS)        | (2)       |
| False   | None                  | TF_CONFIG with `ps` tasks, training (4)   | the workers (PSS)          | CPU/GPU   |

(1) With use_tpu=True only together with TPU_ESTIMATOR_COMPAT_SIMULATED_TPU_CORES: without it
    use_tpu=True means a real TPU, whose pod hosts TPUStrategy drives from one process.
(2) TPU semantics when use_tpu=True (hosts = workers), CPU/GPU semantics otherwise.
(3) With `TPUConfig(num_cores_per_replica=k)`: N // k replicas of k cores (model_parallelism).
(4) In the chief, which coordinates ParameterServerStrategy (`parameter_servers.py`); it
    evaluates and predicts on one device. use_tpu=True is an error there.

Multi-worker runs use TensorFlow's own runtime: one `tf.distribute.MultiWorkerMirroredStrategy`
per process (`multi_worker_strategy()`), created from TF_CONFIG. TensorFlow 2.21 can only
create it before the process runs its first TensorFlow operation (collective ops are
configured at context start-up), so it is created lazily by the first train/evaluate/predict
call, or explicitly at program start by calling `multi_worker_strategy()`.

"TPU semantics" are the original's sharding rules: per-replica batch sizes, input pipeline
modes, `params['context']`, static shapes; "CPU/GPU semantics" are Estimator's: input_fn gets
the configured batch size and, under a given strategy, each replica gets whole batches of it
(as Estimator did with `train_distribute`). Like the original, `use_tpu=False` alone uses one
device; several GPUs are used by passing `RunConfig(train_distribute=MirroredStrategy())`.
"""
import dataclasses
import os

import tensorflow as tf

from tpu_estimator_compat.config import run_config as run_config_lib
from tpu_estimator_compat.config import tf_config as tf_config_lib
from tpu_estimator_compat.engine import cluster_resolver as cluster_resolver_lib
from tpu_estimator_compat.engine import model_parallelism
from tpu_estimator_compat.engine import worker_start
from tpu_estimator_compat.engine import parameter_servers
from tpu_estimator_compat import log as logging
from tpu_estimator_compat.tf_internals import distribute
from tpu_estimator_compat.tf_internals import graphs

SIMULATED_TPU_CORES_ENV = cluster_resolver_lib.SIMULATED_TPU_CORES_ENV
SIMULATED_TPU_XLA_ENV = "TPU_ESTIMATOR_COMPAT_SIMULATED_TPU_XLA"
_XLA_SWITCH = {"": True, "1": True, "true": True, "yes": True, "on": True,
               "0": False, "false": False, "no": False, "off": False}
_tpu_topologies = {}  # TPU systems are initialised once per process and target
_tpu_strategies = {}
_one_device_strategies = {}
_simulated_strategies = {}
_COLLECTIVE_KEYS_PER_STRATEGY = 1000  # group keys a simulated TPU's strategy may use
_multi_worker_strategies = []  # at most one per process: it owns the collective runtime


@dataclasses.dataclass(frozen=True)
class Runtime:
    """A strategy plus the replica and host counts the input and batch rules need.

    `num_workers` counts the processes that run the program in lockstep (between-graph
    replication, e.g. MultiWorkerMirroredStrategy: one per host); a TPU pod driven by
    TPUStrategy has several hosts but one worker process, and so has parameter-server
    training, whose chief schedules the steps on the workers with `coordinator`.
    `is_chief` is False on every worker process but the chief: those write nothing into
    model_dir.
    """

    strategy: tf.distribute.Strategy
    tpu_semantics: bool
    num_replicas: int
    num_hosts: int
    num_workers: int = 1
    is_chief: bool = True
    num_cores_per_replica: int | None = None  # TPUConfig's, with TPU semantics (model parallelism)
    device_assignment: tf.tpu.experimental.DeviceAssignment | None = None  # model parallelism
    compile_with_xla: bool = False  # the simulated TPU's steps (xla_step), unless turned off
    # parameter-server training: the chief's ClusterCoordinator
    coordinator: tf.distribute.experimental.coordinator.ClusterCoordinator | None = None

    @property
    def replicas_per_host(self):
        return self.num_replicas // self.num_hosts

    @property
    def model_parallel(self):
        """Whether `num_cores_per_replica` is set (the original's "model parallelism
        enabled", also for 1)."""
        return self.num_cores_per_replica is not None

    @property
    def num_cores(self):
        return self.num_replicas * (self.num_cores_per_replica or 1)

    @property
    def cores_per_host(self):
        return self.num_cores // self.num_hosts

    @property
    def multi_worker(self):
        return self.num_workers > 1


def runtime_for_strategy(strategy, tpu_semantics, is_chief=True, num_cores_per_replica=None,
                         device_assignment=None, compile_with_xla=False):
    """The Runtime of `strategy`; `is_chief` is what RunConfig (TF_CONFIG) says of this task.

    With `num_cores_per_replica` (TPU semantics only) each of the strategy's replicas counts
    as that many cores; `device_assignment` defaults to a TPUStrategy's own.
    """
    if not tpu_semantics:
        num_cores_per_replica = None
    if num_cores_per_replica is not None and device_assignment is None:
        device_assignment = distribute.device_assignment(strategy)
    num_replicas = strategy.num_replicas_in_sync
    local_replicas = max(1, len(strategy.extended.worker_devices))
    num_hosts = max(1, num_replicas // local_replicas)
    between_graph = is_between_graph(strategy)
    return Runtime(strategy=strategy, tpu_semantics=tpu_semantics,
                   num_replicas=num_replicas, num_hosts=num_hosts,
                   num_workers=num_hosts if between_graph else 1,
                   is_chief=bool(is_chief) and _extended_flag(strategy, "should_checkpoint", True),
                   num_cores_per_replica=num_cores_per_replica,
                   device_assignment=device_assignment, compile_with_xla=compile_with_xla)


def is_between_graph(strategy):
    """Whether each worker process runs its own copy of the program (MWMS: True)."""
    return _extended_flag(strategy, "experimental_between_graph", False)


def _extended_flag(strategy, name, default):
    try:
        return bool(getattr(strategy.extended, name))
    except (AttributeError, NotImplementedError):  # the default strategy implements neither
        return default


def select_runtime(config, use_tpu, distribute, training=False):
    """Builds the Runtime for one mode; `distribute` is the RunConfig strategy for it.

    In a TF_CONFIG cluster with parameter servers the chief trains on
    ParameterServerStrategy (`parameter_servers.py`) and evaluates and predicts on one
    device, as the original's chief ran those in a local session.

    With TPU semantics and `TPUConfig.num_cores_per_replica` = k (model parallelism, see
    `model_parallelism`), a TPU or simulated TPU of N cores has N // k replicas.
    """
    cores_per_replica = config.tpu_config.num_cores_per_replica if use_tpu else None
    if distribute is None and is_parameter_server_cluster(config):
        if use_tpu:
            raise ValueError(_PS_WITH_TPU)
        if training:
            return _parameter_server_runtime(config)
        return runtime_for_strategy(_one_device_strategy(), False)
    if distribute is not None:
        return runtime_for_strategy(distribute, tpu_semantics=use_tpu,
                                    is_chief=run_config_lib.writes_model_dir(config),
                                    num_cores_per_replica=cores_per_replica)
    if is_multi_worker_cluster(config) and (
            not use_tpu or cluster_resolver_lib.simulated_tpu_cores()):
        runtime = runtime_for_strategy(multi_worker_strategy(), use_tpu, config.is_chief,
                                       cores_per_replica,
                                       compile_with_xla=use_tpu and simulated_tpu_xla())
        _check_simulated_cores(runtime, use_tpu)
        return runtime
    if use_tpu:
        input_mode = config.tpu_config.per_host_input_for_training
        simulated_cores = cluster_resolver_lib.simulated_tpu_cores()
        if simulated_cores:
            strategy, assignment = _simulated_tpu_strategy(simulated_cores, cores_per_replica,
                                                           input_mode)
        else:
            strategy, assignment = _tpu_strategy(config, cores_per_replica, input_mode)
        return runtime_for_strategy(strategy, True, num_cores_per_replica=cores_per_replica,
                                    device_assignment=assignment,
                                    compile_with_xla=bool(simulated_cores) and simulated_tpu_xla())
    return runtime_for_strategy(_one_device_strategy(), False)


def simulated_tpu_xla(environ=None):
    """Whether the simulated TPU compiles its steps with XLA, as a TPU does: yes unless
    `TPU_ESTIMATOR_COMPAT_SIMULATED_TPU_XLA` is 0, false, no or off.

    Raises:
      ValueError: the variable has another value.
    """
    value = (os.environ if environ is None else environ).get(SIMULATED_TPU_XLA_ENV, "")
    value = value.strip().lower()
    if value not in _XLA_SWITCH:
        raise ValueError(
            f"`{SIMULATED_TPU_XLA_ENV}` turns XLA compilation on the simulated TPU on (1) or "
            f"off (0). Received: {value!r}")
    return _XLA_SWITCH[value]


def is_multi_worker_cluster(config):
    """Whether TF_CONFIG (as parsed by RunConfig) puts this task in a cluster of >1 workers
    training in sync (no parameter servers: see `is_parameter_server_cluster`)."""
    if config.num_worker_replicas <= 1 or config.task_type not in ("chief", "worker"):
        return False
    return not config.num_ps_replicas


def is_parameter_server_cluster(config):
    """Whether TF_CONFIG puts this task (chief, worker or ps) in a cluster with `ps` tasks.

    Raises:
      ValueError: such a cluster without a `chief` task (ParameterServerStrategy's
        coordinator), or with a legacy `master` task.
    """
    if not config.num_ps_replicas or config.task_type not in ("chief", "master", "worker",
                                                               "ps"):
        return False
    jobs = config.cluster_spec.jobs
    if "chief" not in jobs or "master" in jobs or "worker" not in jobs:
        raise ValueError(
            f"TF_CONFIG describes a cluster with parameter servers ('ps' tasks) and the jobs "
            f"{sorted(jobs)}. Parameter-server training runs on TensorFlow 2's "
            "ParameterServerStrategy, which needs one 'chief' task (it coordinates and writes "
            "the checkpoints) and at least one 'worker' task: rename 'master' to 'chief', or "
            "add a 'chief' task (the worker 0 of a TF1 cluster without one).")
    return True


_PS_WITH_TPU = (
    "TF_CONFIG describes a cluster with parameter servers ('ps' tasks), which train a "
    "TPUEstimator only with use_tpu=False (ParameterServerStrategy runs the steps on the "
    "workers' CPUs/GPUs). Pass use_tpu=False, or remove the 'ps' tasks for TPU training.")


def _parameter_server_runtime(config):
    strategy, coordinator = parameter_servers.parameter_server_strategy(
        run_config_lib.cluster_spec_for(config, False))
    return Runtime(strategy=strategy, tpu_semantics=False, num_replicas=1, num_hosts=1,
                   num_workers=1, is_chief=True, coordinator=coordinator)


def multi_worker_strategy(communication_options=None, start_timeout_secs=None):
    """This process's `tf.distribute.MultiWorkerMirroredStrategy`, built from TF_CONFIG.

    Created on the first call and then reused: TensorFlow allows one collective runtime per
    process. In TensorFlow 2.21 it can only be created before the process runs its first
    TensorFlow operation, so call this at program start when the program runs TensorFlow
    code before `train()` (the estimator calls it itself otherwise). Creating it waits until
    every worker of TF_CONFIG has started, logging the ones it waits for every 30 s, and
    raises `WorkerStartTimeoutError` naming them after `start_timeout_secs`
    (`worker_start.py`). Peer failures are detected by TensorFlow's
    coordination service (its default heartbeat timeout, 10 s in TF 2.21), which aborts the
    collectives of the surviving workers.

    Args:
      communication_options: a `tf.distribute.experimental.CommunicationOptions`, used only
        by the call that creates the strategy (e.g. `timeout_seconds` to also bound
        collectives that wait on a live but stuck worker).
      start_timeout_secs: how long to wait for the other workers to start; None: the
        environment variable TPU_ESTIMATOR_COMPAT_WORKER_START_TIMEOUT_SECS, else 900 s;
        0 waits forever.

    Raises:
      RuntimeError: TensorFlow already ran an operation in this process.
      WorkerStartTimeoutError: other workers did not start within the start timeout.
    """
    if not _multi_worker_strategies:
        if graphs.tensorflow_started():  # fail now, not after waiting for the peers
            raise _tensorflow_started_error()
        if start_timeout_secs is None:
            start_timeout_secs = worker_start.start_timeout_secs()
        worker_start.wait_for_peers(tf_config_lib.load_tf_config(), start_timeout_secs or None)
        try:
            strategy = tf.distribute.MultiWorkerMirroredStrategy(
                communication_options=communication_options)
        except RuntimeError as e:
            if "program startup" not in str(e):
                raise
            raise _tensorflow_started_error() from e
        _multi_worker_strategies.append(strategy)
        logging.info("Multi-worker training with MultiWorkerMirroredStrategy: %d replicas in "
                     "sync.", strategy.num_replicas_in_sync)
    return _multi_worker_strategies[0]


def _tensorflow_started_error():
    return RuntimeError(
        "Cannot start multi-worker training: this process already ran a TensorFlow "
        "operation, and TensorFlow 2.21 can only create a MultiWorkerMirroredStrategy "
        "before its first operation (collective ops are configured at start-up). Call "
        "tpu_estimator_compat.multi_worker_strategy() at the start of the program, "
        "before any other TensorFlow code, or create "
        "tf.distribute.MultiWorkerMirroredStrategy() there and pass it as "
        "RunConfig(train_distribute=...).")


def _check_simulated_cores(runtime, use_tpu):
    value = cluster_resolver_lib.simulated_tpu_cores()
    if use_tpu and value and value != runtime.replicas_per_host:
        logging.warning(
            "%s=%s is not used across workers: MultiWorkerMirroredStrategy places one replica "
            "per local accelerator (one per CPU-only worker), so each of the %d hosts (workers) "
            "has %d replica(s).", SIMULATED_TPU_CORES_ENV, value, runtime.num_hosts,
            runtime.replicas_per_host)


def _one_device_strategy():
    device = "/gpu:0" if tf.config.list_logical_devices("GPU") else "/cpu:0"
    if device not in _one_device_strategies:
        _one_device_strategies[device] = tf.distribute.OneDeviceStrategy(device)
    return _one_device_strategies[device]


def _simulated_tpu_strategy(cores, cores_per_replica, input_mode):
    """(MirroredStrategy, device assignment) of the simulated TPU: one replica per core, or
    with model parallelism one per `cores_per_replica` cores, on the device of its core 0."""
    assignment = None
    if cores_per_replica is not None:
        assignment = model_parallelism.device_assignment_for(
            model_parallelism.simulated_topology(cores), cores_per_replica, input_mode)
    key = (cores, cores_per_replica)
    if key not in _simulated_strategies:  # one per process: strategies share collective keys
        # Physical GPUs only: listing logical devices would initialise TensorFlow's devices
        # before the CPU can be split.
        if len(tf.config.list_physical_devices("GPU")) >= cores:
            devices = [d.name for d in tf.config.list_logical_devices("GPU")]
        else:
            devices = _logical_cpus(cores)
        devices = devices[:cores]
        if assignment is not None:
            devices = [devices[ordinal]
                       for ordinal in model_parallelism.replica_ordinals(assignment)]
            logging.info("Simulating a %d-core TPU with %d cores per replica: %d replicas on "
                         "local devices %s (%s).", cores, cores_per_replica, len(devices),
                         devices, SIMULATED_TPU_CORES_ENV)
        else:
            logging.info("Simulating a %d-core TPU on local devices %s (%s).", cores, devices,
                         SIMULATED_TPU_CORES_ENV)
        # Group keys of their own: another MirroredStrategy over the same devices (a user's
        # train_distribute, another simulated TPU's) must not run the same collective keys.
        _simulated_strategies[key] = _mirrored_strategy(
            devices,
            collective_key_base=_COLLECTIVE_KEYS_PER_STRATEGY * (1 + len(_simulated_strategies)))
    return _simulated_strategies[key], assignment


def _mirrored_strategy(devices, collective_key_base):
    """A MirroredStrategy whose collective group keys start after `collective_key_base`.

    Every MirroredStrategy numbers its device groups from key 1 and its collectives from
    instance key 100, and TensorFlow keeps each (group, instance) it has run for the life of
    the process: two strategies in one process (replicas of 2 and of 4 cores, or a user's
    MirroredStrategy beside the simulated TPU's) would run the same keys with other shapes
    or group sizes, and TensorFlow aborts every collective after that. TensorFlow reads
    the base from the strategy class, hence the subclass.
    """
    if not collective_key_base:
        return tf.distribute.MirroredStrategy(devices)
    return distribute.mirrored_strategy_class(collective_key_base)(devices)


def prepare_simulated_tpu():
    """Splits the CPU for a simulated TPU now, if the environment asks for one.

    Called when the package is imported, which in a legacy program comes before its first
    TensorFlow operation: after that TensorFlow's devices can no longer be split.
    """
    cores = cluster_resolver_lib.simulated_tpu_cores()
    if cores and len(tf.config.list_physical_devices("GPU")) < cores:
        try:
            _split_cpu(cores)  # without listing the devices, which would start TensorFlow
        except RuntimeError:  # (and a multi-worker strategy must be created before that)
            pass  # reported, with the fix, when the estimator needs the devices


def _logical_cpus(count):
    _split_cpu(count)
    return [d.name for d in tf.config.list_logical_devices("CPU")]


def _split_cpu(count):
    physical = tf.config.list_physical_devices("CPU")[0]
    configured = tf.config.get_logical_device_configuration(physical) or [None]
    if len(configured) < count:
        try:
            tf.config.set_logical_device_configuration(
                physical, [tf.config.LogicalDeviceConfiguration()] * count)
        except RuntimeError:
            cpus = tf.config.list_logical_devices("CPU")
            raise RuntimeError(
                f"Cannot simulate {count} TPU cores: TensorFlow already initialised its "
                f"devices with {len(cpus)} CPU device(s). Set {SIMULATED_TPU_CORES_ENV} before "
                "the first TensorFlow operation runs, or split the CPU yourself with "
                "tf.config.set_logical_device_configuration at start-up.") from None


def _tpu_strategy(config, cores_per_replica, input_mode):
    """(TPUStrategy, device assignment): with model parallelism, replicas of
    `cores_per_replica` cores (`model_parallelism.device_assignment_for`)."""
    resolver = config.cluster
    if resolver is None:
        resolver = cluster_resolver_lib.TPUClusterResolver(tpu=_tpu_name(config))
    if isinstance(resolver, cluster_resolver_lib.TPUClusterResolver):
        resolver = resolver.resolve()
    key = (repr(resolver.master()), cores_per_replica)
    if key not in _tpu_strategies:
        if resolver.master() not in _tpu_topologies:
            tf.config.experimental_connect_to_cluster(resolver)
            _tpu_topologies[resolver.master()] = tf.tpu.experimental.initialize_tpu_system(
                resolver)
        assignment = None
        if cores_per_replica is not None:
            assignment = model_parallelism.device_assignment_for(
                _tpu_topologies[resolver.master()], cores_per_replica, input_mode)
        _tpu_strategies[key] = (
            tf.distribute.TPUStrategy(resolver, experimental_device_assignment=assignment),
            assignment)
    return _tpu_strategies[key]


def _tpu_name(config):
    """The TPU to look up: RunConfig's `master`, unless that is this task's own address in
    TF_CONFIG's cluster (a worker, not a TPU: connecting to it as a TPU would wait forever);
    then none is named and the lookup fails, or finds $TPU_NAME, as without TF_CONFIG."""
    master = config.master or ""
    try:
        own = config.cluster_spec.task_address(config.task_type, config.task_id)
    except (KeyError, ValueError, TypeError):
        return master
    return "" if master == f"grpc://{own}" else master
