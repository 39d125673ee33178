"""`tf.contrib.lookup`: all of TF 1.15's names. TensorFlow's lookup tables and initializers
(`tf.lookup`, `lookup_ops`); `MutableDenseHashTable` is `tf.lookup.experimental.DenseHashTable`
(as in TF 1.15); `HashTable`, the builders taking `mapping` and the deprecated
`string_to_index*`/`index_to_string` are this package's (`rebuilt_apis/contrib_lookup.py`)."""
from tpu_estimator_compat.v1 import _lazy

_LOOKUP_OPS = ("IdTableWithHashBuckets", "InitializableLookupTableBase",
               "KeyValueTensorInitializer", "LookupInterface", "TableInitializerBase",
               "TextFileIdTableInitializer", "TextFileIndex", "TextFileInitializer",
               "TextFileStringTableInitializer", "HasherSpec", "StrongHashSpec", "FastHashSpec",
               "index_table_from_file", "index_to_string_table_from_file")
OWN = ("HashTable", "index_table_from_tensor", "index_to_string_table_from_tensor",
       "string_to_index", "string_to_index_table_from_file",
       "string_to_index_table_from_tensor", "index_to_string")

_lazy.install(
    globals(),
    names={
        **{name: f"tensorflow.python.ops.lookup_ops:{name}" for name in _LOOKUP_OPS},
        "MutableHashTable": "tensorflow:lookup.experimental.MutableHashTable",
        "MutableDenseHashTable": "tensorflow:lookup.experimental.DenseHashTable",
        **{name: f"tpu_estimator_compat.rebuilt_apis.contrib_lookup:{name}" for name in OWN},
    },
)
