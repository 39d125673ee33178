"""TF 1.15's `tf.contrib.estimator.multi_head`: several named heads trained on one
(head-weighted) sum of their losses.

Logits and labels are dicts keyed by head name (logits may also be one tensor, split along
its last dimension in the heads' order). EVAL reports each head's metrics (their keys
suffixed with the head's name) and 'loss/<name>'; the predictions are keyed
`(head name, key)`; export outputs are every head's, as '<name>' and '<name>/<key>', with
the first head's default as 'serving_default' and every head's predictions merged in
'predict'. Like TF1's, it has no TPUEstimator spec (`_create_tpu_estimator_spec` says so).
"""
import tensorflow as tf

from tpu_estimator_compat.api import export_outputs as export_output
from tpu_estimator_compat.api import spec as spec_lib
from tpu_estimator_compat.api.spec import ModeKeys
from tpu_estimator_compat.canned import heads
from tpu_estimator_compat.canned import keys

_v1 = tf.compat.v1


class MultiHead:
    """The heads of `multi_head`, merged; `head_weights` weigh their losses."""

    def __init__(self, heads_, head_weights=None):
        if head_weights and len(head_weights) != len(heads_):
            raise ValueError(
                "heads and head_weights must have the same size. Given len(heads): "
                f"{len(heads_)}. Given len(head_weights): {len(head_weights)}.")
        if not heads_:
            raise ValueError(f"Must specify heads. Given: {heads_}")
        for head in heads_:
            if not head.name:
                raise ValueError(f"All given heads must have name specified. Given: {head}")
        self._heads = tuple(heads_)
        self._head_weights = tuple(head_weights) if head_weights else ()

    @property
    def name(self):
        return "_".join(head.name for head in self._heads)

    @property
    def logits_dimension(self):
        return sum(head.logits_dimension for head in self._heads)

    def _merged(self, losses):
        with tf.name_scope("merge_losses"):
            if self._head_weights:
                losses = [loss * weight for loss, weight in zip(losses, self._head_weights)]
            return tf.add_n(list(losses))

    def _logits_dict(self, logits):
        if isinstance(logits, dict):
            return logits
        with tf.name_scope("split_logits"):
            logits = tf.convert_to_tensor(logits)
            dimensions = [head.logits_dimension for head in self._heads]
            last = logits.shape[-1]
            if last is not None and last != sum(dimensions):
                raise ValueError(
                    f"Could not split logits of shape {logits.shape.as_list()!r} among the "
                    f"heads with individual logits dimensions: {dimensions!r}. The last "
                    f"dimension of the logits tensor should equal {sum(dimensions)} but is "
                    f"{last}.")
            parts = tf.split(logits, dimensions, axis=-1)
            return {head.name: part for head, part in zip(self._heads, parts)}

    def create_loss(self, features, mode, logits, labels):
        """`LossSpec`: the merged training loss; per head (dicts by name) the unreduced
        losses and weights (times the head's weight) and processed labels."""
        logits = self._logits_dict(logits)
        specs = [head.create_loss(features, mode, logits[head.name], labels[head.name])
                 for head in self._heads]
        weights = self._head_weights or (None,) * len(self._heads)
        unreduced, example_weights = {}, {}
        for head, spec, weight in zip(self._heads, specs, weights):
            unreduced[head.name] = spec.unreduced_loss if weight is None else (
                spec.unreduced_loss * weight)
            example_weights[head.name] = spec.weights if weight is None else (
                spec.weights * weight)
        return heads.LossSpec(self._merged([spec.training_loss for spec in specs]),
                              unreduced, example_weights,
                              {head.name: spec.processed_labels
                               for head, spec in zip(self._heads, specs)})

    def create_estimator_spec(self, features, mode, logits, labels=None, optimizer=None,
                              train_op_fn=None):
        """The merged `EstimatorSpec` of `mode` (all arguments by name, as in TF1)."""
        logits = self._logits_dict(logits)
        if labels is not None and not isinstance(labels, dict):
            raise ValueError(f"labels must be a dict. Given: {labels}")
        specs = [head.create_estimator_spec(
            features=features, mode=mode, logits=logits[head.name],
            labels=labels[head.name] if labels else None, train_op_fn=lambda _: tf.no_op())
            for head in self._heads]
        predictions = {(head.name, key): value for head, spec in zip(self._heads, specs)
                       for key, value in spec.predictions.items()}
        if mode == ModeKeys.TRAIN:
            loss = self._merged([spec.loss for spec in specs])
            train_op = heads.train_op_of(loss, optimizer, train_op_fn)
            with _v1.name_scope(""):
                _v1.summary.scalar(keys.MetricKeys.LOSS, loss)
            return spec_lib.EstimatorSpec(mode, loss=loss, train_op=train_op,
                                          predictions=predictions)
        if mode == ModeKeys.PREDICT:
            return spec_lib.EstimatorSpec(mode, predictions=predictions,
                                          export_outputs=self._export_outputs(specs))
        if mode == ModeKeys.EVAL:
            metrics = {}
            with tf.name_scope("merge_eval"):
                for head, spec in zip(self._heads, specs):
                    loss_key = heads.summary_key(head.name, keys.MetricKeys.LOSS)
                    metrics[loss_key] = _v1.metrics.mean(spec.loss, name=loss_key)
                    metrics.update(spec.eval_metric_ops or {})
                loss = self._merged([spec.loss for spec in specs])
            return spec_lib.EstimatorSpec(mode, predictions=predictions, loss=loss,
                                          eval_metric_ops=metrics)
        raise ValueError(f"mode={mode} unrecognized")

    def _create_tpu_estimator_spec(self, *args, **kwargs):
        del args, kwargs
        raise NotImplementedError(
            "TPUEstimatorSpec not available for this model head. multi_head serves "
            "tf.estimator.Estimator: return head.create_estimator_spec(...) from its model_fn.")

    def _export_outputs(self, specs):
        first = specs[0].export_outputs
        if len(first) == 1:
            default = next(iter(first.values()))
        elif keys.DEFAULT_SERVING_KEY in first:
            default = first[keys.DEFAULT_SERVING_KEY]
        else:
            raise ValueError(
                f"{self._heads[0].name} did not specify default export_outputs. Given: "
                f"{first} Suggested fix: Use one of the heads in tf.contrib.estimator, or "
                f"include key {keys.DEFAULT_SERVING_KEY} in export_outputs.")
        outputs, merged_predictions = {keys.DEFAULT_SERVING_KEY: default}, {}
        for head, spec in zip(self._heads, specs):
            for key, output in spec.export_outputs.items():
                outputs[head.name if key == keys.DEFAULT_SERVING_KEY
                        else f"{head.name}/{key}"] = output
                if (key == keys.PREDICT_SERVING_KEY
                        and isinstance(output, export_output.PredictOutput)):
                    merged_predictions.update(
                        {f"{head.name}/{k}": v for k, v in output.outputs.items()})
        outputs[keys.PREDICT_SERVING_KEY] = export_output.PredictOutput(merged_predictions)
        return outputs
