"""On TPU, TF1's `metric_fn` received the outfeed's tensors concatenated across replicas with
static shapes (full batches): `tf.size(x, out_type=tf.float32)` folded to a constant and
reshapes inferred their -1 (tensorflow/tpu's unet3d dice metric relies on both)."""
import numpy as np
import tensorflow as tf

import tpu_estimator_compat as tec
import tpu_estimator_compat.v1 as tf1


def input_fn(params):
    features = np.arange(64 * 3, dtype=np.float32).reshape(64, 3)
    labels = np.ones([64, 1], np.float32)
    return tf.data.Dataset.from_tensor_slices((features, labels)).batch(
        params["batch_size"], drop_remainder=True)


def test_metric_fn_sees_the_static_concatenated_batch_on_tpu(tmp_path, eight_devices):
    seen = []

    def metric_fn(labels, logits):
        seen.append(labels.shape.as_list())
        # 2 rows per replica x 8 replicas, back to [batch, ...] as unet3d does
        per_example = tf1.reshape(logits, [16, -1])
        return {"size": tf1.metrics.mean(tf1.size(per_example, out_type=tf1.float32))}

    def model_fn(features, labels, mode, params):
        logits = tf1.layers.dense(features, 1)
        loss = tf1.reduce_mean(logits)
        return tec.TPUEstimatorSpec(mode, loss=loss, eval_metrics=(metric_fn, [labels, logits]))

    config = tec.RunConfig(model_dir=str(tmp_path), train_distribute=eight_devices,
                           tpu_config=tec.TPUConfig(iterations_per_loop=1))
    estimator = tec.TPUEstimator(model_fn, config=config, use_tpu=True, train_batch_size=16,
                                 eval_batch_size=16)
    results = estimator.evaluate(input_fn, steps=2)
    assert results["size"] == 16.0
    assert seen and all(shape == [16, 1] for shape in seen)
