"""TF1's lookup-table constructors behind `tf.contrib.lookup`, which TensorFlow 2 keeps in
`lookup_ops` only (its public `tf.lookup` has the table classes, not the functions), and the
shared name of a hash table's resource."""
from tensorflow.python.ops import lookup_ops

from tpu_estimator_compat.tf_internals._symbols import Symbol, uses

SYMBOLS = uses(
    Symbol("tensorflow.python.ops.lookup_ops", "index_table_from_tensor",
           "tf.contrib.lookup.index_table_from_tensor: ids of a vocabulary list"),
    Symbol("tensorflow.python.ops.lookup_ops", "index_to_string_table_from_tensor",
           "tf.contrib.lookup.index_to_string_table_from_tensor: strings of ids"),
    Symbol("tensorflow.python.ops.lookup_ops", "index_table_from_file",
           "tf.contrib.lookup.string_to_index_table_from_file: ids of a vocabulary file"),
    Symbol("tensorflow.python.ops.lookup_ops", "FastHashSpec",
           "contrib's default hasher of out-of-vocabulary buckets"),
    Symbol("tensorflow.python.ops.lookup_ops", "StaticHashTable._create_resource",
           "tf.contrib.lookup.HashTable names its resource when it is created: "
           "rebuilt_apis/contrib_lookup.py overrides it and calls the base's"),
    Symbol("tensorflow.python.ops.lookup_ops", "StaticHashTable._shared_name",
           "tf.contrib.lookup.HashTable(shared_name=...) names the table's resource",
           per_instance=True),
)

index_table_from_tensor = lookup_ops.index_table_from_tensor
index_to_string_table_from_tensor = lookup_ops.index_to_string_table_from_tensor
index_table_from_file = lookup_ops.index_table_from_file
FAST_HASH_SPEC = lookup_ops.FastHashSpec


def set_shared_name(table, shared_name):
    """Makes the resource `table` (a StaticHashTable whose resource is not created yet)
    creates shared under `shared_name`."""
    table._shared_name = shared_name  # pylint: disable=protected-access
