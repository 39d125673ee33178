"""The nests a TF1 `Session.run` (and so a hook's `SessionRunArgs`) fetched: lists, tuples,
namedtuples and dicts of any depth, with anything else a leaf.

Unlike `tf.nest`, a dict's keys may be anything hashable and keep their order:
`LoggingTensorHook(tensors=[t1, t2])` fetches `{t1: t1, t2: t2}`, a dict keyed by tensors,
which TF1's session mapped key by key (tf.nest would sort the keys, comparing tensors).
"""
import collections


def map_fetches(function, fetches):
    """`fetches` with every leaf replaced by `function(leaf)`, in the same structure (built
    anew: call it in TF1 code when a key may be a tensor)."""
    if isinstance(fetches, collections.abc.Mapping):
        pairs = [(key, map_fetches(function, value)) for key, value in fetches.items()]
        if isinstance(fetches, collections.defaultdict):
            return collections.defaultdict(fetches.default_factory, pairs)
        try:
            return type(fetches)(pairs)
        except TypeError:  # a mapping type that cannot be built from pairs
            return dict(pairs)
    if isinstance(fetches, (list, tuple)):
        mapped = [map_fetches(function, value) for value in fetches]
        if hasattr(fetches, "_fields"):  # a namedtuple
            return type(fetches)(*mapped)
        return type(fetches)(mapped)
    return function(fetches)


def flatten_fetches(fetches):
    """The leaves of `fetches`, in order (no structure is rebuilt: its keys are not hashed
    again, which a tensor key allows only in TF1 code)."""
    if isinstance(fetches, collections.abc.Mapping):
        return [leaf for value in fetches.values() for leaf in flatten_fetches(value)]
    if isinstance(fetches, (list, tuple)):
        return [leaf for value in fetches for leaf in flatten_fetches(value)]
    return [fetches]
