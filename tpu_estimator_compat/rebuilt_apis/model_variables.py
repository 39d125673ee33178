"""Variable and output bookkeeping shared by the `tf.contrib.layers` functions.

Variables are made with `tf.compat.v1.get_variable` so their names are TF1's
(`fully_connected/weights`) and TF1 checkpoints restore into them.
"""
import tensorflow as tf

_v1 = tf.compat.v1


def model_variable(name, shape, dtype, initializer, regularizer=None, trainable=True,
                   collections=None):
    """A `get_variable` also filed in MODEL_VARIABLES, as contrib's `model_variable` did.

    Args:
      collections: extra collection keys; GLOBAL_VARIABLES and MODEL_VARIABLES are added
        (and TRAINABLE_VARIABLES by `get_variable` when `trainable`).
    """
    keys = list(collections or []) + [_v1.GraphKeys.GLOBAL_VARIABLES,
                                      _v1.GraphKeys.MODEL_VARIABLES]
    return _v1.get_variable(name, shape=shape, dtype=dtype, initializer=initializer,
                            regularizer=regularizer, trainable=trainable,
                            collections=list(dict.fromkeys(keys)))


def variable_collections(variables_collections, name):
    """The collections for variable `name`: from a dict by name, else the list itself."""
    if isinstance(variables_collections, dict):
        return variables_collections.get(name)
    return variables_collections


def collect_named_outputs(collections, alias, outputs):
    """Files `outputs` in `collections` (if any), recording `alias` in `outputs.aliases`."""
    if collections:
        alias = alias[:-1] if alias.endswith("/") else alias
        outputs.aliases = list(getattr(outputs, "aliases", [])) + [alias]
        _v1.add_to_collections(collections, outputs)
    return outputs
