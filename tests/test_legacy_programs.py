"""Legacy TF1 programs, run end to end through `tpu_estimator_compat.v1`.

Each model_fn / input_fn below is written in pure TensorFlow 1 idiom: the only TensorFlow
import is `import tpu_estimator_compat.v1 as tf` (tf.layers, tf.variable_scope/get_variable,
tf.train optimizers, tf.metrics, tf.contrib.*). They train with TPU semantics on the simulated
8-core TPU (`eight_devices`), with global batch sizes divisible by 8 and drop_remainder=True.
"""
import os

import numpy as np
import pytest

import tpu_estimator_compat.v1 as tf
from event_reader import read_scalars

pytestmark = pytest.mark.slow  # estimator runs (and processes): seconds each

SEED = 7


def tpu_run_config(model_dir, strategy, iterations_per_loop, **kwargs):
    kwargs.setdefault("save_checkpoints_steps", 1000)
    return tf.contrib.tpu.RunConfig(
        model_dir=str(model_dir), train_distribute=strategy, tf_random_seed=SEED,
        tpu_config=tf.contrib.tpu.TPUConfig(iterations_per_loop=iterations_per_loop),
        **kwargs)


def checkpoint_value(model_dir, name, step=None):
    path = (os.path.join(str(model_dir), "model.ckpt-%d" % step) if step is not None
            else tf.train.latest_checkpoint(str(model_dir)))
    return tf.train.load_variable(path, name)


class LossRecorder(tf.train.SessionRunHook):
    """Fetches a tensor after every device loop; optionally stops after `stop_after` calls."""

    def __init__(self, fetch, stop_after=None):
        self.fetch = fetch
        self.stop_after = stop_after
        self.values = []

    def before_run(self, run_context):
        return tf.train.SessionRunArgs({"loss": self.fetch})

    def after_run(self, run_context, run_values):
        self.values.append(float(run_values.results["loss"]))
        if self.stop_after is not None and len(self.values) >= self.stop_after:
            run_context.request_stop()


# ------------------------------------------------------------------------------------------
# 1. A CNN with batch normalization and UPDATE_OPS control dependencies.

CNN_IMAGES = np.random.RandomState(1).rand(256, 8, 8, 1).astype(np.float32) * 2.0 + 1.0
CNN_LABELS = (CNN_IMAGES[:, :, :4].mean(axis=(1, 2, 3))
              > CNN_IMAGES[:, :, 4:].mean(axis=(1, 2, 3))).astype(np.int32)


def cnn_input_fn(params):
    dataset = tf.data.Dataset.from_tensor_slices((CNN_IMAGES, CNN_LABELS))
    return dataset.repeat().batch(params["batch_size"], drop_remainder=True)


def cnn_model_fn(features, labels, mode, params):
    training = mode == tf.estimator.ModeKeys.TRAIN
    net = tf.layers.conv2d(features, filters=4, kernel_size=3, padding="same", use_bias=False)
    net = tf.layers.batch_normalization(net, training=training, momentum=0.9)
    net = tf.nn.relu(net)
    net = tf.layers.flatten(net)
    logits = tf.layers.dense(net, 2)
    loss = tf.losses.sparse_softmax_cross_entropy(labels=labels, logits=logits)
    loss = tf.identity(loss, name="cnn_loss")
    optimizer = tf.contrib.tpu.CrossShardOptimizer(tf.train.AdamOptimizer(0.02))
    update_ops = tf.get_collection(tf.GraphKeys.UPDATE_OPS)
    with tf.control_dependencies(update_ops):
        train_op = optimizer.minimize(loss, global_step=tf.train.get_global_step())
    return tf.contrib.tpu.TPUEstimatorSpec(mode=mode, loss=loss, train_op=train_op)


