"""TF 1.x's `tf.contrib.lookup` names that TensorFlow 2 no longer has as TF 1.x called them:
`HashTable` (a `tf.compat.v1.lookup.StaticHashTable` with `shared_name` and `init`), the
table builders taking `mapping`, and the deprecated `string_to_index*`/`index_to_string`.

Tables are TensorFlow 2's; as in TF 1.x, a table built in a TF1 graph files its initializer
in TABLE_INITIALIZERS (run by the estimator before the first step, and by an exported
SavedModel's main op).
"""
import tensorflow as tf

from tpu_estimator_compat.tf_internals import lookup as tf_lookup

FastHashSpec = tf_lookup.FAST_HASH_SPEC


class HashTable(tf.compat.v1.lookup.StaticHashTable):
    """An immutable hash table filled by `initializer`; `default_value` for missing keys.

    `shared_name`, if given, names the table's resource (tables of that name share it).
    """

    def __init__(self, initializer, default_value, shared_name=None, name=None):
        self._requested_shared_name = shared_name
        super().__init__(initializer, default_value, name=name)

    def _create_resource(self):
        if self._requested_shared_name:
            tf_lookup.set_shared_name(self, self._requested_shared_name)
        return super()._create_resource()

    @property
    def init(self):
        """The op initialising the table (TF 1.x's name of `initializer`)."""
        return self.initializer


def index_table_from_tensor(mapping, num_oov_buckets=0, default_value=-1,
                            hasher_spec=FastHashSpec, dtype=tf.string, name=None):
    """A table mapping the values of `mapping` (1-D) to their int64 positions; other values
    to `default_value`, or with `num_oov_buckets` to a hash bucket after the positions."""
    if mapping is None:
        raise ValueError("mapping must be specified.")
    return tf_lookup.index_table_from_tensor(
        vocabulary_list=mapping, num_oov_buckets=num_oov_buckets,
        default_value=default_value, hasher_spec=hasher_spec, dtype=dtype, name=name)


def index_to_string_table_from_tensor(mapping, default_value="UNK", name=None):
    """A table mapping int64 positions in `mapping` (1-D strings) to its values; other ids
    to `default_value`."""
    if mapping is None:
        raise ValueError("mapping must be specified.")
    return tf_lookup.index_to_string_table_from_tensor(
        vocabulary_list=mapping, default_value=default_value, name=name)


def string_to_index_table_from_file(vocabulary_file=None, num_oov_buckets=0, vocab_size=None,
                                    default_value=-1, hasher_spec=FastHashSpec, name=None):
    """Deprecated in TF 1.x: `index_table_from_file` with string keys."""
    return tf_lookup.index_table_from_file(
        vocabulary_file, num_oov_buckets, vocab_size, default_value, hasher_spec,
        key_dtype=tf.string, name=name)


def string_to_index_table_from_tensor(mapping, num_oov_buckets=0, default_value=-1,
                                      hasher_spec=FastHashSpec, name=None):
    """Deprecated in TF 1.x: `index_table_from_tensor` of a string `mapping`."""
    with tf.compat.v1.name_scope(name, "string_to_index") as scope:
        mapping = tf.convert_to_tensor(mapping)
    if mapping.dtype.base_dtype != tf.string:
        raise ValueError("string_to_index_table_from_tensor requires string.")
    return index_table_from_tensor(mapping, num_oov_buckets, default_value, hasher_spec,
                                   name=scope)


def string_to_index(tensor, mapping, default_value=-1, name=None):
    """Deprecated in TF 1.x: the int64 positions in `mapping` of the strings of `tensor`."""
    table = index_table_from_tensor(mapping=mapping, default_value=default_value, name=name)
    return table.lookup(tensor)


def index_to_string(tensor, mapping, default_value="UNK", name=None):
    """Deprecated in TF 1.x: the strings of `mapping` at the int64 positions `tensor`."""
    table = index_to_string_table_from_tensor(
        mapping=mapping, default_value=default_value, name=name)
    return table.lookup(tensor)
