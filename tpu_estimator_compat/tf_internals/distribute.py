"""tf.distribute internals: which replica a thread builds, TF1 control dependencies across
`merge_call`, a TPU strategy's device assignment, XLA's replica id, per-replica values."""
import contextlib

from tensorflow.compiler.tf2xla.python import xla
from tensorflow.python.distribute import distribute_lib
from tensorflow.python.distribute import distribute_utils
from tensorflow.python.distribute import mirrored_strategy
from tensorflow.python.distribute import values
from tensorflow.python.util import nest

from tpu_estimator_compat.tf_internals._symbols import Symbol, uses

SYMBOLS = uses(
    Symbol("tensorflow.python.distribute.distribute_lib",
           "ReplicaContextBase._replica_id_in_sync_group",
           "each replica's model_fn call gets its own v1 collections (a Python int here, "
           "where the public property gives a tensor)", per_instance=True),
    Symbol("tensorflow.python.distribute.mirrored_strategy",
           "MirroredExtended._get_replica_id_in_sync_group",
           "this process's replica index when several workers train (first local replica)"),
    Symbol("tensorflow.python.distribute.distribute_lib", "ReplicaContext.merge_call",
           "`with tf.control_dependencies(update_ops): minimize()` under a strategy "
           "(tf1_behaviour/patches.py replaces it while model_fn runs)"),
    Symbol("tensorflow.python.distribute.tpu_strategy", "TPUExtended._device_assignment",
           "model parallelism on a TPUStrategy the user built (its device assignment)",
           per_instance=True),
    Symbol("tensorflow.compiler.tf2xla.python.xla", "replica_id",
           "`xla.replica_id()` of TF1 TPU code is the replica's index in its sync group "
           "(tf1_behaviour/patches.py replaces it while model_fn runs)"),
    Symbol("tensorflow.python.distribute.distribute_utils", "regroup",
           "TPU embedding activations handed back per replica as one distributed value; "
           "replicas on this process's CPUs get their batches from the host's iterator "
           "(engine/inputs.py)"),
    Symbol("tensorflow.python.distribute.values", "PerReplicaSpec",
           "the step of replicas fed from the host's iterator is traced on one input per "
           "replica, as a distributed iterator's element spec gives (engine/inputs.py)"),
    Symbol("tensorflow.python.distribute.values", "DistributedVariable._packed_variable",
           "a TPUStrategy's step captures a packed variable's one handle: the replicas' "
           "copies are checked and kept as TF1 kept them (engine/replica_sync.py)"),
    Symbol("tensorflow.python.distribute.mirrored_strategy",
           "MirroredStrategy._collective_key_base",
           "two MirroredStrategies in one process (a simulated TPU's, a user's) run their "
           "collectives under group keys of their own (engine/runtime.py)"),
    Symbol("tensorflow.python.util.nest", "flatten_up_to",
           "TPUConfig.input_partition_dims flattened against features as the original did"),
)

ReplicaContext = distribute_lib.ReplicaContext
_REPLICA_ID_PROPERTY = distribute_lib.ReplicaContext.replica_id_in_sync_group
regroup = distribute_utils.regroup
PerReplicaSpec = values.PerReplicaSpec
xla_module = xla


def local_replica_index(replica_context):
    """The index of `replica_context`'s replica among this process's replicas (0 first), or
    None when one trace builds every replica (TPUStrategy: a tensor id)."""
    replica_id = getattr(replica_context, "_replica_id_in_sync_group", 0)
    if not isinstance(replica_id, int):
        return None
    if replica_id:  # between-graph (several workers): minus this process's first replica
        extended = replica_context.strategy.extended
        first = getattr(extended, "_get_replica_id_in_sync_group", lambda local: local)(0)
        replica_id -= first
    return replica_id


@contextlib.contextmanager
def replica_ids_observed(observe):
    """Within the block, `observe(value)` sees every value the public
    `ReplicaContext.replica_id_in_sync_group` returns (a constant tensor in graphs)."""
    def observed(context):
        value = _REPLICA_ID_PROPERTY.fget(context)
        observe(value)
        return value
    with _replaced(ReplicaContext, "replica_id_in_sync_group", property(observed)):
        yield


@contextlib.contextmanager
def reductions_observed(observe):
    """Within the block, `observe(kind, argument, value, result)` sees every
    `ReplicaContext.all_reduce(reduce_op, value)` ("all_reduce", reduce_op) and
    `all_gather(value, axis)` ("all_gather", axis) call and its result."""
    all_reduce, all_gather = ReplicaContext.all_reduce, ReplicaContext.all_gather

    def observed_all_reduce(context, reduce_op, value, options=None):
        result = all_reduce(context, reduce_op, value, options)
        observe("all_reduce", reduce_op, value, result)
        return result

    def observed_all_gather(context, value, axis, options=None):
        result = all_gather(context, value, axis, options)
        observe("all_gather", axis, value, result)
        return result
    with _replaced(ReplicaContext, "all_reduce", observed_all_reduce), \
            _replaced(ReplicaContext, "all_gather", observed_all_gather):
        yield


@contextlib.contextmanager
def _replaced(cls, name, value):
    """`cls.name` is `value` within the block (then what `cls` itself had, or inherited)."""
    own = cls.__dict__.get(name)
    setattr(cls, name, value)
    try:
        yield
    finally:
        if own is None:
            delattr(cls, name)
        else:
            setattr(cls, name, own)


def device_assignment(strategy):
    """A TPUStrategy's device assignment, or None."""
    return getattr(strategy.extended, "_device_assignment", None)


def variable_handles(variable, strategy):
    """The resource handles a traced step may capture for `variable`: each replica's copy,
    and a TPUStrategy's packed handle of all of them if it has one."""
    handles = [component.handle
               for component in strategy.experimental_local_results(variable)]
    packed = getattr(variable, "_packed_variable", None)
    if packed is not None:
        handles.append(packed.handle)
    return handles


def variable_names_by_handle(named, strategy):
    """{id of a resource handle a traced step may capture: its variable's name} for the
    variables of `named` ({name: variable})."""
    return {id(handle): name for name, variable in named.items()
            for handle in variable_handles(variable, strategy)}


def mirrored_strategy_class(collective_key_base):
    """A `tf.distribute.MirroredStrategy` subclass whose collective group keys start after
    `collective_key_base` (TensorFlow reads the base from the strategy class)."""
    return type("MirroredStrategy", (mirrored_strategy.MirroredStrategy,),
                {"_collective_key_base": collective_key_base})


def flatten_up_to(shallow_structure, structure):
    """`structure` flattened down to the depth of `shallow_structure` (raises TypeError or
    ValueError when `structure` does not have that shape)."""
    return nest.flatten_up_to(shallow_structure, structure)
