"""Calling a user's v1 `model_fn` / `input_fn` with exactly the arguments it declares.

With `RunConfig(tf_random_seed=...)` the model_fn runs with tf_keras's seed generator seeded:
the legacy layers (`tf.layers.dense`...) are tf_keras layers whose initializers, given no
seed, draw one from a thread-local generator, else from Python's `random` — not from
TensorFlow's graph-level seed, which TF1's initializers used. Seeded per call, the same
model_fn draws the same seeds, so initial values repeat from run to run on any number of
replicas (each replica's trace runs on its own thread), as TF1's did.
"""
import contextlib
import copy
import dataclasses
import functools
import inspect
import os
import random
import traceback
from typing import Any, Callable, Dict

import tensorflow as tf

from tpu_estimator_compat.engine import model_fn_errors
from tpu_estimator_compat.tf1_behaviour import keras_layers
from tpu_estimator_compat.tf_internals import keras_and_slim

_MODEL_FN_ARGS = ("features", "labels", "mode", "params", "config")


def fn_args(fn):
    """Names of the positional-or-keyword arguments of `fn` (functools.partial and bound
    methods and callable objects included, `self` excluded)."""
    if isinstance(fn, functools.partial):
        bound = set(fn.keywords or {})
        return tuple(a for a in fn_args(fn.func)[len(fn.args):] if a not in bound)
    target = fn if (inspect.isfunction(fn) or inspect.ismethod(fn)) else getattr(fn, "__call__", fn)
    params = inspect.signature(target).parameters.values()
    return tuple(p.name for p in params
                 if p.kind in (p.POSITIONAL_ONLY, p.POSITIONAL_OR_KEYWORD, p.KEYWORD_ONLY))


def validate_model_fn_signature(model_fn):
    """The constructor-time checks of the original Estimator on `model_fn`'s arguments."""
    if model_fn is None:
        raise ValueError("model_fn must be provided to Estimator.")
    args = fn_args(model_fn)
    if "features" not in args:
        raise ValueError(f"model_fn ({model_fn}) must include features argument.")
    unexpected = sorted(set(args) - set(_MODEL_FN_ARGS))
    if unexpected:
        raise ValueError(f"model_fn ({model_fn}) has following not expected args: {unexpected}. "
                         "A model_fn takes only features, labels, mode, params, config.")


def require_params_arg(fn, kind):
    """TPUEstimator passes the batch size through `params`; both user functions must take it."""
    if "params" in fn_args(fn):
        return
    if kind == "model_fn":
        raise ValueError(
            f"model_fn ({fn}) does not include params argument, required by TPUEstimator to "
            "pass batch size as params['batch_size']")
    raise ValueError(
        f"input_fn ({fn}) does not include params argument, required by TPUEstimator to pass "
        'batch size as params["batch_size"]')


def params_for(user_params, **added):
    """A deep copy of the user's params with TPUEstimator's keys (`batch_size`, `context`,
    `use_tpu`) added; keys whose value is None are left out, as the original did."""
    params = copy.deepcopy(dict(user_params or {}))
    params.update({k: v for k, v in added.items() if v is not None})
    return params


def call_model_fn(model_fn, features, labels, mode, params, config, source="input_fn"):
    """Calls `model_fn` with the subset of (features, labels, mode, params, config) it takes.

    `params` should be a fresh dict per call (see `params_for`); it is passed as given.
    A TypeError/ValueError raised by TensorFlow while model_fn builds on the inputs (labels
    of another dtype or shape than the model's...) is re-raised naming the features and
    labels `source` gave; one about an op none of whose inputs came from `source` names
    model_fn's line instead (its own shapes are at fault).
    """
    try:
        return _call_model_fn(model_fn, features, labels, mode, params, config)
    except (TypeError, ValueError, KeyError) as error:
        explained = model_fn_errors.explain(error, features, source)
        if explained is not None:
            raise explained from error
        if type(error) not in (TypeError, ValueError) or not _raised_by_tensorflow(error):
            raise
        own_op = model_fn_errors.op_built_from_model_fn_tensors(error, features, labels)
        if own_op is not None:
            raise type(error)(_own_shapes_message(error, own_op, features, labels, source)
                              ) from error
        raise type(error)(
            f"model_fn failed on the features and labels from {source}: {error}\n"
            f"  features given: {_describe_tensors(features)}\n"
            f"  labels given: {_describe_tensors(labels)}\n"
            f"Make {source} return the dtypes and shapes model_fn expects (e.g. "
            "tf.cast(labels, tf.float32) for a float loss, labels of shape [batch_size, 1] "
            "vs [batch_size] to match the predictions).") from error


