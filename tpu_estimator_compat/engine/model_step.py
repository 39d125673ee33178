"""One replica's step: call the user's model_fn on a batch and pick what the mode needs.

Runs inside `strategy.run`, in replica context, while the step is traced; returns the
replica's `ReplicaOutputs`. The Python-side parts of the spec (host_call/metric functions,
scaffold_fn) are recorded from the first replica in a `TracedSpec` for the host side to use;
the call's SessionRunHooks are placed through `TracedSpec.placed_hooks` (`hook_placement`),
their fetches becoming step outputs.
"""
import contextlib
import dataclasses
import functools

import tensorflow as tf

from tpu_estimator_compat.engine import embeddings as embeddings_lib
from tpu_estimator_compat.engine import hook_placement
from tpu_estimator_compat.engine import inputs
from tpu_estimator_compat.engine import metric_values
from tpu_estimator_compat.engine import model_bridge
from tpu_estimator_compat.engine import model_parallelism
from tpu_estimator_compat.engine import padding
from tpu_estimator_compat.api import spec as spec_lib
from tpu_estimator_compat.tf1_behaviour import shapes as tf1_shapes
from tpu_estimator_compat.api import tpu_context
from tpu_estimator_compat.api.spec import ModeKeys
from tpu_estimator_compat.engine.step_outputs import ReplicaOutputs


@dataclasses.dataclass
class TracedSpec:
    """What the host needs to know about the spec model_fn returned (first replica)."""
    spec: object = None
    host_call_fn: object = None
    metric_fn: object = None
    metric_fn_runners: object = None  # the host's `host_calls.MetricFnRunners` for metric_fn
    predictions_is_dict: bool = True
    placed_hooks: object = hook_placement.NO_TRACED_HOOKS  # the SessionRunHooks in the trace
    scaffold: object = None  # what scaffold_fn returned, or the EstimatorSpec's scaffold
    input_signature: object = None  # (features, labels) TensorSpecs of one replica's batch
    params: dict = None  # the params model_fn got

    @property
    def scaffold_fn(self):
        return getattr(self.spec, "scaffold_fn", None)

    def restore_map(self):
        """`{checkpoint name: variable}` of the Scaffold's Saver, if model_fn or scaffold_fn
        made one (a `legacy_patches.RecordedSaver`); else None."""
        saver = getattr(self.scaffold, "saver", None)
        return saver.restore_map() if hasattr(saver, "restore_map") else None

    def build_scaffold(self):
        """Calls scaffold_fn (in the step's graph, after the replicas' model_fn calls, as
        TF1 called it in the model's graph)."""
        if self.scaffold_fn is None:
            self.scaffold = getattr(self.spec, "scaffold", None)
            return
        with tf1_shapes.tf1_shapes():
            self.scaffold = spec_lib.call_scaffold_fn(self.scaffold_fn)


def spec_hooks(spec, mode):
    """The spec's `training_hooks`, `evaluation_hooks` or `prediction_hooks` for `mode`."""
    name = {ModeKeys.TRAIN: "training_hooks", ModeKeys.EVAL: "evaluation_hooks",
            ModeKeys.PREDICT: "prediction_hooks"}[mode]
    return list(getattr(spec, name, None) or [])


