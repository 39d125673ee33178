"""Process-wide switches of TensorFlow's tensors, shapes and variables that decide TF1 or TF2
behaviour (set by tf1_behaviour/shapes.py and tf1_behaviour/variables.py for TF1 code only)."""
from tensorflow.python.distribute import distribute_utils
from tensorflow.python.distribute import values as distribute_values
from tensorflow.python.framework import ops
from tensorflow.python.framework import tensor as tensor_lib
from tensorflow.python.framework import tensor_shape
from tensorflow.python.ops import resource_variable_ops
from tensorflow.python.training import optimizer as optimizer_lib

from tpu_estimator_compat.tf_internals._symbols import Symbol, uses

SYMBOLS = uses(
    Symbol("tensorflow.python.framework.tensor_shape", "_TENSORSHAPE_V2_OVERRIDE",
           "TF1 `Dimension`s (`shape[-1].value`) in TF1 code, ints elsewhere"),
    Symbol("tensorflow.python.framework.tensor", "Tensor._USE_EQUALITY",
           "tensors and variables hashable (sets, dict keys) in TF1 code"),
    Symbol("tensorflow.python.ops.resource_variable_ops", "BaseResourceVariable.op",
           "`variable.op.name` of an eagerly created variable is its TF1 name in TF1 code"),
    Symbol("tensorflow.python.distribute.values", "DistributedVariable.op",
           "`variable.op.name` of a mirrored variable is its TF1 name in TF1 code"),
    Symbol("tensorflow.python.ops.resource_variable_ops", "BaseResourceVariable.initializer",
           "`tf.compat.v1.global_variables_initializer()` in TF1 code (a Scaffold's init_op) "
           "builds, as an op doing nothing, for eagerly created variables"),
    Symbol("tensorflow.python.distribute.values", "DistributedVariable.initializer",
           "the same for mirrored variables"),
    Symbol("tensorflow.python.training.optimizer", "_var_key",
           "v1 optimizers find the slots of eagerly created variables"),
    Symbol("tensorflow.python.distribute.distribute_utils", "value_container",
           "one slot / one key per variable, whichever replica's copy code holds"),
    Symbol("tensorflow.python.ops.resource_variable_ops", "BaseResourceVariable._handle",
           "telling eagerly created variables from graph ones", per_instance=True),
    Symbol("tensorflow.python.ops.resource_variable_ops", "BaseResourceVariable._unique_id",
           "v1 optimizers find the slots of eagerly created variables", per_instance=True),
    Symbol("tensorflow.python.distribute.values", "DistributedVariable._primary",
           "telling eagerly created variables from graph ones"),
    Symbol("tensorflow.python.distribute.values", "DistributedVariable._unique_id",
           "v1 optimizers find the slots of eagerly created variables"),
)

value_container = distribute_utils.value_container


def shape_override():
    """What TensorFlow consults to choose TF2 shapes (truthy) or TF1 `Dimension`s."""
    return tensor_shape._TENSORSHAPE_V2_OVERRIDE  # pylint: disable=protected-access


def set_shape_override(value):
    tensor_shape._TENSORSHAPE_V2_OVERRIDE = value  # pylint: disable=protected-access


def tensor_equality():
    """What TensorFlow consults to make tensors unhashable, compared by value (truthy)."""
    return tensor_lib.Tensor._USE_EQUALITY  # pylint: disable=protected-access


def set_tensor_equality(value):
    tensor_lib.Tensor._USE_EQUALITY = value  # pylint: disable=protected-access


def optimizer_slot_key():
    """The function v1 optimizers key a variable's slots by."""
    return optimizer_lib._var_key  # pylint: disable=protected-access


def set_optimizer_slot_key(function):
    optimizer_lib._var_key = function  # pylint: disable=protected-access


def variable_op_properties():
    """The `op` properties of (resource variables, distributed variables)."""
    return (resource_variable_ops.BaseResourceVariable.op,
            distribute_values.DistributedVariable.op)


def set_variable_op_properties(resource_op, distributed_op):
    resource_variable_ops.BaseResourceVariable.op = resource_op
    distribute_values.DistributedVariable.op = distributed_op


def variable_initializer_properties():
    """The `initializer` properties of (resource variables, distributed variables)."""
    return (resource_variable_ops.BaseResourceVariable.initializer,
            distribute_values.DistributedVariable.initializer)


def set_variable_initializer_properties(resource_initializer, distributed_initializer):
    resource_variable_ops.BaseResourceVariable.initializer = resource_initializer
    distribute_values.DistributedVariable.initializer = distributed_initializer


def is_eagerly_created(variable):
    """Whether `variable` (a distributed variable: its primary copy) was created eagerly:
    its handle is an eager tensor."""
    primary = getattr(variable, "_primary", variable)
    return isinstance(getattr(primary, "_handle", None), ops.EagerTensor)


def unique_id(variable):
    """TensorFlow 2's key of a variable (its unique id)."""
    return variable._unique_id  # pylint: disable=protected-access
