"""Eval throughput: `TPUEstimator.evaluate` against a hand-written TF2 eval loop.

    ours:      evaluate(input_fn) on a finite dataset (steps=None): the device loop runs every
               batch in one tf.function execution, metric_fn (tf.compat.v1.metrics.accuracy)
               runs on the host over the logits and labels gathered from all replicas.
    baseline:  a tf.function over the same distributed dataset computing the same logits with
               tf.nn ops on the same (restored) variables, accumulating correct predictions and
               the loss on the device, one `strategy.run` per batch.

Same model, strategy, data and batch; repetitions interleaved (ABBA); median examples/sec of
each and the ratio ours / baseline (target >= 0.95). The baseline's exhausted iterators are
kept until the process ends: destroying an autotuned distributed iterator can stall for
seconds in TensorFlow 2.21 (`tpu_estimator_compat/engine/inputs.py`), which measured that
stall, not the loop (8-replica ratios of 3-6 before).

    python bench/eval_throughput.py [--examples 8192] [--batch_size 256] [--repeats 3]
        [--replicas 1,8]

Exits 0 whatever the ratio: a measurement, not a test.
"""
import os
import sys

os.environ.setdefault("TF_CPP_MIN_LOG_LEVEL", "2")
sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))

import _common  # noqa: E402
import _inference  # noqa: E402

_common.use_repo_checkout()
TARGET = _common.TARGET_RATIO


def baseline_eval(tf, forward, make_dataset, batch_size):
    strategy = forward.strategy
    new_iterator = forward.new_iterators(make_dataset, batch_size)

    @tf.function
    def run(iterator):
        def step(features, labels):
            logits = forward.logits(features["image"])
            correct = tf.reduce_sum(tf.cast(tf.equal(tf.argmax(logits, 1), labels), tf.int64))
            loss = tf.reduce_mean(tf.nn.sparse_softmax_cross_entropy_with_logits(labels, logits))
            return correct, loss
        correct, loss_sum = tf.constant(0, tf.int64), tf.constant(0.0)
        for features, labels in iterator:
            c, l = strategy.run(step, args=(features, labels))
            correct += strategy.reduce("SUM", c, axis=None)
            loss_sum += strategy.experimental_local_results(l)[0]
        return correct, loss_sum

    return lambda: run(new_iterator())


def candidates(tf, estimator, forward, make_dataset, args):
    return {
        "ours": lambda: estimator.evaluate(lambda params: make_dataset(params["batch_size"])),
        "baseline": baseline_eval(tf, forward, make_dataset, args.batch_size),
    }


def main(argv=None):
    _inference.run_bench(__doc__.splitlines()[0], argv, True, candidates, TARGET)


if __name__ == "__main__":
    main()
