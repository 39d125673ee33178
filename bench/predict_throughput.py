"""Predict throughput: `TPUEstimator.predict` against a hand-written TF2 predict loop.

    ours:      list(predict(input_fn, yield_single_examples=False)) over a finite dataset:
               iterations_per_loop batches per tf.function execution, padding rows dropped on
               the host, numpy batches yielded.
    baseline:  a tf.function over the same distributed dataset computing the same logits and
               classes with tf.nn ops on the same (restored) variables, one `strategy.run` per
               batch, each batch's outputs gathered and converted to numpy.

Same model, strategy, data and batch; repetitions interleaved (ABBA); median examples/sec of
each and the ratio ours / baseline (target >= 0.95); the baseline keeps its exhausted
iterators until the process ends, as eval_throughput.py explains.

    python bench/predict_throughput.py [--examples 8192] [--batch_size 256] [--repeats 3]
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


def baseline_predict(tf, forward, make_dataset, batch_size):
    strategy = forward.strategy
    new_iterator = forward.new_iterators(make_dataset, batch_size)

    @tf.function
    def step(features):
        def replica_step(features):
            logits = forward.logits(features["image"])
            return {"classes": tf.argmax(logits, 1), "logits": logits}
        outputs = strategy.run(replica_step, args=(features,))
        return {k: strategy.gather(v, axis=0) for k, v in outputs.items()}

    def run():
        return [{k: v.numpy() for k, v in step(features).items()}
                for features in new_iterator()]
    return run


def candidates(tf, estimator, forward, make_dataset, args):
    return {
        "ours": lambda: list(estimator.predict(
            lambda params: make_dataset(params["batch_size"]), yield_single_examples=False)),
        "baseline": baseline_predict(tf, forward, make_dataset, args.batch_size),
    }


def main(argv=None):
    _inference.run_bench(__doc__.splitlines()[0], argv, False, candidates, TARGET)


if __name__ == "__main__":
    main()
