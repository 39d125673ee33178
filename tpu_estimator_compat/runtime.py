"""Where the model runs: the tf.distribute strategy for a mode and the facts derived from it.

| use_tpu | strategy in RunConfig | environment                               | runs on                    | semantics |
|---------|-----------------------|-------------------------------------------|----------------------------|-----------|
| True    | given                 |                                           | that strategy's replicas   | TPU       |
| True    | None                  | TPU_ESTIMATOR_COMPAT_SIMULATED_TPU_CORES=N | N local devices (Mirrored) | TPU       |
| True    | None                  |                                           | the TPU (TPUStrategy)      | TPU       |
| False   | given                 |                                           | that strategy's replicas   | CPU/GPU   |
| False   | None                  |                                           | one device (GPU:0 or CPU)  | CPU/GPU   |

"TPU semantics" are the original's sharding rules: per-replica batch sizes, input pipeline
modes, `params['context']`, static shapes; "CPU/GPU semantics" are Estimator's: input_fn gets
the configured batch size and, under a given strategy, each replica gets whole batches of it
(as Estimator did with `train_distribute`). Like the original, `use_tpu=False` alone uses one
device; several GPUs are used by passing `RunConfig(train_distribute=MirroredStrategy())`.
"""
import dataclasses
import os

import tensorflow as tf
from absl import logging

SIMULATED_TPU_CORES_ENV = "TPU_ESTIMATOR_COMPAT_SIMULATED_TPU_CORES"

_tpu_strategies = {}  # TPU systems are initialised once per process and target
_one_device_strategies = {}
_simulated_strategies = {}


@dataclasses.dataclass(frozen=True)
class Runtime:
    """A strategy plus the replica and host counts the input and batch rules need."""

    strategy: tf.distribute.Strategy
    tpu_semantics: bool
    num_replicas: int
    num_hosts: int

    @property
    def replicas_per_host(self):
        return self.num_replicas // self.num_hosts


def runtime_for_strategy(strategy, tpu_semantics):
    num_replicas = strategy.num_replicas_in_sync
    local_replicas = max(1, len(strategy.extended.worker_devices))
    return Runtime(strategy=strategy, tpu_semantics=tpu_semantics,
                   num_replicas=num_replicas, num_hosts=max(1, num_replicas // local_replicas))


def select_runtime(config, use_tpu, distribute):
    """Builds the Runtime for one mode; `distribute` is the RunConfig strategy for it."""
    if distribute is not None:
        return runtime_for_strategy(distribute, tpu_semantics=use_tpu)
    if use_tpu:
        simulated_cores = os.environ.get(SIMULATED_TPU_CORES_ENV)
        if simulated_cores:
            return runtime_for_strategy(_simulated_tpu_strategy(simulated_cores), True)
        return runtime_for_strategy(_tpu_strategy(config), True)
    return runtime_for_strategy(_one_device_strategy(), False)


def _one_device_strategy():
    device = "/gpu:0" if tf.config.list_logical_devices("GPU") else "/cpu:0"
    if device not in _one_device_strategies:
        _one_device_strategies[device] = tf.distribute.OneDeviceStrategy(device)
    return _one_device_strategies[device]


def _simulated_tpu_strategy(value):
    try:
        cores = int(value)
        if cores < 1:
            raise ValueError
    except ValueError:
        raise ValueError(
            f"{SIMULATED_TPU_CORES_ENV}={value!r} is not a positive integer. Set it to the "
            "number of TPU cores to simulate, e.g. 8.") from None
    if cores not in _simulated_strategies:  # one per process: strategies share collective keys
        gpus = tf.config.list_logical_devices("GPU")
        devices = [d.name for d in gpus] if len(gpus) >= cores else _logical_cpus(cores)
        logging.info("Simulating a %d-core TPU on local devices %s (%s).", cores,
                     devices[:cores], SIMULATED_TPU_CORES_ENV)
        _simulated_strategies[cores] = tf.distribute.MirroredStrategy(devices[:cores])
    return _simulated_strategies[cores]


def _logical_cpus(count):
    cpus = tf.config.list_logical_devices("CPU")
    if len(cpus) < count:
        physical = tf.config.list_physical_devices("CPU")[0]
        try:
            tf.config.set_logical_device_configuration(
                physical, [tf.config.LogicalDeviceConfiguration()] * count)
        except RuntimeError:
            raise RuntimeError(
                f"Cannot simulate {count} TPU cores: TensorFlow already initialised its "
                f"devices with {len(cpus)} CPU device(s). Set {SIMULATED_TPU_CORES_ENV} before "
                "the first TensorFlow operation runs, or split the CPU yourself with "
                "tf.config.set_logical_device_configuration at start-up.") from None
        cpus = tf.config.list_logical_devices("CPU")
    return [d.name for d in cpus]


def _tpu_strategy(config):
    from tpu_estimator_compat import cluster_resolver as cluster_resolver_lib  # noqa: PLC0415
    resolver = config.cluster
    if resolver is None:
        resolver = cluster_resolver_lib.TPUClusterResolver(tpu=config.master or "")
    if isinstance(resolver, cluster_resolver_lib.TPUClusterResolver):
        resolver = resolver.resolve()
    key = repr(resolver.master())
    if key not in _tpu_strategies:
        tf.config.experimental_connect_to_cluster(resolver)
        tf.tpu.experimental.initialize_tpu_system(resolver)
        _tpu_strategies[key] = tf.distribute.TPUStrategy(resolver)
    return _tpu_strategies[key]
