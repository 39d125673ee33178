"""Deep models written as TF1 `model_fn`s, tiny in width so that building dominates: the
models of `first_step.py`, runnable unchanged on this package's `TPUEstimator` and on the
original (TensorFlow 2.15's `tf.compat.v1.estimator.tpu`).

  bert<N>    a BERT-style encoder of N layers: embeddings, per layer self-attention (q/k/v
             dense layers, einsum scores, softmax, dropout), a hand-written layer norm,
             a GELU feed-forward block; v1 Adam with gradients clipped by global norm
  resnet50   ResNet-50 v1 (bottleneck blocks 3/4/6/3) with batch norm in every conv, its
             moving averages updated through UPDATE_OPS; momentum SGD
  detection  a detection-style model: a conv + batch-norm backbone, 5 pyramid levels fused by
             3 BiFPN layers (learned fusion weights, separable convs, batch norm, swish),
             class and box heads shared across levels with batch norm per level; focal-style
             sigmoid and Huber losses; momentum SGD

Each factory takes `tf` (the TensorFlow module), `layers` (`tf.compat.v1.layers` or this
package's `tpu_estimator_compat.v1.layers`), the estimator's `CrossShardOptimizer` (wrapping
the optimizer when `params['use_tpu']`, as TPU programs did) and `TPUEstimatorSpec`; the
model_fn handles TRAIN and EVAL (accuracy through `eval_metrics`). `make_input_fn` gives the
matching synthetic input_fn (`params['batch_size']` examples a batch).
"""
import math

import numpy as np

NUM_CLASSES = 4
EXAMPLES = 16
BERT = {"hidden": 32, "heads": 2, "seq": 8, "vocab": 64}
RESNET = {"image": 32, "width": 4, "blocks": (3, 4, 6, 3)}
DETECTION = {"image": 64, "width": 8, "levels": 5, "bifpn_layers": 3, "head_depth": 3,
             "anchors": 3}


def model_names():
    return ("bert<N>", "resnet50", "detection")


def make_model_fn(name, tf, layers, cross_shard_optimizer, spec_class):
    """The model_fn of model `name` (`bert24`, `resnet50`, `detection`...)."""
    if name.startswith("bert"):
        return _bert(tf, layers, cross_shard_optimizer, spec_class, int(name[4:]))
    if name == "resnet50":
        return _resnet50(tf, layers, cross_shard_optimizer, spec_class)
    if name == "detection":
        return _detection(tf, layers, cross_shard_optimizer, spec_class)
    raise ValueError(f"unknown model {name!r}: one of {', '.join(model_names())}")


def make_input_fn(name, tf):
    """A synthetic input_fn for model `name`: EXAMPLES fixed examples, repeated."""
    rng = np.random.default_rng(0)
    labels = rng.integers(0, NUM_CLASSES, size=[EXAMPLES]).astype(np.int32)
    if name.startswith("bert"):
        features = rng.integers(0, BERT["vocab"], size=[EXAMPLES, BERT["seq"]]).astype(np.int32)
    else:
        size = RESNET["image"] if name == "resnet50" else DETECTION["image"]
        features = rng.standard_normal([EXAMPLES, size, size, 3]).astype(np.float32)

    def input_fn(params):
        dataset = tf.data.Dataset.from_tensor_slices((features, labels)).repeat()
        return dataset.batch(params["batch_size"], drop_remainder=True)
    return input_fn


def _spec(tf, cross_shard_optimizer, spec_class, mode, params, loss, logits, labels,
          make_optimizer, clip_norm=None):
    """The TRAIN or EVAL spec: an optimizer step (its UPDATE_OPS first), or accuracy."""
    v1 = tf.compat.v1
    if mode == "eval":
        def metric_fn(labels, logits):
            return {"accuracy": v1.metrics.accuracy(labels, tf.argmax(logits, 1))}
        return spec_class(mode=mode, loss=loss, eval_metrics=(metric_fn, [labels, logits]))
    optimizer = make_optimizer()
    if params.get("use_tpu"):
        optimizer = cross_shard_optimizer(optimizer)
    grads_and_vars = optimizer.compute_gradients(loss)
    if clip_norm:
        grads, variables = zip(*grads_and_vars)
        grads, _ = tf.clip_by_global_norm(grads, clip_norm)
        grads_and_vars = list(zip(grads, variables))
    with tf.control_dependencies(v1.get_collection(v1.GraphKeys.UPDATE_OPS)):
        train_op = optimizer.apply_gradients(grads_and_vars,
                                             global_step=v1.train.get_global_step())
    return spec_class(mode=mode, loss=loss, train_op=train_op)


