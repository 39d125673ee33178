"""A GAN trained the way TF-GAN's GANEstimator trains it: hooks that `session.run` train ops.

Shared by tests/test_session_stand_in.py (with `tpu_estimator_compat.v1`) and its reference
script tests/data/make_sequential_hooks_reference.py (with TF 2.15's `tf.compat.v1`), so both
run the same model_fn and hooks. `tf1` is the v1 namespace they run on.

    'sequential'  GANEstimator's layout: the train_op only increments the global step; the
                  spec's training_hooks run the generator's train op once and the
                  discriminator's twice per step (TF-GAN's get_sequential_train_hooks with
                  GANTrainSteps(1, 2)), each session.run on its own input batch
    'custom'      the train_op trains the generator (and increments the global step); a
                  call hook's before_run runs the discriminator's train op, found in a
                  collection, and records the losses it returns

Every batch differs (the input repeats after 4), so a run that takes the wrong batch, or
none, changes the weights. `finite_input_fn` ends after 4 batches: in the second step's
first hook run, when 'sequential' trains; `short_input_fn` after 2: in the first step's
second discriminator run.
"""
import numpy as np
import tensorflow as tf

NOISE = ((np.arange(16, dtype=np.float32).reshape(8, 2) * 3) % 7 - 3) / 3
REAL = NOISE @ np.array([[0.5, -1.0, 0.25], [1.5, 0.5, -0.5]], np.float32) + 0.1
GEN_KERNEL = [[0.1, 0.2, -0.3], [0.4, -0.5, 0.6]]
HIDDEN_KERNEL = [[0.3, -0.1, 0.2, 0.05], [-0.2, 0.4, 0.1, -0.3], [0.1, 0.2, -0.4, 0.3]]
OUT_KERNEL = [[-0.2], [0.3], [0.1], [-0.4]]
SECOND_TRAIN_OP = "second_train_op"


def input_fn(params=None):
    return finite_input_fn(params).repeat()


def finite_input_fn(params=None):
    """The 8 examples once: 4 batches."""
    batch_size = (params or {}).get("batch_size", 2)
    dataset = tf.data.Dataset.from_tensor_slices(({"noise": NOISE}, REAL))
    return dataset.batch(batch_size, drop_remainder=True)


def short_input_fn():
    """The first 4 examples once: 2 batches."""
    return finite_input_fn().take(2)


def make_hook_classes(tf1):
    """(RunTrainOps, RunSecondTrainOp): SessionRunHook classes of `tf1`."""

    class RunTrainOps(tf1.train.SessionRunHook):
        """TF-GAN's RunTrainOpsHook, keeping what each session.run returned."""

        def __init__(self, train_ops, train_steps, returned):
            self._train_ops = list(train_ops)
            self._train_steps = train_steps
            self._returned = returned

        def before_run(self, run_context):
            for _ in range(self._train_steps):
                self._returned.append(
                    [float(v) for v in run_context.session.run(self._train_ops)])

    class RunSecondTrainOp(tf1.train.SessionRunHook):
        """Runs the train op model_fn filed in a collection, before each step."""

        def __init__(self, returned):
            self._returned = returned
            self._train_op = None

        def begin(self):
            self._train_op = tf1.get_collection(SECOND_TRAIN_OP)[0]

        def before_run(self, run_context):
            self._returned.append(float(run_context.session.run(self._train_op)))

    return RunTrainOps, RunSecondTrainOp


def make_model_fn(tf1, kind, returned):
    """The model_fn of `kind` ('sequential' or 'custom'); its hooks append what their
    session.run calls return to `returned` (a list)."""
    run_train_ops, _ = make_hook_classes(tf1)
    constant = tf1.constant_initializer

    def discriminator(data, reuse):
        with tf1.variable_scope("Discriminator", reuse=reuse):
            hidden = tf1.layers.dense(data, 4, activation=tf1.nn.tanh, name="hidden",
                                      kernel_initializer=constant(HIDDEN_KERNEL))
            return tf1.layers.dense(hidden, 1, name="out", kernel_initializer=constant(OUT_KERNEL))

    def model_fn(features, labels, mode):
        with tf1.variable_scope("Generator"):
            fake = tf1.layers.dense(features["noise"], 3, name="gen",
                                    kernel_initializer=constant(GEN_KERNEL))
        on_fake, on_real = discriminator(fake, False), discriminator(labels, True)
        generator_loss = -tf1.reduce_mean(on_fake)
        discriminator_loss = tf1.reduce_mean(on_fake) - tf1.reduce_mean(on_real)
        global_step = tf1.train.get_or_create_global_step()
        generator_step = tf1.train.GradientDescentOptimizer(0.1).minimize(
            generator_loss, global_step=global_step if kind == "custom" else None,
            var_list=tf1.trainable_variables("Generator"))
        discriminator_step = tf1.train.AdamOptimizer(0.05).minimize(
            discriminator_loss, var_list=tf1.trainable_variables("Discriminator"))
        with tf1.control_dependencies([generator_step]):
            generator_train_op = tf1.identity(generator_loss)
        with tf1.control_dependencies([discriminator_step]):
            discriminator_train_op = tf1.identity(discriminator_loss)
        if kind == "custom":
            tf1.add_to_collection(SECOND_TRAIN_OP, discriminator_train_op)
            return tf1.estimator.EstimatorSpec(mode, loss=discriminator_loss,
                                               train_op=generator_train_op)
        hooks = [run_train_ops([generator_train_op], 1, returned),
                 run_train_ops([discriminator_train_op], 2, returned)]
        return tf1.estimator.EstimatorSpec(mode, loss=discriminator_loss,
                                           train_op=global_step.assign_add(1),
                                           training_hooks=hooks)

    return model_fn