def _own_shapes_message(error, own_op, features, labels, source):
    node, op_type, inputs = own_op
    line = model_fn_errors.user_code_line(error)
    return (f"model_fn failed building its op {node} ({op_type})"
            f"{f' at {line}' if line else ''}: {error}\n"
            f"  the op's inputs ({', '.join(inputs)}) are tensors model_fn computed, none is a "
            f"feature or label from {source} as given\n"
            f"  features given: {_describe_tensors(features)}\n"
            f"  labels given: {_describe_tensors(labels)}\n"
            "Fix the shapes in model_fn there (a weight's shape, a reshape's target, the axis "
            "of a concat or reduction...): its own tensors do not fit each other.")


def _raised_by_tensorflow(error):
    frames = traceback.extract_tb(error.__traceback__)
    return bool(frames) and any(f"{os.sep}{package}{os.sep}" in frames[-1].filename
                                for package in ("tensorflow", "tf_keras", "keras"))


def _describe_tensors(structure):
    if structure is None:
        return "None"
    return str(tf.nest.map_structure(
        lambda t: f"{t.dtype.name}{_shape(t)}" if hasattr(t, "dtype") else repr(t),
        structure))


def _shape(tensor):
    shape = tf.TensorShape(tensor.shape)
    return shape.as_list() if shape.rank is not None else "[unknown rank]"


def _arguments_taken(fn, **candidates):
    """The `candidates` that `fn` takes by name (the user's functions take a subset)."""
    args = fn_args(fn)
    return {name: value for name, value in candidates.items() if name in args}


def _call_model_fn(model_fn, features, labels, mode, params, config):
    kwargs = _arguments_taken(model_fn, labels=labels, mode=mode, params=params, config=config)
    if "labels" not in kwargs and labels is not None:
        raise ValueError("model_fn does not take labels, but input_fn returns labels.")
    keras_layers.install()  # tf_keras imported since the estimator was made: TF1 layers
    with _seeded_keras_initializers(getattr(config, "tf_random_seed", None)):
        return model_fn(features=features, **kwargs)


@contextlib.contextmanager
def _seeded_keras_initializers(seed):
    """Within the block, this thread's tf_keras seed generator is `random.Random(seed)`."""
    generators = keras_and_slim.keras_seed_generators() if seed is not None else None
    if generators is None:
        yield
        return
    previous = getattr(generators, "generator", None)
    generators.generator = random.Random(seed)
    try:
        yield
    finally:
        generators.generator = previous


def call_input_fn(input_fn, mode, params, config, input_context=None):
    """Calls `input_fn` with the subset of (params, mode, config, input_context) it takes."""
    return input_fn(**_arguments_taken(input_fn, params=params, mode=mode, config=config,
                                       input_context=input_context))


@dataclasses.dataclass(frozen=True)
class UserProgram:
    """The user's side of an estimator: model_fn, its params and the RunConfig.

    `embedding_config_spec`: TPUEstimator's `EmbeddingConfigSpec`, or None.
    `adds_tpu_params`: TPUEstimator adds `batch_size`/`context`/`use_tpu` to (a copy of) the
    params; Estimator passes a copy of them as given.
    """
    model_fn: Callable[..., Any]
    params: Dict[str, Any]
    config: Any  # the estimator's RunConfig
    adds_tpu_params: bool = True
    embedding_config_spec: Any = None  # TPUEstimator's, trained by engine/embeddings.py

    def call_params(self, **added):
        """The params for one input_fn/model_fn call (see `params_for`)."""
        if self.adds_tpu_params:
            return params_for(self.params, **added)
        return copy.deepcopy(self.params)
