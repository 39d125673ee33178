"""Errors raised inside a user's model_fn whose wording does not say the cause: a feature
key the input does not have (`KeyError: 'x'`), a loss an optimizer cannot differentiate
(an int32 loss, reported by TensorFlow as a dtype error somewhere in the gradients)."""
import collections.abc

import tensorflow as tf


class MissingFeatureError(KeyError):
    """model_fn looked up a feature the input_fn or serving receiver did not give."""

    def __str__(self):
        return self.args[0]


def explain(error, features, source):
    """A clearer error to raise instead of `error` (raised while model_fn ran on the features
    from `source`), or None when there is nothing to add."""
    if isinstance(error, KeyError):
        return _missing_feature(error, features, source)
    loss = _undifferentiable_loss(error)
    if loss is not None:
        return TypeError(
            f"model_fn's loss ({loss.name}) has dtype {loss.dtype.name}: an optimizer can only "
            "differentiate a floating-point loss. Compute the loss in floating point (e.g. "
            f"loss = tf.cast(loss, tf.float32)); the features and labels from {source} are "
            f"not the cause. (TensorFlow said: {error})")
    return None


def _missing_feature(error, features, source):
    if not (isinstance(features, collections.abc.Mapping) and len(error.args) == 1):
        return None
    key = error.args[0]
    if not isinstance(key, str) or key in features:
        return None
    if source == "serving_input_receiver_fn":
        fix = ("Give the receiver's features every key model_fn reads, e.g. "
               f"ServingInputReceiver(features={{{key!r}: tensor}}, receiver_tensors=...).")
    else:
        fix = f"Return a features dict with every key model_fn reads from {source}."
    return MissingFeatureError(
        f"model_fn looked up features[{key!r}], but the features from {source} have the keys "
        f"{sorted(features, key=str)}. {fix}")


def _undifferentiable_loss(error):
    """The non-floating loss an optimizer's minimize/compute_gradients got, if the error
    was raised inside one."""
    trace = error.__traceback__
    while trace is not None:
        frame = trace.tb_frame
        loss = frame.f_locals.get("loss")
        if (frame.f_code.co_name in ("minimize", "compute_gradients") and tf.is_tensor(loss)
                and not loss.dtype.is_floating and not loss.dtype.is_complex):
            return loss
        trace = trace.tb_next
    return None