def make_replica_fn(model_fn, mode, runtime, plan, facts, traced, embeddings=None):
    """The function `strategy.run` calls with one replica's element of the dataset.

    With `embeddings` (an `embeddings.TpuEmbeddings`), model_fn gets the embedding features'
    activations in place of their ids, and in TRAIN mode the train op also updates the
    tables."""
    def replica_fn(element):
        traced.placed_hooks.enter_replica()
        signals = None
        if mode != ModeKeys.TRAIN:
            element, signals = element
        features, labels = inputs.split_element(element)
        partition_dims = facts.config.tpu_config.input_partition_dims
        if runtime.tpu_semantics and partition_dims:
            features, labels = model_parallelism.partition_inputs(
                features, labels, partition_dims, runtime.num_cores_per_replica,
                model_parallelism.logical_device_splitter(runtime.strategy))
        inputs_given = (features, labels)
        if embeddings is not None:
            features, looked_up = embeddings.activations(features)
        params = facts.call_params(
            batch_size=plan.model_fn_batch_size,
            context=tpu_context.TPUContext(runtime) if runtime.tpu_semantics else None,
            use_tpu=runtime.tpu_semantics)
        # TF1 code reads `shape[-1].value`. Each replica builds its model as TF1's single
        # trace did, from a root variable scope that does not reuse (MirroredStrategy makes
        # replicas > 0 reuse): each has its own v1 variable store (see step_graph), so its
        # get_variable calls "create" (returning the shared variables) and add their
        # regularization losses to its own collections.
        columns_on_tpu = (embeddings_lib.feature_columns_on_tpu(runtime.num_replicas)
                          if embeddings is not None else contextlib.nullcontext())
        with tf1_shapes.tf1_shapes(), columns_on_tpu, tf.compat.v1.variable_scope(
                tf.compat.v1.VariableScope(reuse=False), auxiliary_name_scope=False):
            spec = model_bridge.call_model_fn(model_fn, features, labels, mode, params,
                                              facts.config)
            _check_spec_type(spec, mode, runtime)
            if not runtime.tpu_semantics:
                spec = _constants_bound(spec)
            _check_host_fn_tensors(spec, labels)
            if embeddings is not None:  # the tables' names and update, in model_fn's graph
                embeddings.resolve_names()
                if mode == ModeKeys.TRAIN:
                    spec = spec._replace(train_op=embeddings.train_op(
                        spec.train_op, spec.loss, looked_up))
        if traced.spec is None:
            _record(traced, spec, inputs_given, params)
        outputs = _outputs_for_mode(spec, mode)._replace(  # + what the hooks fetch
            hook_fetches=traced.placed_hooks.replica_fetches(spec_hooks(spec, mode)))
        if signals is not None:
            # int32: the cross-replica gather has no bool kernel
            outputs = outputs._replace(
                mask=tf.cast(signals[padding.MASK], tf.int32),
                stop=tf.cast(tf.reshape(tf.reduce_all(signals[padding.STOP]), [1]), tf.int32))
        return outputs
    return replica_fn


def _check_spec_type(spec, mode, runtime):
    if not isinstance(spec, (spec_lib.TPUEstimatorSpec, spec_lib.EstimatorSpec)):
        raise TypeError(
            f"model_fn must return a TPUEstimatorSpec or EstimatorSpec; got {type(spec)}.")
    if spec.mode != mode:
        raise ValueError(f"model_fn returned a spec for mode {spec.mode!r} in mode {mode!r}.")
    if (mode != ModeKeys.TRAIN and runtime.tpu_semantics
            and not isinstance(spec, spec_lib.TPUEstimatorSpec)):
        raise RuntimeError(
            "estimator_spec used by TPU evaluation must have type`TPUEstimatorSpec`. "
            f"Got {type(spec)}. Return a TPUEstimatorSpec from model_fn (eval_metrics "
            "instead of eval_metric_ops).")
    if mode == ModeKeys.PREDICT and runtime.tpu_semantics:
        _check_tpu_predictions(spec.predictions)
    if getattr(spec, "training_chief_hooks", None):
        raise ValueError(
            "training_chief_hooks returned by EstimatorSpec is not supported in TPUEstimator."
            "If you want to pass training hooks, please pass via training_hooks.")


def _check_tpu_predictions(predictions):
    if not isinstance(predictions, dict):
        raise TypeError("TPUEstimatorSpec.predictions must be dict of Tensors.")
    for key, tensor in predictions.items():
        if tensor.shape.rank == 0:
            raise ValueError(
                f"The tensor with key ({key}) in TPUEstimatorSpec.predictions is a scalar "
                f"({tensor}): every prediction needs the batch dimension, one row per example. "
                "Give it one, e.g. tf.fill([batch_size], value) with params['batch_size'], or "
                "tf.zeros_like(logits[:, 0]) + value.")
        if tensor.shape.rank is None or tensor.shape[0] is None:
            raise ValueError(
                f"The tensor with key ({key}) in TPUEstimatorSpec.predictions has dynamic "
                f"shape (should be static). Tensor: {tensor}. Give every prediction a static "
                "batch dimension (the per-replica batch size).")


