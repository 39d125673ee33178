"""`tf.keras.estimator.model_to_estimator`: an `Estimator` whose model_fn is a compiled Keras
model (tf_keras, Keras 2), as tensorflow_estimator's `keras_lib` made it.

In every mode model_fn calls fresh copies of the model's layers (same configs and names, new
weights), in the model's structure, on the input function's features (a dict keyed by the
model's input names, a list in input order, or one tensor), in training mode for TRAIN
(dropout on), as the original's clone of the model. Predictions are the outputs keyed by
output name; TRAIN and EVAL add the compiled loss (each output's loss, times its
`loss_weights`, with the input's sample weights, plus the layers' added losses); EVAL
reports the compiled metrics (named as Keras 2's graph training named them: `accuracy`,
`mae`, or `<output>_accuracy` for models of several outputs); TRAIN applies the model's
optimizer (a copy, as a legacy Keras optimizer; or the `tf.train` optimizer it was
compiled with), counting `global_step`, with the layers' own updates (batch
normalization's moving statistics). The estimator warm-starts from the model's weights as
they are when `model_to_estimator` is called, saved to `<model_dir>/keras/keras_model.ckpt`
under the copies' variable names.

TF 1.x and TF 2.x named a metric given as a string differently ('mae' was
'mean_absolute_error' in TF 1.x's graph-mode Keras, 'mae' in TF 2.x's): `tf1_model_to_estimator`
(served in `tpu_estimator_compat.v1`) names as TF 1.x, `model_to_estimator` (in
`tpu_estimator_compat.v2`) as TF 2.x; their `checkpoint_format` defaults differ as TF 2.15's
v1 and v2 functions' did.

`checkpoint_format` is validated as the original did ('checkpoint' refuses subclassed
models); the estimator's checkpoints are name-based in both formats.
"""
import inspect
import os

import tensorflow as tf
import tf_keras

from tpu_estimator_compat import log as logging
from tpu_estimator_compat.api.export_outputs import DEFAULT_SERVING_KEY, PredictOutput
from tpu_estimator_compat.api.spec import EstimatorSpec, ModeKeys
from tpu_estimator_compat.config import model_dir as model_dir_lib
from tpu_estimator_compat.estimator import Estimator
from tpu_estimator_compat.tf_internals import keras_and_slim

_WARM_START_NAME = os.path.join("keras", "keras_model.ckpt")
# Metric names that Keras resolves by the output's loss (`accuracy` -> sparse_categorical...).
_ACCURACY_NAMES = ("accuracy", "acc")
_CROSSENTROPY_NAMES = ("crossentropy", "ce")


class FormattedKeyError(KeyError):
    """A KeyError whose message keeps its newlines when printed."""

    def __init__(self, message):
        super().__init__(message)
        self.message = message

    def __str__(self):
        return self.message


def model_to_estimator(keras_model=None, keras_model_path=None, custom_objects=None,
                       model_dir=None, config=None, checkpoint_format="checkpoint",
                       metric_names_map=None, export_outputs=None):
    """TF 2.x's `tf.keras.estimator.model_to_estimator` (`tpu_estimator_compat.v2`): an
    `Estimator` from a compiled Keras model (or one saved at `keras_model_path`); see the
    module docstring."""
    return _model_to_estimator(keras_model, keras_model_path, custom_objects, model_dir,
                               config, checkpoint_format, metric_names_map, export_outputs,
                               tf1_metric_names=False)


def tf1_model_to_estimator(keras_model=None, keras_model_path=None, custom_objects=None,
                           model_dir=None, config=None, checkpoint_format="saver",
                           metric_names_map=None, export_outputs=None):
    """TF 1.x's `tf.keras.estimator.model_to_estimator` (`tpu_estimator_compat.v1`, as
    `tf.compat.v1.keras.estimator`): name-based checkpoints by default, metric functions
    named by the function (TF 1.x's graph-mode Keras); see the module docstring."""
    return _model_to_estimator(keras_model, keras_model_path, custom_objects, model_dir,
                               config, checkpoint_format, metric_names_map, export_outputs,
                               tf1_metric_names=True)