def _bert(tf, layers, cross_shard_optimizer, spec_class, depth):
    v1 = tf.compat.v1
    hidden, heads, seq, vocab = BERT["hidden"], BERT["heads"], BERT["seq"], BERT["vocab"]
    head_size = hidden // heads
    init = v1.truncated_normal_initializer(stddev=0.02)

    def layer_norm(net, name):
        with v1.variable_scope(name):
            gamma = v1.get_variable("gamma", [hidden], initializer=v1.ones_initializer())
            beta = v1.get_variable("beta", [hidden], initializer=v1.zeros_initializer())
            mean, variance = tf.nn.moments(net, [-1], keepdims=True)
            return (net - mean) * v1.rsqrt(variance + 1e-12) * gamma + beta

    def gelu(net):
        return 0.5 * net * (1.0 + tf.tanh(math.sqrt(2 / math.pi) * (net + 0.044715 * net ** 3)))

    def dropout(net, training):
        return v1.nn.dropout(net, rate=0.1) if training else net

    def split_heads(net):
        return tf.reshape(net, [-1, seq, heads, head_size])

    def attention(net, training):
        query = split_heads(layers.dense(net, hidden, kernel_initializer=init, name="query"))
        key = split_heads(layers.dense(net, hidden, kernel_initializer=init, name="key"))
        value = split_heads(layers.dense(net, hidden, kernel_initializer=init, name="value"))
        scores = tf.einsum("bqhd,bkhd->bhqk", query, key) / math.sqrt(head_size)
        probs = dropout(tf.nn.softmax(scores), training)
        context = tf.reshape(tf.einsum("bhqk,bkhd->bqhd", probs, value), [-1, seq, hidden])
        return layers.dense(context, hidden, kernel_initializer=init, name="output")

    def model_fn(features, labels, mode, params):
        training = mode == "train"
        with v1.variable_scope("bert"):
            with v1.variable_scope("embeddings"):
                words = v1.get_variable("word_embeddings", [vocab, hidden], initializer=init)
                positions = v1.get_variable("position_embeddings", [seq, hidden],
                                            initializer=init)
                net = tf.gather(words, features) + positions
                net = dropout(layer_norm(net, "LayerNorm"), training)
            for index in range(depth):
                with v1.variable_scope(f"encoder/layer_{index}"):
                    with v1.variable_scope("attention"):
                        attended = dropout(attention(net, training), training)
                        net = layer_norm(net + attended, "LayerNorm")
                    with v1.variable_scope("feed_forward"):
                        inner = layers.dense(net, 4 * hidden, activation=gelu,
                                             kernel_initializer=init, name="intermediate")
                        outer = layers.dense(inner, hidden, kernel_initializer=init,
                                             name="output")
                        net = layer_norm(net + dropout(outer, training), "LayerNorm")
            pooled = layers.dense(net[:, 0], hidden, activation=tf.tanh,
                                  kernel_initializer=init, name="pooler")
        logits = layers.dense(pooled, NUM_CLASSES, kernel_initializer=init, name="classifier")
        loss = v1.losses.sparse_softmax_cross_entropy(labels, logits)
        return _spec(tf, cross_shard_optimizer, spec_class, mode, params, loss, logits, labels,
                     lambda: v1.train.AdamOptimizer(1e-4), clip_norm=1.0)

    return model_fn


def _conv_bn(tf, layers, net, filters, kernel, strides, training, name, relu=True):
    with tf.compat.v1.variable_scope(name):
        net = layers.conv2d(net, filters, kernel, strides=strides, padding="same",
                            use_bias=False, name="conv")
        net = layers.batch_normalization(net, training=training, momentum=0.9, name="bn")
        return tf.nn.relu(net) if relu else net


def _resnet50(tf, layers, cross_shard_optimizer, spec_class):
    v1 = tf.compat.v1
    width = RESNET["width"]

    def bottleneck(net, filters, strides, training, name):
        with v1.variable_scope(name):
            shortcut = net
            if strides != 1 or int(net.shape[-1]) != 4 * filters:
                shortcut = _conv_bn(tf, layers, net, 4 * filters, 1, strides, training,
                                    "shortcut", relu=False)
            net = _conv_bn(tf, layers, net, filters, 1, 1, training, "a")
            net = _conv_bn(tf, layers, net, filters, 3, strides, training, "b")
            net = _conv_bn(tf, layers, net, 4 * filters, 1, 1, training, "c", relu=False)
            return tf.nn.relu(net + shortcut)

    def model_fn(features, labels, mode, params):
        training = mode == "train"
        with v1.variable_scope("resnet50"):
            net = _conv_bn(tf, layers, features, 4 * width, 7, 2, training, "stem")
            net = layers.max_pooling2d(net, 3, 2, padding="same")
            for stage, blocks in enumerate(RESNET["blocks"]):
                for block in range(blocks):
                    net = bottleneck(net, width * 2 ** stage,
                                     2 if block == 0 and stage > 0 else 1, training,
                                     f"stage{stage + 1}/block{block + 1}")
            net = tf.reduce_mean(net, [1, 2])
            logits = layers.dense(net, NUM_CLASSES, name="logits")
        loss = v1.losses.sparse_softmax_cross_entropy(labels, logits)
        return _spec(tf, cross_shard_optimizer, spec_class, mode, params, loss, logits, labels,
                     lambda: v1.train.MomentumOptimizer(0.01, 0.9))

    return model_fn