def test_cnn_with_batch_norm_updates_moving_statistics(tmp_path, eight_devices):
    estimator = tf.contrib.tpu.TPUEstimator(
        model_fn=cnn_model_fn, use_tpu=True, train_batch_size=32,
        config=tpu_run_config(tmp_path, eight_devices, iterations_per_loop=2))
    recorder = LossRecorder("cnn_loss:0")
    estimator.train(cnn_input_fn, steps=30, hooks=[recorder])

    assert estimator.get_variable_value("global_step") == 30
    initial_mean = checkpoint_value(tmp_path, "batch_normalization/moving_mean", step=0)
    initial_var = checkpoint_value(tmp_path, "batch_normalization/moving_variance", step=0)
    np.testing.assert_array_equal(initial_mean, np.zeros(4))
    np.testing.assert_array_equal(initial_var, np.ones(4))
    moving_mean = estimator.get_variable_value("batch_normalization/moving_mean")
    moving_var = estimator.get_variable_value("batch_normalization/moving_variance")
    assert moving_mean.shape == moving_var.shape == (4,)
    assert np.all(np.abs(moving_mean) > 1e-3), moving_mean
    assert np.all(np.abs(moving_var - 1.0) > 1e-3), moving_var
    assert len(recorder.values) == 15 and np.all(np.isfinite(recorder.values))
    assert np.mean(recorder.values[-3:]) < np.mean(recorder.values[:3]), recorder.values


# ------------------------------------------------------------------------------------------
# 2. A small transformer classifier, BERT style: pretrained init in scaffold_fn, a custom
#    optimizer with weight decay, eval_metrics, predict.

VOCAB, SEQ, DIM = 12, 6, 8
TOKENS = np.random.RandomState(2).randint(0, VOCAB, size=(64, SEQ)).astype(np.int32)
TOKEN_LABELS = (TOKENS == 3).any(axis=1).astype(np.int32)
PRETRAINED_EMBEDDINGS = np.random.RandomState(3).normal(size=(VOCAB, DIM)).astype(np.float32)


def write_pretrained_checkpoint(directory):
    """A 'pretrained' checkpoint written with a TF1 Saver, as BERT checkpoints were."""
    with tf.Graph().as_default():
        tf.get_variable("bert/embeddings/word_embeddings",
                        initializer=tf.constant(PRETRAINED_EMBEDDINGS))
        tf.get_variable("bert/unused_head", initializer=tf.ones([3]))
        with tf.Session() as sess:
            sess.run(tf.global_variables_initializer())
            return tf.train.Saver().save(sess, os.path.join(str(directory), "bert_model.ckpt"),
                                         write_meta_graph=False)


class MomentumWeightDecayOptimizer(tf.train.Optimizer):
    """Momentum SGD with decoupled-style L2 weight decay, written as TF1 optimizers were."""

    def __init__(self, learning_rate, momentum=0.9, weight_decay=0.01, use_locking=False,
                 name="MomentumWeightDecay"):
        super(MomentumWeightDecayOptimizer, self).__init__(use_locking, name)
        self._lr = learning_rate
        self._momentum = momentum
        self._weight_decay = weight_decay

    def _create_slots(self, var_list):
        for var in var_list:
            self._zeros_slot(var, "m", self._name)

    def _apply_dense(self, grad, var):
        m = self.get_slot(var, "m")
        m_t = tf.assign(m, self._momentum * m + grad + self._weight_decay * var,
                        use_locking=self._use_locking)
        return tf.assign_sub(var, self._lr * m_t, use_locking=self._use_locking)

    def _resource_apply_dense(self, grad, var):
        return self._apply_dense(grad, var)

    def _resource_apply_sparse(self, grad, var, indices):
        dense = tf.unsorted_segment_sum(grad, indices, tf.shape(var)[0])
        return self._apply_dense(dense, var)

    def _apply_sparse(self, grad, var):
        return self._resource_apply_sparse(grad.values, var, grad.indices)


def transformer_input_fn(params):
    dataset = tf.data.Dataset.from_tensor_slices(({"tokens": TOKENS}, TOKEN_LABELS))
    return dataset.batch(params["batch_size"], drop_remainder=True)


def transformer_train_input_fn(params):
    return transformer_input_fn(params).repeat()


def transformer_predict_input_fn(params):
    dataset = tf.data.Dataset.from_tensor_slices({"tokens": TOKENS})
    return dataset.batch(params["batch_size"], drop_remainder=True)


def transformer_metric_fn(labels, logits):
    predictions = tf.argmax(logits, axis=-1)
    return {"accuracy": tf.metrics.accuracy(labels=labels, predictions=predictions)}