def _model_to_estimator(keras_model, keras_model_path, custom_objects, model_dir, config,
                        checkpoint_format, metric_names_map, export_outputs, tf1_metric_names):
    if not (keras_model or keras_model_path):
        raise ValueError("Either `keras_model` or `keras_model_path` needs to be provided.")
    if keras_model and keras_model_path:
        raise ValueError("Please specity either `keras_model` or `keras_model_path`, "
                         "but not both.")
    if keras_model:
        _check_subclassed_model(keras_model, custom_objects)
    config = model_dir_lib.resolve_model_dir(config, model_dir)
    if keras_model is None:
        logging.info("Loading models from %s", keras_model_path)
        keras_model = tf_keras.models.load_model(keras_model_path,
                                                 custom_objects=custom_objects)
    else:
        logging.info("Using the Keras model provided.")
    graph_network = keras_and_slim.is_graph_network(keras_model)
    if checkpoint_format in (None, "checkpoint"):
        if not (graph_network or isinstance(keras_model, tf_keras.Sequential)):
            raise ValueError("Object-based checkpoints are currently not supported with "
                             "subclassed models.")
    elif checkpoint_format != "saver":
        raise ValueError('Checkpoint format must be one of "checkpoint" or "saver". Got '
                         f"{checkpoint_format}")
    if not getattr(keras_model, "optimizer", None):
        raise ValueError("The given keras model has not been compiled yet. Please compile "
                         "the model with `model.compile()` before calling "
                         "`model_to_estimator()`.")
    model_fn = _keras_model_fn(keras_model, custom_objects, metric_names_map, export_outputs,
                               tf1_metric_names)
    warm_start_from = None
    if graph_network and config.is_chief:
        warm_start_from = _save_first_checkpoint(keras_model, config)
    elif keras_model.built:
        logging.warning(
            "You are creating an Estimator from a Keras model manually subclassed from "
            "`Model`, that was already called on some inputs (and thus already had "
            "weights). We are currently unable to preserve the model's state (its weights) "
            "as part of the estimator in this case. Be warned that the estimator has been "
            "created using a freshly initialized version of your model.\nNote that this "
            "doesn't affect the state of the model instance you passed as `keras_model` "
            "argument.")
    return Estimator(model_fn, config=config, warm_start_from=warm_start_from)


def _check_subclassed_model(model, custom_objects):
    if keras_and_slim.is_graph_network(model) or isinstance(model, tf_keras.Sequential):
        return
    try:
        with tf_keras.utils.custom_object_scope(custom_objects or {}):
            model.__class__.from_config(model.get_config())
    except NotImplementedError as error:
        raise ValueError("Subclassed `Model`s passed to `model_to_estimator` must implement "
                         "`Model.get_config` and `Model.from_config`.") from error


def _training_step(model):
    """`step(loss, variables)` -> the op applying the model's optimizer and counting
    `global_step`: a copy of a Keras optimizer as a legacy Keras optimizer (the one a TF1
    graph can apply; a new-style one converted with the original's warning), or the TF1
    optimizer a model compiled with `tf.train.*Optimizer` wraps."""
    optimizer = model.optimizer
    wrapped = getattr(optimizer, "optimizer", None)
    if isinstance(wrapped, tf.compat.v1.train.Optimizer):  # Keras' TFOptimizer
        return lambda loss, variables: wrapped.minimize(
            loss, global_step=tf.compat.v1.train.get_or_create_global_step(),
            var_list=variables)
    if not isinstance(optimizer, tf_keras.optimizers.legacy.Optimizer):
        if isinstance(optimizer, tf_keras.optimizers.Optimizer):
            logging.warning(
                "You are using `tf.keras.optimizers.experimental.Optimizer` in TF estimator, "
                "which only supports `tf.keras.optimizers.legacy.Optimizer`. Automatically "
                "converting your optimizer to `tf.keras.optimizers.legacy.Optimizer`.")
            optimizer = keras_and_slim.legacy_keras_optimizer(optimizer)
        else:
            raise ValueError("Please set your optimizer as an instance of "
                             "`tf.keras.optimizers.legacy.Optimizer`, e.g., "
                             "`tf.keras.optimizers.legacy.Adam`. Received optimizer type: "
                             f"{type(optimizer)}.")
    optimizer_class, config = type(optimizer), optimizer.get_config()

    def step(loss, variables):
        copy = optimizer_class.from_config(config)
        copy.iterations = tf.compat.v1.train.get_or_create_global_step()
        return copy.apply_gradients(zip(copy.get_gradients(loss, variables), variables))
    return step


