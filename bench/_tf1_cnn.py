"""The seeds' MNIST CNN written the plain TF1 way (`tf.compat.v1.get_variable`, `tf.nn.conv2d`,
`max_pool`, `matmul`, a v1 optimizer), as a `model_fn` that runs unchanged on this package's
`TPUEstimator` and on the original (TensorFlow 2.15's `tf.compat.v1.estimator.tpu`).

Same math as `train_throughput.py`'s tf_keras model and hand-written baseline: conv 5x5x32
relu + 2x2 max-pool, conv 5x5x64 relu + pool, dense 1024 relu, dropout 0.4, dense 10, softmax
cross-entropy. Only `tf` (the TensorFlow module) and the estimator's `CrossShardOptimizer`
are needed, so that a subprocess on another TensorFlow can import it.
"""
NUM_CLASSES = 10
DENSE_UNITS = 1024
DROPOUT_RATE = 0.4
ADAM = {"beta1": 0.9, "beta2": 0.999, "epsilon": 1e-8}  # the v1 AdamOptimizer defaults


def make_model_fn(tf, cross_shard_optimizer, spec_class, optimizer="adam",
                  learning_rate=0.01, dense_units=DENSE_UNITS):
    """A TPUEstimator model_fn (TRAIN and EVAL: accuracy through `eval_metrics`);
    `cross_shard_optimizer` wraps the optimizer when `params['use_tpu']`, as TPU programs
    did. `dense_units` widens the hidden dense layer (8000: 25 M parameters)."""
    v1 = tf.compat.v1

    def weights(name, shape):
        return v1.get_variable(name, shape, initializer=v1.glorot_uniform_initializer())

    def biases(name, size):
        return v1.get_variable(name, [size], initializer=v1.zeros_initializer())

    def conv_relu_pool(net, name, filters):
        with v1.variable_scope(name):
            kernel = weights("kernel", [5, 5, int(net.shape[-1]), filters])
            net = tf.nn.conv2d(net, kernel, strides=[1, 1, 1, 1], padding="SAME")
            net = tf.nn.relu(tf.nn.bias_add(net, biases("bias", filters)))
        return v1.nn.max_pool(net, ksize=[1, 2, 2, 1], strides=[1, 2, 2, 1], padding="VALID")

    def dense(net, name, units):
        with v1.variable_scope(name):
            kernel = weights("kernel", [int(net.shape[-1]), units])
            return tf.nn.bias_add(tf.matmul(net, kernel), biases("bias", units))

    def model_fn(features, labels, mode, params):
        net = tf.reshape(features, [-1, 28, 28, 1])
        net = conv_relu_pool(net, "conv1", 32)
        net = conv_relu_pool(net, "conv2", 64)
        net = tf.reshape(net, [-1, 7 * 7 * 64])
        net = tf.nn.relu(dense(net, "dense1", dense_units))
        if mode == "train":
            net = v1.nn.dropout(net, rate=DROPOUT_RATE)
        logits = dense(net, "logits", NUM_CLASSES)
        onehot = tf.one_hot(tf.cast(labels, tf.int32), NUM_CLASSES)
        loss = v1.losses.softmax_cross_entropy(onehot_labels=onehot, logits=logits)
        if mode == "eval":
            def metric_fn(labels, logits):
                return {"accuracy": v1.metrics.accuracy(labels, tf.argmax(logits, 1))}
            return spec_class(mode=mode, loss=loss,
                              eval_metrics=(metric_fn, [tf.cast(labels, tf.int64), logits]))
        if optimizer == "adam":
            opt = v1.train.AdamOptimizer(learning_rate, **ADAM)
        else:
            opt = v1.train.GradientDescentOptimizer(learning_rate)
        if params.get("use_tpu"):
            opt = cross_shard_optimizer(opt)
        train_op = opt.minimize(loss, global_step=v1.train.get_global_step())
        return spec_class(mode=mode, loss=loss, train_op=train_op)

    return model_fn