def make_transformer_model_fn(init_checkpoint):
    def model_fn(features, labels, mode, params):
        tokens = features["tokens"]
        with tf.variable_scope("encoder"):
            embeddings = tf.get_variable(
                "word_embeddings", [VOCAB, DIM],
                initializer=tf.truncated_normal_initializer(stddev=0.02))
            x = tf.gather(embeddings, tokens)  # [B, T, D]
            with tf.variable_scope("attention"):
                q = tf.layers.dense(x, DIM, name="query")
                k = tf.layers.dense(x, DIM, name="key")
                v = tf.layers.dense(x, DIM, name="value")
                scores = tf.matmul(q, k, transpose_b=True) / np.sqrt(float(DIM))
                probs = tf.nn.softmax(scores, axis=-1)
                context = tf.matmul(probs, v)
            x = tf.contrib.layers.layer_norm(x + context, begin_norm_axis=-1,
                                             begin_params_axis=-1, scope="layer_norm")
            pooled = tf.reduce_mean(x, axis=1)
        logits = tf.layers.dense(pooled, 2, name="classifier")

        scaffold_fn = None
        if init_checkpoint is not None:
            def scaffold_fn():
                tf.train.init_from_checkpoint(
                    init_checkpoint,
                    {"bert/embeddings/word_embeddings": "encoder/word_embeddings"})
                return tf.train.Scaffold()

        if mode == tf.estimator.ModeKeys.PREDICT:
            predictions = {"class_ids": tf.argmax(logits, axis=-1), "logits": logits}
            return tf.contrib.tpu.TPUEstimatorSpec(mode=mode, predictions=predictions,
                                                   scaffold_fn=scaffold_fn)

        loss = tf.losses.sparse_softmax_cross_entropy(labels=labels, logits=logits)
        if mode == tf.estimator.ModeKeys.EVAL:
            return tf.contrib.tpu.TPUEstimatorSpec(
                mode=mode, loss=loss, eval_metrics=(transformer_metric_fn, [labels, logits]),
                scaffold_fn=scaffold_fn)

        optimizer = tf.contrib.tpu.CrossShardOptimizer(
            MomentumWeightDecayOptimizer(0.1, momentum=0.9, weight_decay=0.01))
        train_op = optimizer.minimize(loss, global_step=tf.train.get_global_step())
        return tf.contrib.tpu.TPUEstimatorSpec(mode=mode, loss=loss, train_op=train_op,
                                               scaffold_fn=scaffold_fn)
    return model_fn