class _Compiled:
    """The model's compiled losses, loss weights and metrics, one entry per output."""

    def __init__(self, model, output_names, output_shapes, tf1_metric_names):
        compiled = keras_and_slim.compile_arguments(model)
        self.output_names = output_names
        self.losses = [_per_sample(tf_keras.losses.get(loss))
                       for loss in _per_output(model.loss, output_names, "loss")]
        self.loss_weights = _per_output(compiled.get("loss_weights"), output_names,
                                        "loss_weights", default=1.0)
        self.metrics = _compiled_metrics(compiled.get("metrics"), output_names, output_shapes,
                                         self.losses, tf1_metric_names)


def _keras_model_fn(keras_model, custom_objects, metric_names_map, export_outputs,
                    tf1_metric_names):
    training_step = _training_step(keras_model)
    if keras_and_slim.is_graph_network(keras_model):
        known = _Compiled(keras_model, list(keras_model.output_names),
                          [output.shape for output in keras_model.outputs], tf1_metric_names)
        _check_metric_names_map(metric_names_map, [name for name, _, _ in known.metrics])
        _check_export_outputs(export_outputs, known.output_names)
    else:  # a subclassed model: its outputs are known once called
        known = None

    def model_fn(features, labels, mode):
        features, sample_weights = _split_sample_weights(features)
        inputs = _inputs(keras_model, features)
        clone = _Clone(keras_model, custom_objects, inputs, mode == ModeKeys.TRAIN)
        outputs = clone.outputs
        compiled = known
        if compiled is None:
            compiled = _Compiled(keras_model, [f"output_{i}" for i in range(1, len(outputs) + 1)],
                                 [output.shape for output in outputs], tf1_metric_names)
            _check_metric_names_map(metric_names_map, [name for name, _, _ in compiled.metrics])
            _check_export_outputs(export_outputs, compiled.output_names)
        output_names = compiled.output_names
        predictions = dict(zip(output_names, outputs))
        spec = dict(mode=mode, predictions=predictions,
                    export_outputs=_export_outputs(predictions, export_outputs))
        if mode == ModeKeys.PREDICT:
            return EstimatorSpec(**spec)
        targets = _targets(labels, output_names)
        weights = _sample_weights(sample_weights, output_names)
        loss = tf.add_n([weight * _mean_loss(loss_fn, target, output, sample_weight)
                         for loss_fn, weight, target, output, sample_weight in zip(
                             compiled.losses, compiled.loss_weights, targets, outputs, weights)]
                        + list(clone.losses))
        if mode == ModeKeys.EVAL:
            return EstimatorSpec(loss=loss, eval_metric_ops=_metric_ops(
                compiled.metrics, metric_names_map, targets, outputs), **spec)
        train_op = tf.group(training_step(loss, clone.trainable_weights), *clone.updates)
        return EstimatorSpec(loss=loss, train_op=train_op, **spec)

    return model_fn


def _per_sample(loss):
    """The loss function, as one giving per-sample losses (a `Loss` with no reduction)."""
    if isinstance(loss, tf_keras.losses.Loss):
        return type(loss).from_config({**loss.get_config(),
                                       "reduction": tf_keras.losses.Reduction.NONE})
    return loss


