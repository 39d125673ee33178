"""Parameter-server training: TensorFlow 2's ParameterServerStrategy and ClusterCoordinator.

A TF_CONFIG cluster with `ps` tasks trains as TensorFlow 2 does it, from the chief:

    chief      the coordinator: traces the step (the v1 model_fn, TF1 graph semantics, as
               for every other strategy), creates the variables on the parameter servers,
               schedules closures of `steps_per_execution` steps on the workers, and does
               the host's work between rounds (checkpoints, summaries, logs, hooks)
    worker     a `tf.distribute.Server` that runs the closures it is given, each on a batch
               of its own copy of the input (input_fn is traced once and runs on each worker)
    ps         a `tf.distribute.Server` holding variables

Variables go to the parameter servers round robin in the order the model creates them, as
TF1's `replica_device_setter` placed them; a variable the program partitions
(`get_variable(partitioner=...)`, `variable_scope(partitioner=...)`) is several variables
(`<name>/part_<i>`), so its parts spread over the parameter servers, and the checkpoint
saves them as the one full variable, as TF1 did. Variables the program does not partition
stay whole (ParameterServerStrategy's `variable_partitioner` is not used).

Each closure increments the global step once per step, on the parameter servers; the
coordinator schedules exactly the steps left to `max_steps`, so every worker stops there.
"""
import tensorflow as tf

from tpu_estimator_compat import log as logging
from tpu_estimator_compat.engine.step_outputs import TrainLoopResult

_strategies = []  # at most one per process: it connects the process to the cluster


def parameter_server_strategy(cluster_spec):
    """This process's `(ParameterServerStrategy, ClusterCoordinator)` for `cluster_spec`
    (TF_CONFIG's cluster; this process is its chief). Created on the first call; connecting
    waits for the workers and parameter servers to start."""
    if not _strategies:
        resolver = tf.distribute.cluster_resolver.SimpleClusterResolver(
            cluster_spec, task_type="chief", task_id=0, rpc_layer="grpc")
        strategy = tf.distribute.experimental.ParameterServerStrategy(resolver)
        coordinator = tf.distribute.experimental.coordinator.ClusterCoordinator(strategy)
        logging.info("Parameter-server training with ParameterServerStrategy: %d worker(s), "
                     "%d parameter server(s); this task (the chief) coordinates.",
                     cluster_spec.num_tasks("worker"), cluster_spec.num_tasks("ps"))
        _strategies.append((strategy, coordinator))
    return _strategies[0]


def log_placement(named_variables):
    """Logs the parameter server of each variable (`{tf1_name: variable}`), one line each."""
    for name in sorted(named_variables):
        logging.info("Variable %s is on %s.", name, named_variables[name].device)


class PerWorkerInput:
    """Each worker's own iterator over its copy of `make_dataset()` (built on the workers):
    `iterator` for `ClusterCoordinator.schedule`, `element_spec` for tracing the step."""

    def __init__(self, coordinator, make_dataset):
        dataset = coordinator.create_per_worker_dataset(make_dataset)
        self.element_spec = dataset.element_spec
        self.iterator = iter(dataset)


class CoordinatedLoop:
    """`loop(iterator, n)` for the host: `n` steps as closures of `steps_per_execution`
    steps scheduled on the workers, waited for; returns their `TrainLoopResult` combined
    (the last closure's loss and hook fetches, every step's host_call rows in schedule
    order, finite only if every closure's losses were)."""

    def __init__(self, coordinator, train_loop, steps_per_execution=1):
        self._coordinator = coordinator
        self._train_loop = train_loop
        self._steps_per_execution = max(1, int(steps_per_execution))

        @tf.function(autograph=False)
        def closure(iterator, num_steps):  # a remote value cannot hold None: fields left out
            result = train_loop(iterator, num_steps)
            return {name: value for name, value in result._asdict().items()
                    if value is not None}
        self._closure = closure

    def with_steps_per_execution(self, steps_per_execution):
        """This loop, scheduling closures of `steps_per_execution` steps."""
        return CoordinatedLoop(self._coordinator, self._train_loop, steps_per_execution)

    def __call__(self, iterator, num_steps):
        remaining = int(num_steps)
        scheduled = []
        while remaining > 0:
            size = min(self._steps_per_execution, remaining)
            scheduled.append(self._coordinator.schedule(
                self._closure, args=(iterator.iterator, tf.constant(size))))
            remaining -= size
        self._coordinator.join()  # a lost worker's steps are run again on the others
        results = [value.fetch() for value in scheduled]
        last = results[-1]
        host_call = last.get("host_call")
        if host_call is not None:
            host_call = tf.nest.map_structure(
                lambda *parts: tf.concat(parts, axis=0), *[r["host_call"] for r in results])
        return TrainLoopResult(
            loss=tf.constant(last["loss"]),
            loss_finite=tf.constant(all(bool(r["loss_finite"]) for r in results)),
            host_call=host_call,
            hook_fetches=tf.nest.map_structure(tf.constant, last.get("hook_fetches", {})))