def _detection(tf, layers, cross_shard_optimizer, spec_class):
    v1 = tf.compat.v1
    width, levels = DETECTION["width"], DETECTION["levels"]
    anchors = DETECTION["anchors"]

    def separable_bn(net, training, name, activation=True):
        with v1.variable_scope(name):
            net = layers.separable_conv2d(net, width, 3, padding="same", use_bias=False,
                                          name="conv")
            net = layers.batch_normalization(net, training=training, momentum=0.99, name="bn")
            return tf.nn.swish(net) if activation else net

    def fuse(inputs, name):
        with v1.variable_scope(name):
            weights = tf.nn.relu(v1.get_variable("weights", [len(inputs)],
                                                 initializer=v1.ones_initializer()))
            total = tf.add_n([weights[i] * net for i, net in enumerate(inputs)])
            return total / (tf.reduce_sum(weights) + 1e-4)

    def resize_to(net, size):
        return v1.image.resize_nearest_neighbor(net, [size, size])

    def bifpn(features, training, name):
        with v1.variable_scope(name):
            sizes = [int(f.shape[1]) for f in features]
            top_down = [None] * levels
            top_down[-1] = features[-1]
            for level in range(levels - 2, -1, -1):
                fused = fuse([features[level], resize_to(top_down[level + 1], sizes[level])],
                             f"top_down_{level}")
                top_down[level] = separable_bn(fused, training, f"top_down_conv_{level}")
            outputs = [top_down[0]]
            for level in range(1, levels):
                inputs = [features[level], resize_to(outputs[-1], sizes[level])]
                if level < levels - 1:
                    inputs.append(top_down[level])
                fused = fuse(inputs, f"bottom_up_{level}")
                outputs.append(separable_bn(fused, training, f"bottom_up_conv_{level}"))
            return outputs

    def head(features, outputs_per_anchor, training, name):
        results = []
        with v1.variable_scope(name, reuse=v1.AUTO_REUSE):
            for level, net in enumerate(features):
                for index in range(DETECTION["head_depth"]):
                    net = layers.separable_conv2d(net, width, 3, padding="same",
                                                  name=f"conv_{index}")
                    net = tf.nn.swish(layers.batch_normalization(
                        net, training=training, momentum=0.99, name=f"bn_{index}_level{level}"))
                net = layers.separable_conv2d(net, anchors * outputs_per_anchor, 3,
                                              padding="same", name="predict")
                results.append(tf.reshape(net, [-1, int(net.shape[1]) * int(net.shape[2])
                                                * anchors, outputs_per_anchor]))
        return results

    def model_fn(features, labels, mode, params):
        training = mode == "train"
        with v1.variable_scope("detector"):
            net = _conv_bn(tf, layers, features, width, 3, 2, training, "stem")
            pyramid = []
            for level in range(levels):
                net = _conv_bn(tf, layers, net, width, 3, 2, training, f"backbone_{level}")
                net = _conv_bn(tf, layers, net, width, 3, 1, training, f"backbone_{level}b")
                pyramid.append(net)
            for index in range(DETECTION["bifpn_layers"]):
                pyramid = bifpn(pyramid, training, f"bifpn_{index}")
            classes = head(pyramid, NUM_CLASSES, training, "class_net")
            boxes = head(pyramid, 4, training, "box_net")
        class_logits = tf.concat(classes, axis=1)
        targets = tf.tile(tf.one_hot(labels, NUM_CLASSES)[:, None, :],
                          [1, int(class_logits.shape[1]), 1])
        cross_entropy = tf.nn.sigmoid_cross_entropy_with_logits(labels=targets,
                                                                logits=class_logits)
        probs = tf.sigmoid(class_logits)
        modulator = tf.pow(1.0 - (targets * probs + (1 - targets) * (1 - probs)), 2.0)
        class_loss = tf.reduce_mean(modulator * cross_entropy)
        box_loss = v1.losses.huber_loss(tf.zeros_like(tf.concat(boxes, axis=1)),
                                        tf.concat(boxes, axis=1), delta=0.1)
        loss = class_loss + 50.0 * box_loss
        logits = tf.reduce_mean(class_logits, axis=1)
        return _spec(tf, cross_shard_optimizer, spec_class, mode, params, loss, logits, labels,
                     lambda: v1.train.MomentumOptimizer(0.01, 0.9))

    return model_fn