def _mean_loss(loss_fn, target, output, sample_weight):
    """The per-sample losses, weighted, summed and divided by their number (Keras'
    SUM_OVER_BATCH_SIZE)."""
    losses = tf.cast(loss_fn(target, output), tf.float32)
    if sample_weight is not None:
        losses *= tf.cast(sample_weight, tf.float32)
    return tf.math.divide_no_nan(tf.reduce_sum(losses), tf.cast(tf.size(losses), tf.float32))


def _per_output(value, output_names, what, default=None):
    """`value` (one for all outputs, a list in output order, or a dict by output name) as a
    list in output order."""
    if value is None:
        return [default] * len(output_names)
    if isinstance(value, dict):
        unknown = set(value) - set(output_names)
        if unknown:
            raise ValueError(f"Unknown entries in {what} dictionary: {sorted(unknown)}. Only "
                             f"expected following keys: {output_names}")
        return [value.get(name, default) for name in output_names]
    if isinstance(value, (list, tuple)) and (len(output_names) > 1 or what == "loss_weights"
                                             or len(value) == 1):
        if len(value) != len(output_names):
            raise ValueError(f"The model has {len(output_names)} outputs, but {what} has "
                             f"{len(value)} entries; pass one per output.")
        return list(value)
    return [value] * len(output_names)


def _compiled_metrics(metrics, output_names, output_shapes, losses, tf1_names):
    """[(name, metric function, output index)] of the compiled metrics, named as Keras 2's
    v1 graph training named them."""
    if not metrics:
        return []
    if isinstance(metrics, dict):
        per_output = [metrics.get(name) or [] for name in output_names]
    elif metrics and all(isinstance(m, (list, tuple)) for m in metrics) \
            and len(metrics) == len(output_names):
        per_output = [list(m) for m in metrics]
    else:
        per_output = [list(metrics)] * len(output_names)
    specs, taken = [], set()
    for index, (output_metrics, loss, output_shape) in enumerate(
            zip(per_output, losses, output_shapes)):
        if not isinstance(output_metrics, (list, tuple)):
            output_metrics = [output_metrics]
        for metric in output_metrics:
            name, metric_fn = _metric(metric, loss, output_shape, tf1_names)
            if len(output_names) > 1:
                name = f"{output_names[index]}_{name}"
            base, suffix = name, 1
            while name in taken:
                name, suffix = f"{base}_{suffix}", suffix + 1
            taken.add(name)
            specs.append((name, metric_fn, index))
    return specs


def _metric(metric, loss, output_shape, tf1_names):
    """(name, function returning a fresh Keras Metric) of one compiled metric; a metric
    function named by a string is named by the string in TF 2.x, by the function in TF 1.x
    ('mae' -> 'mean_absolute_error')."""
    if isinstance(metric, str) and metric in _ACCURACY_NAMES + _CROSSENTROPY_NAMES:
        kind = "accuracy" if metric in _ACCURACY_NAMES else "crossentropy"
        loss_name = getattr(loss, "name", getattr(loss, "__name__", ""))
        if output_shape[-1] == 1 or "binary_crossentropy" in loss_name:
            prefix = "binary"
        elif "sparse_categorical_crossentropy" in loss_name:
            prefix = "sparse_categorical"
        else:
            prefix = "categorical"
        function = tf_keras.metrics.get(f"{prefix}_{kind}")
        return metric, lambda: tf_keras.metrics.MeanMetricWrapper(function, name=metric)
    resolved = tf_keras.metrics.get(metric)
    if isinstance(resolved, tf_keras.metrics.Metric):
        config = resolved.get_config()
        return resolved.name, lambda: type(resolved).from_config(config)
    name = metric if isinstance(metric, str) and not tf1_names else resolved.__name__
    return name, lambda: tf_keras.metrics.MeanMetricWrapper(resolved, name=name)


def _check_metric_names_map(metric_names_map, names):
    if not metric_names_map:
        return
    unknown = set(names) - set(metric_names_map)
    if unknown:
        raise ValueError("Invalid `metric_names_map`. The following keras model metric "
                         f'names:"{list(unknown)}" do not exist in the `metric_names_map` '
                         "dictionary")
    extra = set(metric_names_map) - set(names)
    if extra:
        raise ValueError("Invalid `metric_names_map`. There are unexpected keys in the "
                         f"`metric_names_map` dictionary. Expected keys: {names}, Received: "
                         f"{list(extra)}")


