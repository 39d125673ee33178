"""TF1 faces of the model's variables in TF1 code: hashable, with an `.op` named as in TF1.

The engine creates the model's variables eagerly (see variable_store); TF1 code keeps
variables and tensors in sets and dict keys and reads `v.op.name` (savers' var lists,
`ExponentialMovingAverage.variables_to_restore()`, name filters). TensorFlow 2 makes them
unhashable (`Tensor._USE_EQUALITY`, see `tf_internals.tensors`), and an eagerly created
variable's `.op` raises.

`install()` makes both follow the TF1-code policy of `tf1_shapes` (user functions the engine
calls, TF1 graphs): there, variables and graph tensors hash and compare by identity, as in
TF1, and `.op` of an eagerly created variable is a `VariableOp` carrying its TF1 name;
its `.initializer` (which TensorFlow leaves None) is an op that does nothing in the graph
being built, since the variable got its value when it was created, so
`tf.compat.v1.global_variables_initializer()` builds (a Scaffold's `init_op`). Everywhere
else TensorFlow 2's behaviour is unchanged. v1 optimizers key their slots by a variable's
`.op` when it has one; for eagerly created variables they keep TF2's key (the
variable's unique id), wherever the slot is looked up from.
"""
import re

import tensorflow as tf

from tpu_estimator_compat.tf1_behaviour import shapes as tf1_shapes
from tpu_estimator_compat.tf_internals import tensors

GLOBAL_STEP_NAME = "global_step"  # TF1's name of the global step variable
_REPLICA_SUFFIX = re.compile(r"/replica_\d+$")  # a mirrored variable's copy on replica N
_variable_op, _distributed_variable_op = tensors.variable_op_properties()
_initializer_properties = tensors.variable_initializer_properties()
_optimizer_slot_key = tensors.optimizer_slot_key()


def tf1_name(variable_or_name):
    """The TF1 graph name of a variable: no ':0' suffix, no per-replica suffix, no trailing
    '/' (v1 optimizer slots arrive as 'dense/kernel/Adam/'; TF1 wrote 'dense/kernel/Adam').
    """
    name = variable_or_name if isinstance(variable_or_name, str) else variable_or_name.name
    return _REPLICA_SUFFIX.sub("", name[:-2] if name.endswith(":0") else name).rstrip("/")


class VariableOp:
    """What `variable.op` is in TF1 code for an eagerly created variable.

    Has the attributes TF1 code reads: `name` (the TF1 name: no ':0', no per-replica
    suffix), `type` ('VarHandleOp', as TF1's resource variables), `graph` (the graph being
    built), `device` and `outputs`.
    """

    type = "VarHandleOp"

    def __init__(self, variable):
        self.name = tf1_name(variable)
        self.device = variable.device
        self.graph = tf.compat.v1.get_default_graph()
        self.outputs = [variable]

    def __repr__(self):
        return f"<tf.Operation '{self.name}' type={self.type}>"


def _tf1_op(variable):
    # Also eagerly inside the user's TF1 code: under `tf.init_scope()` (a v1 optimizer
    # creating the slots of a partitioned variable reads the part's `op.name` there).
    if tensors.is_eagerly_created(variable) and (tf1_shapes.building_tf1_code()
                                                 or tf1_shapes.entered()):
        return VariableOp(variable)
    return _variable_op.fget(variable)


def _tf1_distributed_op(variable):
    if tf1_shapes.building_tf1_code():
        return VariableOp(variable)
    return _distributed_variable_op.fget(variable)


def _tf1_initializer(original):
    """An `initializer` property giving, in TF1 code building a graph, an op that does
    nothing for an eagerly created variable; `original`'s value elsewhere."""
    def initializer(variable):
        if (tensors.is_eagerly_created(variable) and tf1_shapes.building_tf1_code()
                and not tf.executing_eagerly()):
            return tf.no_op(name=f"{tf1_name(variable)}/Assign")
        return original.fget(variable)
    return property(initializer, doc=original.__doc__)


def _slot_key(variable):
    container = tensors.value_container(variable)
    if tensors.is_eagerly_created(container):
        return tensors.unique_id(container)
    return _optimizer_slot_key(variable)


def install():
    """Idempotent. Leaves an explicit `tf.compat.v1.disable_tensor_equality()` alone."""
    if tensors.tensor_equality() is True:
        tensors.set_tensor_equality(tf1_shapes.POLICY)
    tensors.set_optimizer_slot_key(_slot_key)
    tensors.set_variable_op_properties(
        property(_tf1_op, doc=_variable_op.__doc__),
        property(_tf1_distributed_op, doc=_distributed_variable_op.__doc__))
    tensors.set_variable_initializer_properties(
        *map(_tf1_initializer, _initializer_properties))