def _check_host_fn_tensors(spec, labels):
    """Everything passed to eval_metrics/host_call functions must be a tensor (it crosses
    from the device to the host every step); raised here, before any step runs."""
    for name in ("eval_metrics", "host_call"):
        pair = getattr(spec, name, None)
        if not pair:
            continue
        tensors = pair[1]
        keys = sorted(tensors, key=str) if isinstance(tensors, dict) else range(len(tensors))
        for key in keys:
            value = tensors[key]
            if tf.is_tensor(value):
                continue
            where = f"{name}[1][{key!r}]"
            if value is None and labels is None:
                raise ValueError(
                    f"{where} is None: the labels are None, as input_fn returned features "
                    "only. Return (features, labels) from input_fn, or leave the labels out "
                    f"of {name} (and out of its function's arguments). A None that stands "
                    "for something else (a head the model leaves out) cannot cross from the "
                    "device to the host either: bind it into the function "
                    "(functools.partial(fn, name=None)), or evaluate with use_tpu=False, "
                    "which passes it to the function as given.")
            raise TypeError(
                f"{where} is {type(value).__name__} {value!r}, not a tensor: everything in "
                f"{name}[1] is sent from the device to the host each step. Pass constants to "
                "the function another way, e.g. functools.partial(metric_fn, threshold=0.5) "
                "or a default argument.")


def _constants_bound(spec):
    """Off TPU the original called the eval_metrics and host_call functions with their
    arguments as given, so a Python value among them (BERT-NER passes `num_labels`; TAPAS
    passes None for the heads a run leaves out) reached the function. Such values are bound
    into the function here; only tensors go to the host.
    """
    bound = {name: _bind_constants(*getattr(spec, name))
             for name in ("eval_metrics", "host_call") if getattr(spec, name, None)}
    return spec._replace(**bound) if bound else spec


def _bind_constants(fn, args):
    """`(fn', tensors)`: `args` without its non-tensor values (None too), which `fn'`
    passes to `fn` in their places."""
    def is_constant(value):
        return not tf.is_tensor(value)

    if isinstance(args, dict):
        constants = {key: value for key, value in args.items() if is_constant(value)}
        if not constants:
            return fn, args
        return (functools.partial(fn, **constants),
                {key: value for key, value in args.items() if key not in constants})
    if not any(is_constant(value) for value in args):
        return fn, args
    given = list(args)
    tensor_positions = [i for i, value in enumerate(given) if not is_constant(value)]

    def with_constants(*tensors):
        values = list(given)
        for position, tensor in zip(tensor_positions, tensors):
            values[position] = tensor
        return fn(*values)
    return with_constants, [given[i] for i in tensor_positions]


def _record(traced, spec, inputs, params):
    traced.spec = spec
    traced.params = params
    traced.input_signature = tf.nest.map_structure(
        lambda t: None if t is None else tf.TensorSpec(t.shape, t.dtype), inputs)
    host_call = getattr(spec, "host_call", None)
    traced.host_call_fn = host_call[0] if host_call else None
    eval_metrics = getattr(spec, "eval_metrics", None)
    traced.metric_fn = eval_metrics[0] if eval_metrics else None
    traced.predictions_is_dict = isinstance(spec.predictions, dict)


def _outputs_for_mode(spec, mode):
    """The spec's `ReplicaOutputs` for `mode` (no mask, stop or hook fetches yet)."""
    host_call = getattr(spec, "host_call", None)
    if mode == ModeKeys.TRAIN:
        with tf.control_dependencies([spec.train_op]):
            return ReplicaOutputs(
                loss=tf.identity(spec.loss),
                host_call=tf.nest.map_structure(tf.identity, host_call[1]) if host_call else None)
    host_call_tensors = host_call[1] if host_call else None
    if mode == ModeKeys.PREDICT:
        return ReplicaOutputs(host_call=host_call_tensors, predictions=spec.predictions)
    eval_metrics = getattr(spec, "eval_metrics", None)
    return ReplicaOutputs(
        loss=spec.loss, host_call=host_call_tensors,
        metrics=eval_metrics[1] if eval_metrics else None,
        metric_updates=({name: metric_values.value_after_update(name, value_op, update_op)
                         for name, (value_op, update_op) in spec.eval_metric_ops.items()}
                        if getattr(spec, "eval_metric_ops", None) else None))