def test_transformer_with_pretrained_init_custom_optimizer_eval_and_predict(
        tmp_path, eight_devices):
    ckpt = write_pretrained_checkpoint(tmp_path)
    model_dir = tmp_path / "model"
    estimator = tf.contrib.tpu.TPUEstimator(
        model_fn=make_transformer_model_fn(ckpt), use_tpu=True,
        train_batch_size=16, eval_batch_size=16, predict_batch_size=16,
        config=tpu_run_config(model_dir, eight_devices, iterations_per_loop=4))
    estimator.train(transformer_train_input_fn, steps=8)

    assert estimator.get_variable_value("global_step") == 8
    np.testing.assert_array_equal(
        checkpoint_value(model_dir, "encoder/word_embeddings", step=0), PRETRAINED_EMBEDDINGS)
    trained = estimator.get_variable_value("encoder/word_embeddings")
    assert not np.allclose(trained, PRETRAINED_EMBEDDINGS), "the embeddings did not train"
    assert "encoder/word_embeddings/MomentumWeightDecay" in estimator.get_variable_names()
    assert "bert/unused_head" not in estimator.get_variable_names()

    metrics = estimator.evaluate(transformer_input_fn, steps=len(TOKENS) // 16)
    assert 0.0 <= metrics["accuracy"] <= 1.0
    assert metrics["global_step"] == 8

    predictions = list(estimator.predict(transformer_predict_input_fn))
    assert len(predictions) == len(TOKENS)
    class_ids = np.array([p["class_ids"] for p in predictions])
    np.testing.assert_array_equal(
        class_ids, np.argmax(np.stack([p["logits"] for p in predictions]), axis=-1))
    np.testing.assert_allclose(metrics["accuracy"], np.mean(class_ids == TOKEN_LABELS),
                               rtol=1e-6)


# ------------------------------------------------------------------------------------------
# 3. A GAN: two optimizers on two scopes, one grouped train_op, a manual global step.

REAL = (np.random.RandomState(4).normal(size=(128, 2)) * 0.5 + [2.0, -1.0]).astype(np.float32)


def gan_input_fn(params):
    dataset = tf.data.Dataset.from_tensor_slices((REAL, np.zeros([len(REAL)], np.int32)))
    return dataset.repeat().batch(params["batch_size"], drop_remainder=True)


def generator(noise):
    with tf.variable_scope("generator"):
        hidden = tf.layers.dense(noise, 8, activation=tf.nn.relu, name="hidden")
        return tf.layers.dense(hidden, 2, name="out")


def discriminator(samples):
    with tf.variable_scope("discriminator", reuse=tf.AUTO_REUSE):
        hidden = tf.layers.dense(samples, 8, activation=tf.nn.relu, name="hidden")
        return tf.layers.dense(hidden, 1, name="out")


def make_gan_model_fn(d_optimizer, g_optimizer):
    def gan_model_fn(features, labels, mode, params):
        batch_size = params["batch_size"]
        fake = generator(tf.random_normal([batch_size, 4]))
        real_logits = discriminator(features)
        fake_logits = discriminator(fake)
        d_loss = (tf.losses.sigmoid_cross_entropy(tf.ones_like(real_logits), real_logits)
                  + tf.losses.sigmoid_cross_entropy(tf.zeros_like(fake_logits), fake_logits))
        g_loss = tf.losses.sigmoid_cross_entropy(tf.ones_like(fake_logits), fake_logits)

        g_vars = tf.get_collection(tf.GraphKeys.TRAINABLE_VARIABLES, scope="generator")
        d_vars = tf.get_collection(tf.GraphKeys.TRAINABLE_VARIABLES, scope="discriminator")
        d_train = tf.contrib.tpu.CrossShardOptimizer(d_optimizer()).minimize(
            d_loss, var_list=d_vars)
        g_train = tf.contrib.tpu.CrossShardOptimizer(g_optimizer()).minimize(
            g_loss, var_list=g_vars)
        train_op = tf.group(d_train, g_train, tf.assign_add(tf.train.get_global_step(), 1))
        return tf.contrib.tpu.TPUEstimatorSpec(mode=mode, loss=d_loss + g_loss,
                                               train_op=train_op)
    return gan_model_fn


def train_gan_and_check(model_dir, strategy, d_optimizer, g_optimizer):
    estimator = tf.contrib.tpu.TPUEstimator(
        model_fn=make_gan_model_fn(d_optimizer, g_optimizer), use_tpu=True,
        train_batch_size=16, config=tpu_run_config(model_dir, strategy, iterations_per_loop=3))
    estimator.train(gan_input_fn, steps=6)

    assert estimator.get_variable_value("global_step") == 6
    names = estimator.get_variable_names()
    for scope in ("generator", "discriminator"):
        kernels = [name for name in names
                   if name.startswith(scope + "/") and name.endswith("kernel")]
        assert len(kernels) == 2, names
        for name in kernels:
            before = checkpoint_value(model_dir, name, step=0)
            after = estimator.get_variable_value(name)
            assert np.abs(after - before).max() > 1e-4, name


def test_gan_two_optimizers_and_manual_global_step(tmp_path, eight_devices):
    train_gan_and_check(tmp_path, eight_devices,
                        d_optimizer=lambda: tf.train.AdamOptimizer(0.01, name="DAdam"),
                        g_optimizer=lambda: tf.train.MomentumOptimizer(0.05, 0.9, name="GMom"))


def test_gan_with_two_adam_optimizers(tmp_path, eight_devices):
    """Two Adams: TF1 names their beta powers beta1_power and beta1_power_1."""
    train_gan_and_check(tmp_path, eight_devices,
                        d_optimizer=lambda: tf.train.AdamOptimizer(0.01, name="DAdam"),
                        g_optimizer=lambda: tf.train.AdamOptimizer(0.01, name="GAdam"))


# ------------------------------------------------------------------------------------------
# 4. A host_call writing tf.contrib.summary scalars into model_dir.

REG_X = np.random.RandomState(5).normal(size=(64, 3)).astype(np.float32)
REG_Y = (REG_X @ np.array([[1.0], [-2.0], [0.5]], np.float32)).astype(np.float32)


def regression_input_fn(params):
    dataset = tf.data.Dataset.from_tensor_slices((REG_X, REG_Y))
    return dataset.repeat().batch(params["batch_size"], drop_remainder=True)


def make_host_call_model_fn(model_dir):
    def model_fn(features, labels, mode, params):
        predictions = tf.layers.dense(features, 1, name="linear")
        loss = tf.losses.mean_squared_error(labels, predictions)
        # As the TPU examples did: the host call's tensors are built before minimize(), so
        # the global step is read before its increment.
        gs_t = tf.reshape(tf.train.get_global_step(), [1])
        loss_t = tf.reshape(loss, [1])
        optimizer = tf.contrib.tpu.CrossShardOptimizer(tf.train.GradientDescentOptimizer(0.05))
        train_op = optimizer.minimize(loss, global_step=tf.train.get_global_step())

        def host_call_fn(gs, loss):
            with tf.contrib.summary.create_file_writer(model_dir).as_default():
                with tf.contrib.summary.always_record_summaries():
                    tf.contrib.summary.scalar("loss", loss[0], step=gs[0])
                    return tf.contrib.summary.all_summary_ops()

        return tf.contrib.tpu.TPUEstimatorSpec(mode=mode, loss=loss, train_op=train_op,
                                               host_call=(host_call_fn, [gs_t, loss_t]))
    return model_fn


def test_host_call_writes_a_contrib_summary_loss_for_every_step(tmp_path, eight_devices):
    model_dir = str(tmp_path)
    steps = 8
    estimator = tf.contrib.tpu.TPUEstimator(
        model_fn=make_host_call_model_fn(model_dir), use_tpu=True, train_batch_size=16,
        config=tpu_run_config(model_dir, eight_devices, iterations_per_loop=4))
    estimator.train(regression_input_fn, steps=steps)

    scalars = read_scalars(model_dir)
    assert "loss" in scalars, scalars
    # The host call's loss at every step (the global step read before its increment); the
    # estimator's own 'loss' summary may add an entry at a loop end.
    loss_steps = [step for step, _ in scalars["loss"]]
    assert sorted(set(loss_steps)) == list(range(steps)), loss_steps
    assert len(loss_steps) >= steps
    values = [value for _, value in scalars["loss"]]
    assert np.all(np.isfinite(values)) and all(value > 0 for value in values)


# ------------------------------------------------------------------------------------------
# 5. A training hook fetching a tensor by name and requesting a stop.

def make_hooked_model_fn(hooks):
    def model_fn(features, labels, mode, params):
        predictions = tf.layers.dense(features, 1, name="linear")
        loss = tf.losses.mean_squared_error(labels, predictions)
        tf.identity(loss, name="watched_loss")
        optimizer = tf.contrib.tpu.CrossShardOptimizer(tf.train.GradientDescentOptimizer(0.05))
        train_op = optimizer.minimize(loss, global_step=tf.train.get_global_step())
        return tf.contrib.tpu.TPUEstimatorSpec(mode=mode, loss=loss, train_op=train_op,
                                               training_hooks=hooks)
    return model_fn


def test_training_hook_request_stop_after_two_loops(tmp_path, eight_devices):
    hook = LossRecorder("watched_loss:0", stop_after=2)
    iterations_per_loop = 3
    estimator = tf.contrib.tpu.TPUEstimator(
        model_fn=make_hooked_model_fn([hook]), use_tpu=True, train_batch_size=16,
        config=tpu_run_config(tmp_path, eight_devices, iterations_per_loop=iterations_per_loop))
    estimator.train(regression_input_fn, steps=30)

    assert len(hook.values) == 2
    assert np.all(np.isfinite(hook.values)) and all(value > 0 for value in hook.values)
    assert estimator.get_variable_value("global_step") == 2 * iterations_per_loop
    assert checkpoint_value(tmp_path, "global_step") == 2 * iterations_per_loop