def _metric_ops(metric_specs, metric_names_map, targets, outputs):
    """eval_metric_ops: each metric's (value, update op); unweighted, as Keras' `metrics`."""
    ops = {}
    for name, make_metric, index in metric_specs:
        name = (metric_names_map or {}).get(name, name)
        with tf.variable_creator_scope(_local_variable), \
                tf.compat.v1.variable_scope(f"metrics/{name}"):
            metric = make_metric()
            update = metric.update_state(targets[index], outputs[index])
            ops[name] = (metric.result(), update)
    return ops


def _local_variable(next_creator, **kwargs):
    """Creates a metric's accumulator as a local variable (reset per evaluation, never
    checkpointed), as the original's metric variables were."""
    return next_creator(**{**kwargs, "collections": [tf.compat.v1.GraphKeys.LOCAL_VARIABLES]})


def _check_export_outputs(export_outputs, output_names):
    if export_outputs is None:
        return
    different_keys = set(export_outputs) - set(output_names)
    if different_keys:
        raise FormattedKeyError(
            f"The list passed into {output_names} does not cover requested {export_outputs} "
            f"keys defined in the keras model.\n\tExpected keys: {set(export_outputs)}"
            f"\n\t{output_names} keys: {set(output_names)}"
            f"\n\tMissed keys: {different_keys}")


def _export_outputs(predictions, export_outputs):
    outputs = {DEFAULT_SERVING_KEY: PredictOutput(predictions)}
    for key, output_class in (export_outputs or {}).items():
        outputs[key] = output_class(predictions[key])
    return outputs


def _split_sample_weights(features):
    if isinstance(features, dict) and set(features) == {"features", "sample_weights"}:
        return features["features"], features["sample_weights"]
    return features, None


def _ordered(value, key_order, value_name, order_name):
    """`value` (a dict, a list or one tensor) as a list of tensors in `key_order`."""
    if value is None:
        return None
    if isinstance(value, (list, tuple)):
        return [_tensor(x) for x in value]
    if isinstance(value, dict):
        different_keys = set(key_order) - set(value)
        if different_keys:
            raise FormattedKeyError(
                f"The dictionary passed into {value_name} does not cover requested "
                f"{order_name} keys defined in the keras model.\n\tExpected keys: "
                f"{set(key_order)}\n\t{value_name} keys: {set(value)}"
                f"\n\tMissed keys: {different_keys}")
        return [_tensor(value[key]) for key in key_order]
    return [_tensor(value)]


def _tensor(value):
    if tf.is_tensor(value):
        return value
    return tf.compat.v1.convert_to_tensor_or_sparse_tensor(value)


def _inputs(model, features):
    """The model's inputs from the input_fn's features: a list in input order (a
    subclassed model, whose inputs have no names, gets a features dict as it is)."""
    if isinstance(features, dict) and not keras_and_slim.is_graph_network(model):
        return {key: _tensor(value) for key, value in features.items()}  # as given
    names = model.input_names if isinstance(features, dict) else None
    return _ordered(features, names, "features", "inputs")


def _targets(labels, output_names):
    return _ordered(labels, output_names, "labels", "outputs") or [None] * len(output_names)


def _sample_weights(sample_weights, output_names):
    if sample_weights is None:
        return [None] * len(output_names)
    if len(output_names) == 1 and not isinstance(sample_weights, (dict, list, tuple)):
        return [sample_weights]
    return _per_output(sample_weights, output_names, "sample_weights")


