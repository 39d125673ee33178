"""XLA on the simulated TPU: `outside_compilation`'s entry point and the mark its ops carry,
functions a graph calls, device names (engine/xla_step.py, tf1_behaviour/patches.py)."""
from tensorflow.core.framework import attr_value_pb2
from tensorflow.python.distribute import device_util
from tensorflow.python.tpu import tpu_replication

from tpu_estimator_compat.tf_internals._symbols import Symbol, uses

SYMBOLS = uses(
    Symbol("tensorflow.python.tpu.tpu_replication", "outside_compilation_impl",
           "tf.tpu.outside_compilation's ops run on the host, outside the XLA-compiled step"),
    Symbol("tensorflow.python.framework.ops", "Operation._set_attr",
           "an outside_compilation op carries the mark that keeps it out of XLA"),
    Symbol("tensorflow.python.framework.ops", "Graph._get_function",
           "ops calling functions that run collectives stay out of XLA"),
    Symbol("tensorflow.python.distribute.device_util", "canonicalize",
           "the simulated cores' device names, compared as TensorFlow writes them"),
)

OUTSIDE_COMPILATION_ATTRIBUTE = "_xla_outside_compilation"
tpu_replication_module = tpu_replication
canonical_device = device_util.canonicalize


def mark_outside_compilation(op):
    """Marks `op` to run on the host, outside the XLA-compiled part of the step."""
    op._set_attr(OUTSIDE_COMPILATION_ATTRIBUTE,  # pylint: disable=protected-access
                 attr_value_pb2.AttrValue(s=b"host"))


def graph_function(graph, name):
    """The function called `name` that `graph` knows, or None."""
    return graph._get_function(name)  # pylint: disable=protected-access