class _Clone:
    """Fresh copies of a model's layers (same configs and names, new weights), called on
    graph tensors in the model's structure: what model_fn trains in place of the model."""

    def __init__(self, model, custom_objects, inputs, training):
        self.layers = {}
        self._training = training
        self._calls = {}
        with tf_keras.utils.custom_object_scope(custom_objects or {}):
            if isinstance(model, tf_keras.Sequential):
                outputs = inputs[0]
                for layer in model.layers:
                    outputs = self._call(layer, outputs, {})
                self.outputs = [outputs]
            elif keras_and_slim.is_graph_network(model):
                self.outputs = self._call_graph(model, inputs)
            else:
                clone = model.__class__.from_config(model.get_config())
                self.layers[model.name] = clone
                if isinstance(inputs, list) and len(inputs) == 1:
                    inputs = inputs[0]
                self.outputs = tf.nest.flatten(clone(inputs, training=training))

    def _call(self, original, inputs, kwargs):
        layer = self.layers.get(original.name)
        if layer is None:
            layer = self.layers[original.name] = original.__class__.from_config(
                original.get_config())
        kwargs = dict(kwargs)
        if "training" in inspect.signature(layer.call).parameters:
            kwargs.setdefault("training", self._training)
        self._calls[original.name] = self._calls.get(original.name, -1) + 1
        return layer(inputs, **kwargs)

    def _call_graph(self, model, inputs):
        """Runs a functional model's nodes (its config's `inbound_nodes`) on `inputs`."""
        config = model.get_config()
        originals = {layer.name: layer for layer in model.layers}
        tensors = {tuple(key): tensor for key, tensor in zip(config["input_layers"], inputs)}
        pending = [(entry["name"], node) for entry in config["layers"]
                   for node in entry["inbound_nodes"]]
        while pending:
            ready = [(name, node) for name, node in pending
                     if all(tuple(inbound[:3]) in tensors for inbound in node)]
            if not ready:
                raise ValueError(f"Cannot clone the Keras model {model.name!r}: the inputs of "
                                 f"layers {sorted({name for name, _ in pending})} are unknown.")
            name, node = ready[0]
            pending.remove((name, node))
            arguments = [tensors[tuple(inbound[:3])] for inbound in node]
            kwargs = node[0][3] if len(node[0]) > 3 else {}
            outputs = self._call(originals[name],
                                 arguments[0] if len(arguments) == 1 else arguments, kwargs)
            for index, tensor in enumerate(tf.nest.flatten(outputs)):
                tensors[(name, self._calls[name], index)] = tensor
        return [tensors[tuple(key)] for key in config["output_layers"]]

    @property
    def losses(self):
        return [loss for layer in self.layers.values() for loss in layer.losses]

    @property
    def updates(self):
        return [update for layer in self.layers.values() for update in layer.updates]

    @property
    def trainable_weights(self):
        return [w for layer in self.layers.values() for w in layer.trainable_weights]

    def weights_and_values(self, values):
        """(weight, value) pairs of the copies' weights, `values` being the original
        layers' `get_weights()` by layer name."""
        return [pair for name, layer in self.layers.items()
                for pair in zip(layer.weights, values[name])]


def _save_first_checkpoint(keras_model, config):
    """Saves the model's weights under the clone's variable names to
    `<model_dir>/keras/keras_model.ckpt` (unless a checkpoint is there); returns its path."""
    keras_dir = os.path.join(config.model_dir, "keras")
    latest = tf.train.latest_checkpoint(keras_dir)
    if latest:
        return latest
    tf.io.gfile.makedirs(keras_dir)
    values = {layer.name: layer.get_weights() for layer in keras_model.layers}
    with tf.Graph().as_default():
        tf.compat.v1.random.set_random_seed(config.tf_random_seed)
        features = [tf.compat.v1.placeholder(t.dtype, t.shape) for t in keras_model.inputs]
        pairs = _Clone(keras_model, None, features, True).weights_and_values(values)
        assigns = [tf.compat.v1.assign(v, value) for v, value in pairs]
        saver = tf.compat.v1.train.Saver({v.op.name: v for v, _ in pairs})
        with tf.compat.v1.Session(config=config.session_config) as session:
            session.run(assigns)
            path = saver.save(session, os.path.join(config.model_dir, _WARM_START_NAME))
    return path
